package breaker

import (
	"context"
	"errors"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/pkg/deadline"
)

// Verdict is what one call's result says about the dependency's health.
type Verdict int

// The verdicts.
const (
	// Success: the dependency answered, even if the answer is an error.
	Success Verdict = iota
	// Failure: the dependency was slow or broken.
	Failure
	// Excluded: the result says nothing about the dependency; it does not
	// enter the window.
	Excluded
)

// String returns "success", "failure" or "excluded".
func (v Verdict) String() string {
	if name, ok := verdictNames[v]; ok {
		return name
	}
	return "verdict(" + strconv.Itoa(int(v)) + ")"
}

var verdictNames = map[Verdict]string{Success: "success", Failure: "failure", Excluded: "excluded"}

// Classify is the default verdict on a call's error.
//
// The order matters. A *deadline.CallError is also a DeadlineExceeded
// status, so the deadline sentinels are checked before the code:
// [deadline.ErrCallTimeout] (the call's own cap fired: the dependency was
// slow) is a failure, [deadline.ErrBudgetExhausted] (the caller ran out of
// time) and [deadline.ErrInsufficientBudget] (the call was never made) are
// excluded. A bare DeadlineExceeded, as a status or as
// context.DeadlineExceeded, is read as the caller's deadline, so own-cap
// timeouts must carry ErrCallTimeout to count — deadline's
// UnaryClientInterceptor makes sure they do.
//
// Then the gRPC code, found through errors.As (status.Code): Unavailable,
// ResourceExhausted, Internal, Unknown (which includes any error that is
// not a status) and DataLoss are failures; Canceled is excluded; every
// other code is an answer the dependency chose to give (InvalidArgument,
// NotFound, FailedPrecondition, AlreadyExists ...) and counts as a success.
func Classify(err error) Verdict {
	if err == nil {
		return Success
	}
	switch {
	case errors.Is(err, deadline.ErrCallTimeout):
		return Failure
	case errors.Is(err, deadline.ErrBudgetExhausted),
		errors.Is(err, deadline.ErrInsufficientBudget),
		errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded):
		return Excluded
	}
	switch status.Code(err) {
	case codes.Canceled, codes.DeadlineExceeded:
		return Excluded
	case codes.Unavailable, codes.ResourceExhausted, codes.Internal, codes.Unknown, codes.DataLoss:
		return Failure
	}
	return Success
}
