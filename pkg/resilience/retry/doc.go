// Package retry retries failed calls, in the two ways Mercado's lab
// compares.
//
// Naive retries ([Naive]) are what a fragile system does: every layer tries
// each call a fixed 3 times, at once, whatever the error and however little
// time is left. Stacked layers multiply: two layers of 3 make 9 calls to the
// bottom dependency, three layers 27 — the retry storm that turns a slow
// dependency into a dead one.
//
// Budgeted retries follow the lesson's rule, "every retry checks the
// budget":
//
//   - Retry at one layer only (orders, towards its dependencies). The layers
//     above call once, so attempts add up instead of multiplying.
//   - Retry only what a new try may fix and only calls that are safe to
//     repeat (idempotent, or carrying an idempotency key): see
//     [DefaultRetryable].
//   - Wait a full-jitter exponential backoff ([Backoff]) so that callers that
//     failed together do not come back together.
//   - Start a retry only if it fits: backoff + floor must fit in what is
//     left of the caller's budget after the margin ([Policy.BudgetAware]).
//     This is the check the call itself makes ([deadline.Policy.Decide]),
//     made before sleeping rather than after.
//   - Spend a retry budget ([Budget]): retries add at most about 10% to the
//     load, so a sick dependency is not buried under them.
//
// The package never logs; [Hooks] report every attempt and every give-up.
package retry
