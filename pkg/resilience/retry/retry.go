package retry

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/mercado-lab/mercado/pkg/deadline"
)

// Policy says whether and when to retry a failed call. The zero Policy
// makes one attempt and never retries.
type Policy struct {
	// MaxAttempts is the number of attempts including the first; 1 or less
	// means no retries.
	MaxAttempts int
	// BaseBackoff and MaxBackoff shape the wait before each retry: before
	// retry n (n = 1, 2, ...) Do sleeps [Backoff](n, BaseBackoff, MaxBackoff,
	// Rand()), a random time in [0, min(MaxBackoff, BaseBackoff × 2^(n−1))).
	// A zero BaseBackoff retries at once, as naive code does; a zero
	// MaxBackoff sets no ceiling.
	BaseBackoff time.Duration
	MaxBackoff  time.Duration

	// BudgetAware makes every retry check the budget: a retry starts only
	// if, after its backoff, at least Floor would be left of the caller's
	// budget after Margin, that is when
	// backoff + Floor ≤ deadline.Remaining(ctx) − Margin (and something is
	// left at all). Otherwise Do stops at once with the last error instead
	// of sleeping towards a call that would be skipped or cut short. A
	// context without a deadline has no budget to check.
	//
	// Use the Margin and Floor of the [deadline.Policy] in force, so that
	// every retry this check lets through is one the call itself will make.
	BudgetAware   bool
	Margin, Floor time.Duration

	// Budget is the retry budget the retries draw on; nil means unlimited.
	Budget *Budget

	// Retryable reports whether an error is worth another attempt; nil
	// means [DefaultRetryable]. Errors marked [Permanent] are never retried.
	Retryable func(error) bool

	// Rand returns a random number in [0, 1) for the jitter; nil means
	// math/rand/v2's Float64. Tests inject a fixed one.
	Rand func() float64

	// Hooks observe attempts and give-ups.
	Hooks Hooks
}

// Hooks report what [Policy.Do] does, for metrics and tracing; the package
// never logs. Every field may be nil. Hooks run synchronously on the
// caller's goroutine with the caller's context: keep them fast.
type Hooks struct {
	// OnAttempt runs before every attempt; attempt is 1 for the first.
	OnAttempt func(ctx context.Context, attempt int)
	// OnGiveUp runs when a retryable failure is not retried; attempt is the
	// number of the attempt that failed last.
	OnGiveUp func(ctx context.Context, attempt int, reason GiveUp)
}

// GiveUp is why a retryable failure was not retried.
type GiveUp string

// The reasons to give up.
const (
	// GiveUpAttemptsExhausted: MaxAttempts attempts were made.
	GiveUpAttemptsExhausted GiveUp = "attempts_exhausted"
	// GiveUpBudgetDoesNotFit: the backoff and the floor do not fit in what
	// is left of the caller's budget after the margin.
	GiveUpBudgetDoesNotFit GiveUp = "budget_does_not_fit"
	// GiveUpRetryBudgetEmpty: the retry budget has no token left.
	GiveUpRetryBudgetEmpty GiveUp = "retry_budget_empty"
	// GiveUpContextDone: the caller's context ended before or during the
	// backoff.
	GiveUpContextDone GiveUp = "context_done"
)

// Naive is the naive mode's policy, the retry storm: a fixed 3 attempts,
// no backoff, no budget check, no retry budget, every error but business
// answers retried ([NaiveRetryable]).
func Naive() Policy {
	return Policy{MaxAttempts: 3, Retryable: NaiveRetryable}
}

// Do calls fn until it succeeds, fails with an error that is not
// retryable, or the policy says stop, and returns fn's last error. attempt
// is 1 for the first call. The first attempt is always made: whether a call
// has enough budget to start is the call's own decision
// ([deadline.Policy.Decide]); the retries are Do's.
//
// Do waits the backoff with a timer that honours ctx. When ctx ends before
// a retry, Do returns at once an error that matches both ctx.Err() (and
// its cause, if any) and fn's last error with errors.Is.
func (p Policy) Do(ctx context.Context, fn func(ctx context.Context, attempt int) error) error {
	if p.Budget != nil {
		p.Budget.deposit()
	}
	retryable := p.Retryable
	if retryable == nil {
		retryable = DefaultRetryable
	}
	for attempt := 1; ; attempt++ {
		if p.Hooks.OnAttempt != nil {
			p.Hooks.OnAttempt(ctx, attempt)
		}
		err := fn(ctx, attempt)
		if err == nil || isPermanent(err) || !retryable(err) {
			return err
		}
		wait, reason := p.next(ctx, attempt)
		if reason == "" && !sleep(ctx, wait) {
			// The token paid for a retry that will not be made.
			if p.Budget != nil {
				p.Budget.refund()
			}
			reason = GiveUpContextDone
		}
		if reason != "" {
			if p.Hooks.OnGiveUp != nil {
				p.Hooks.OnGiveUp(ctx, attempt, reason)
			}
			if reason == GiveUpContextDone {
				return abandoned(ctx, err)
			}
			return err
		}
	}
}

// next decides whether attempt, which failed with a retryable error, is
// retried: it returns the backoff to wait first, or why not. The checks
// are ordered from cheapest to the one that spends a token, so that no
// token pays for a retry another check forbids.
func (p Policy) next(ctx context.Context, attempt int) (time.Duration, GiveUp) {
	if attempt >= p.MaxAttempts {
		return 0, GiveUpAttemptsExhausted
	}
	if ctx.Err() != nil {
		return 0, GiveUpContextDone
	}
	var wait time.Duration
	if p.BaseBackoff > 0 {
		random := p.Rand
		if random == nil {
			random = rand.Float64
		}
		wait = Backoff(attempt, p.BaseBackoff, p.MaxBackoff, random())
	}
	if p.BudgetAware && !p.fits(ctx, wait) {
		return 0, GiveUpBudgetDoesNotFit
	}
	if p.Budget != nil && !p.Budget.Withdraw() {
		return 0, GiveUpRetryBudgetEmpty
	}
	return wait, ""
}

// fits reports whether a retry after wait would still be allowed to start
// by the caller's budget: the same test as deadline.Policy.Decide, made
// with the time that will be left once the backoff is over.
func (p Policy) fits(ctx context.Context, wait time.Duration) bool {
	remaining, ok := deadline.Remaining(ctx)
	if !ok {
		return true
	}
	avail := remaining - p.Margin - wait
	return avail > 0 && avail >= p.Floor
}

// sleep waits d, or less if ctx ends first; it reports whether the whole
// wait was served.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// abandoned is Do's error when ctx ended before a retry: the context's
// error, with its cause, and the last attempt's error.
func abandoned(ctx context.Context, last error) error {
	ctxErr := ctx.Err()
	if errors.Is(last, ctxErr) {
		return last // the attempt already says the context ended
	}
	reason := ctxErr
	if cause := context.Cause(ctx); !errors.Is(ctxErr, cause) {
		reason = fmt.Errorf("%w: %w", ctxErr, cause)
	}
	return fmt.Errorf("retry abandoned, %w; last attempt: %w", reason, last)
}
