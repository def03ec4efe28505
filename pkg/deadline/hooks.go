package deadline

import (
	"context"
	"time"
)

// Hooks observe the library for metrics and tracing. Every field may be
// nil. Hooks run synchronously on the request's goroutine: keep them fast.
// The context is the request's (the caller's, for OnCall), so a hook can
// reach the request's trace span or per-request records.
type Hooks struct {
	// OnCall runs after every outbound call, made or skipped.
	OnCall func(context.Context, CallInfo)
	// OnArrival runs when a request reaches a server or the edge, before
	// any work, whether or not it is admitted.
	OnArrival func(context.Context, ArrivalInfo)
	// OnLate runs when a server finishes a request after the client's own
	// deadline had passed (see [WithClientDeadline]).
	OnLate func(context.Context, LateInfo)
}

// CallInfo describes one outbound call.
type CallInfo struct {
	// Method is the gRPC full method name.
	Method string
	Decision
	// Took is how long the call lasted (zero when skipped).
	Took    time.Duration
	Outcome Outcome
	// Err is the call's error, nil when it succeeded.
	Err error
}

// ArrivalInfo describes one request on arrival.
type ArrivalInfo struct {
	// Method is the gRPC full method name, or "http" at the edge.
	Method string
	// Class is the request's class.
	Class Class
	// HasBudget reports whether the request carried a deadline.
	HasBudget bool
	// Remaining is what was left of it on arrival.
	Remaining time.Duration
	// Clamped reports that the server cut the deadline the request came
	// with (none, or Remaining) down to its class's maximum, ClampedTo.
	Clamped   bool
	ClampedTo time.Duration
	// Rejected reports that admission turned the request away; Reason
	// says why ("expired" or "below_floor").
	Rejected bool
	Reason   string
}

// LateInfo describes work finished after the client gave up.
type LateInfo struct {
	// Method is the gRPC full method name, or "http" at the edge.
	Method string
	// Late is how long after the client's deadline the work finished.
	Late time.Duration
}
