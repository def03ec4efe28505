// Package bulkhead is a worker pool that admits at most a fixed number of
// calls at once and makes the rest wait their turn, first come first served.
//
// Mercado uses it to show two of its lessons:
//
//   - Put the vendor on its own pool. If every route and every dependency
//     shares one pool, a single slow vendor fills every slot and requests
//     that never touch that vendor wait behind it. In budgeted mode each
//     route (gateway) and each dependency (orders) gets its own [Pool] of
//     [DefaultCapacity] slots, so a sick dependency can only use up its own.
//   - Queue wait counts against the budget. Time spent waiting for a slot
//     is time the caller no longer has. [Pool.Acquire] waits at most
//     min(MaxWait, remaining budget) — the budget being ctx's deadline —
//     and reports how long it waited, so the server can check the budget
//     again after the wait (admission at dequeue).
//
// The two modes are two settings of the same pool:
//
//	// naive: one shared pool per service, an unbounded queue, and work
//	// waits however long it takes.
//	shared := bulkhead.New(bulkhead.Settings{Name: "orders", Capacity: 200, MaxWait: -1})
//
//	// budgeted: one pool per dependency; a short bounded wait (or none:
//	// MaxWait 0 fails fast when full), and never longer than the budget.
//	payments := bulkhead.New(bulkhead.Settings{Name: "payments", MaxWait: 20 * time.Millisecond})
//
// A naive pool in the lab should also be blind to the caller giving up:
// pass it context.WithoutCancel(ctx), as real code with no deadline
// plumbing would behave.
//
// Every successful Acquire is paired with exactly one Release:
//
//	if _, err := pool.Acquire(ctx); err != nil {
//		return err // errors.Is(err, bulkhead.ErrFull): ResourceExhausted / 503
//	}
//	defer pool.Release()
//
// When a pool is full and the wait is over, Acquire returns an error
// matching [ErrFull], which callers map to gRPC ResourceExhausted or HTTP
// 503. When the caller's context ends first, the error wraps the context's
// cause instead (context.DeadlineExceeded when the budget ran out), so
// "the pool was full" and "the budget ran out while queued" stay
// different outcomes in metrics.
//
// The package never logs; [Pool.Stats] exposes its counters. To reset a
// pool between phases of the lab, make a new one: calls that hold a slot of
// the old pool release it there.
package bulkhead
