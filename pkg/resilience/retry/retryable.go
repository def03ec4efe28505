package retry

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/pkg/deadline"
)

// DefaultRetryable is the budgeted mode's choice: retry only what a new try
// may fix.
//
//   - Yes: the dependency was unreachable (gRPC Unavailable), or the call
//     ran into its own cap ([deadline.ErrCallTimeout]): that try was
//     unlucky, the caller still has budget, and the next try may be faster.
//   - No: the caller's budget ran out ([deadline.ErrBudgetExhausted]) or was
//     too short to start the call ([deadline.ErrInsufficientBudget]), the
//     caller gave up (context canceled or expired), the dependency answered
//     DeadlineExceeded of its own, the request was wrong or the state forbids
//     it (business codes), and any other error.
//
// A circuit breaker's "open" or a bulkhead's "full" is a rejection made by
// the caller itself, often reported as Unavailable or ResourceExhausted:
// retrying it only adds load to a dependency known to be sick. Wrap such
// rejections with [Permanent], which no policy retries.
func DefaultRetryable(err error) bool {
	switch {
	case err == nil, isPermanent(err),
		errors.Is(err, deadline.ErrBudgetExhausted),
		errors.Is(err, deadline.ErrInsufficientBudget):
		return false
	case errors.Is(err, deadline.ErrCallTimeout):
		return true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	return code(err) == codes.Unavailable
}

// NaiveRetryable is the naive mode's choice: blind retries. It retries every
// error except the business answers that a new try cannot change
// (InvalidArgument, NotFound, FailedPrecondition, AlreadyExists) and errors
// marked [Permanent]: timeouts, expired budgets and cancellations included.
func NaiveRetryable(err error) bool {
	if err == nil || isPermanent(err) {
		return false
	}
	switch code(err) {
	case codes.InvalidArgument, codes.NotFound, codes.FailedPrecondition, codes.AlreadyExists:
		return false
	}
	return true
}

// code is err's gRPC code: the one an error in the chain says it maps to
// (a service's own errors know theirs before they cross the wire), else
// the code of the gRPC status it carries, else Unknown.
func code(err error) codes.Code {
	var c interface{ GRPCCode() codes.Code }
	if errors.As(err, &c) {
		return c.GRPCCode()
	}
	return status.Code(err)
}

// Permanent marks err as not worth retrying: [Policy.Do] returns it at
// once, whatever the policy's Retryable says. The mark is transparent:
// errors.Is, errors.As and the gRPC code of the result are those of err.
// Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

func isPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}
