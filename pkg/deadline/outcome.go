package deadline

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Outcome classifies how one call ended.
type Outcome string

// The outcomes of a call.
const (
	// OutcomeOK: the call returned without error.
	OutcomeOK Outcome = "ok"
	// OutcomeTimeout: the call hit its own cap (the dependency was slow).
	OutcomeTimeout Outcome = "timeout"
	// OutcomeBudget: the caller's budget ran out during the call.
	OutcomeBudget Outcome = "budget_exhausted"
	// OutcomeSkipped: the call was not made, for lack of budget.
	OutcomeSkipped Outcome = "skipped"
	// OutcomeCanceled: the caller canceled the call.
	OutcomeCanceled Outcome = "canceled"
	// OutcomeError: the call failed for another reason.
	OutcomeError Outcome = "error"
)

// Classify tells how a call made with callCtx (derived by [Policy.Call]
// under decision d) ended with err.
func Classify(callCtx context.Context, d Decision, err error) Outcome {
	if err == nil {
		return OutcomeOK
	}
	if errors.Is(err, ErrInsufficientBudget) {
		return OutcomeSkipped
	}
	switch cause := context.Cause(callCtx); {
	case errors.Is(cause, ErrCallTimeout):
		return OutcomeTimeout
	case errors.Is(cause, ErrBudgetExhausted), errors.Is(cause, context.DeadlineExceeded):
		return OutcomeBudget
	case errors.Is(cause, context.Canceled):
		return OutcomeCanceled
	}
	// The call's context is still live, yet the peer answered that the
	// deadline we sent it expired: it reached the same instant first.
	// That deadline was the caller's when the budget clipped the call, and
	// also when a blind call had no cap or a cap beyond the caller's
	// deadline.
	if status.Code(err) == codes.DeadlineExceeded && (d.Timeout > 0 || d.HasBudget) {
		if d.HasBudget && (d.ClippedByBudget || d.Timeout <= 0 || d.Remaining < d.Timeout) {
			return OutcomeBudget
		}
		return OutcomeTimeout
	}
	return OutcomeError
}
