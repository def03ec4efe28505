package telemetry

import (
	"context"
	"time"
)

// The recording methods below run on the request path. Each looks up the
// prebuilt options for its label values (see attrCache) and hands them to
// the instrument: no allocation once a label value has been seen.

// Arrival records a request reaching the service: mercado_requests_total
// always, and mercado_budget_remaining_on_arrival_seconds when the request
// carried a deadline. A budget already spent is recorded as 0; the
// rejection itself is counted by [Metrics.Skipped].
func (m *Metrics) Arrival(ctx context.Context, method string, remaining time.Duration, hasBudget bool) {
	if m == nil {
		return
	}
	o := m.methods.get(method)
	m.requests.Add(ctx, 1, o.add...)
	if hasBudget {
		m.remainingOnArrival.Record(ctx, seconds(remaining), o.rec...)
	}
}

// Skipped counts a call not made or a request not served, by reason (one
// of the Reason constants).
func (m *Metrics) Skipped(ctx context.Context, reason string) {
	if m == nil {
		return
	}
	m.skipped.Add(ctx, 1, m.reasons.get(reason).add...)
}

// Hop records how long an outbound call to dep took and how it ended.
func (m *Metrics) Hop(ctx context.Context, dep string, took time.Duration, outcome string) {
	if m == nil {
		return
	}
	m.hopDuration.Record(ctx, seconds(took), m.hops.get(hopKey{dep, outcome}).rec...)
}

// HopTimeout records the timeout an outbound call to dep was given.
func (m *Metrics) HopTimeout(ctx context.Context, dep string, timeout time.Duration) {
	if m == nil {
		return
	}
	m.hopTimeout.Record(ctx, seconds(timeout), m.deps.get(dep).rec...)
}

// BudgetExhausted counts an outbound call to dep that the budget skipped
// or cut short.
func (m *Metrics) BudgetExhausted(ctx context.Context, dep string) {
	if m == nil {
		return
	}
	m.budgetExhausted.Add(ctx, 1, m.deps.get(dep).add...)
}

// Late records a request that finished late after the client's own
// deadline had passed: work done for nobody ("work for the trash").
func (m *Metrics) Late(ctx context.Context, method string, late time.Duration) {
	if m == nil {
		return
	}
	o := m.methods.get(method)
	m.lateCompletions.Add(ctx, 1, o.add...)
	m.lateWork.Add(ctx, seconds(late), o.add...)
}

// Attempt counts an outbound call attempt to dep, and a retry when it is
// one.
func (m *Metrics) Attempt(ctx context.Context, dep string, retry bool) {
	if m == nil {
		return
	}
	o := m.deps.get(dep)
	m.attempts.Add(ctx, 1, o.add...)
	if retry {
		m.retries.Add(ctx, 1, o.add...)
	}
}

// BreakerTransition counts a circuit breaker state change.
func (m *Metrics) BreakerTransition(ctx context.Context, dep, from, to string) {
	if m == nil {
		return
	}
	m.breakerTransitions.Add(ctx, 1, m.transitions.get(transitionKey{dep, from, to}).add...)
}

// ModeChange counts a switch of the service to mode.
func (m *Metrics) ModeChange(ctx context.Context, mode string) {
	if m == nil {
		return
	}
	m.modeChanges.Add(ctx, 1, m.modes.get(mode).add...)
}

// PoolRejected counts a request of a traffic class ("interactive",
// "background", "batch") turned away by a full pool or bulkhead.
func (m *Metrics) PoolRejected(ctx context.Context, pool, class string) {
	if m == nil {
		return
	}
	m.poolRejections.Add(ctx, 1, m.poolClasses.get(poolKey{pool, class}).add...)
}

// DeadlineClamped counts a request whose deadline the server cut down to
// its class's maximum.
func (m *Metrics) DeadlineClamped(ctx context.Context, class string) {
	if m == nil {
		return
	}
	m.deadlineClamps.Add(ctx, 1, m.classes.get(class).add...)
}

// seconds converts d for a seconds instrument. Negative durations (a
// deadline already past, a clock read out of order) become 0: histograms
// and counters take no negative values.
func seconds(d time.Duration) float64 {
	if d < 0 {
		return 0
	}
	return d.Seconds()
}
