package deadline

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Match them with errors.Is; they are also the causes
// recorded on contexts (see context.Cause).
var (
	// ErrInsufficientBudget means a call was not made because less than the
	// floor was left of the caller's budget.
	ErrInsufficientBudget = errors.New("deadline: insufficient budget")
	// ErrCallTimeout means a call ran into its own cap: the dependency was
	// slower than the caller is willing to wait for it.
	ErrCallTimeout = errors.New("deadline: call timed out at its own cap")
	// ErrBudgetExhausted means a call was cut short because the caller's
	// budget ran out; the dependency was not necessarily slow.
	ErrBudgetExhausted = errors.New("deadline: caller's budget exhausted")
)

// Remaining reports how much time is left before ctx's deadline, and
// whether ctx has one. The deadline of a context made by this package or
// by gRPC carries a monotonic clock reading, so wall-clock jumps do not
// change the answer. The duration is negative once the deadline has passed.
func Remaining(ctx context.Context) (time.Duration, bool) {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	return time.Until(dl), true
}

// Policy is how a hop spends its caller's budget. The zero value clips to
// the budget with no margin and no floor.
type Policy struct {
	// Margin is kept back from every call for the answer's way back, so the
	// caller can still reply before its own deadline fires.
	Margin time.Duration
	// Floor is the least time worth starting a call with. When less than
	// Floor would be left for the call, it is not made. On the server side
	// it is also the admission threshold (see Admission).
	Floor time.Duration
	// Blind makes calls ignore the caller's budget: each call waits for its
	// own cap and nothing less, however little time the caller has left.
	// It models the naive system; margin and floor do not apply.
	Blind bool
	// Admission makes servers reject requests that arrive with a spent or
	// below-floor deadline instead of starting work nobody will receive.
	Admission bool
}

// Decision is what a Policy chose for one call.
type Decision struct {
	// HasBudget reports whether the caller's context had a deadline.
	HasBudget bool
	// Remaining is what was left of the caller's budget when the call was
	// decided (meaningful only when HasBudget).
	Remaining time.Duration
	// Timeout is the call's effective timeout; zero means the call is not
	// bounded (no cap and no budget).
	Timeout time.Duration
	// ClippedByBudget reports that the budget, not the cap, set Timeout.
	ClippedByBudget bool
}

// Decide computes the effective timeout of one call with the given cap
// (zero for none): min(cap, remaining − margin). It returns an error
// wrapping [ErrInsufficientBudget] when remaining − margin is below the
// floor, or when the budget is already spent.
func (p Policy) Decide(ctx context.Context, cap time.Duration) (Decision, error) {
	d := Decision{Timeout: cap}
	d.Remaining, d.HasBudget = Remaining(ctx)
	if p.Blind || !d.HasBudget {
		return d, nil
	}
	avail := d.Remaining - p.Margin
	if avail <= 0 || avail < p.Floor {
		return d, &insufficientError{avail: avail, floor: p.Floor}
	}
	if cap <= 0 || avail < cap {
		d.Timeout = avail
		d.ClippedByBudget = true
	}
	return d, nil
}

// Call decides the call's timeout (see [Policy.Decide]) and derives the
// context to make the call with. When the timer fires, context.Cause of the
// derived context is [ErrCallTimeout] if the cap set the timeout and
// [ErrBudgetExhausted] if the budget did. On error no context is derived:
// ctx is returned with a no-op cancel, and the call must not be made.
func (p Policy) Call(ctx context.Context, cap time.Duration) (context.Context, context.CancelFunc, Decision, error) {
	d, err := p.Decide(ctx, cap)
	if err != nil {
		return ctx, func() {}, d, err
	}
	if d.Timeout <= 0 {
		c, cancel := context.WithCancel(ctx)
		return c, cancel, d, nil
	}
	cause := ErrCallTimeout
	if d.ClippedByBudget {
		cause = ErrBudgetExhausted
	}
	c, cancel := context.WithTimeoutCause(ctx, d.Timeout, cause)
	return c, cancel, d, nil
}

type insufficientError struct {
	avail, floor time.Duration
}

func (e *insufficientError) Error() string {
	if e.avail <= 0 {
		return fmt.Sprintf("%v: budget spent (%v after margin)", ErrInsufficientBudget, e.avail.Round(time.Millisecond))
	}
	return fmt.Sprintf("%v: %v left after margin, floor is %v", ErrInsufficientBudget, e.avail.Round(time.Millisecond), e.floor)
}

func (e *insufficientError) Unwrap() error { return ErrInsufficientBudget }
