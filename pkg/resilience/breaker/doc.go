// Package breaker gives each dependency its own circuit breaker, so that a
// sick dependency is cut off instead of eating every caller's budget.
//
// The rule comes from Drill 76, "pair the budget with a breaker": a breaker
// opens when at least half of at least 20 calls in its window failed, stays
// open for 30 s, then lets a probe through (half-open). A successful probe
// closes it, a failed one opens it again. Every number is in [Settings].
//
// The state machine is github.com/sony/gobreaker's, with a rolling window
// of time (10 s by default, in ten buckets): a call counts in the bucket of
// the moment it started, once it ends. Two things follow, and
// docs/breakers.md shows both in the lab. The breaker forgets by time, not
// by calls: after a busy healthy spell it opens only once the failures
// outweigh the successes still in the window. And a call that outlasts the
// window is never counted, so a dependency whose calls hang to a long cap
// needs a window longer than the cap (orders sizes each dependency's).
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
// breaker.go maps Mercado's verdicts onto gobreaker and adds what it lacks:
// a Reset that starts a fresh window and drops the calls in flight, and
// RetryAfter. Like gobreaker, it never logs: it returns the sentinel
// [ErrOpen] and reports transitions through [Settings.OnStateChange].
// gobreaker consults its rule after a failure only, so a success that
// brings the failures to half of the calls does not open the breaker: the
// next failure does.
package breaker
