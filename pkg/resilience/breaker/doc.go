// Package breaker gives each dependency its own circuit breaker, so that a
// sick dependency is cut off instead of eating every caller's budget.
//
// The rule comes from Drill 76, "pair the budget with a breaker": a breaker
// opens when at least half of the last 20 calls failed, stays open for
// 30 s, then lets a probe through (half-open). A successful probe closes it,
// a failed one opens it again. All three numbers are [Settings].
//
// The window is an exact count of the last calls, not a time window: a
// ring of the last [Settings.Window] verdicts. The breaker cannot trip until
// the ring is full, so a handful of early failures does not open it.
//
// Not every error is the dependency's fault. [Classify] reads the errors of
// pkg/deadline and gRPC status codes:
//
//   - Failure: the call hit its own cap (deadline.ErrCallTimeout: the
//     dependency was slow), or the dependency was Unavailable,
//     ResourceExhausted, Internal, Unknown or lost data.
//   - Excluded (not counted at all): the caller's budget ran out
//     (deadline.ErrBudgetExhausted), the call was skipped for lack of budget
//     (deadline.ErrInsufficientBudget), the caller canceled, or a bare
//     DeadlineExceeded that does not say the call's own cap fired. A breaker
//     that counted those would open because callers are late, and cut off a
//     healthy dependency.
//   - Success: any answer the dependency chose to give, including business
//     errors such as NotFound or FailedPrecondition.
//
// The rule and the transitions between closed, open and half-open are all
// in breaker.go, one small state machine under one lock. Like
// github.com/sony/gobreaker, it never logs: it returns the sentinel
// [ErrOpen] and reports transitions through [Settings.OnStateChange].
// gobreaker itself is not used because it consults its trip rule only
// after a failure, while "10 failures in the last 20 calls" is also met by
// a success that completes the window.
package breaker
