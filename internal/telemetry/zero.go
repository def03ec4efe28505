package telemetry

import (
	"context"

	"github.com/mercado-lab/mercado/internal/mode"
)

// A counter series appears on /metrics only once something is counted in
// it, so a dashboard's rate() has nothing to work on before the first
// breaker trip, and an absence alert cannot tell "none yet" from "not
// exported". So every counter whose label values are known is exported at
// zero as soon as they are:
//
//   - at New: mercado_skipped_total for every reason,
//     mercado_mode_changes_total for both modes, and
//     mercado_deadline_clamps_total for every traffic class;
//   - at Serving: a method's requests and late completions;
//   - at ObservePool: the pool's rejections, for every traffic class;
//   - at ObserveBreaker: the dependency's attempts, retries and breaker
//     transitions;
//   - at ObserveCap: the dependency's budget exhaustion.
//
// The histograms cannot be: OpenTelemetry has no way to record "no
// observation", so mercado_hop_duration_seconds,
// mercado_hop_timeout_seconds and
// mercado_budget_remaining_on_arrival_seconds appear with their first one.

// reasons are the values of mercado_skipped_total's reason label.
var reasons = []string{
	ReasonInsufficientBudget, ReasonBreakerOpen, ReasonBulkheadFull,
	ReasonExpiredOnArrival, ReasonBelowFloorOnArrival, ReasonExpiredAtDequeue,
}

// breakerTransitions are the (from, to) pairs a breaker can report: its
// own four, and an open or half-open breaker reset to closed by a mode
// switch. The names are those of the breaker's states.
var breakerTransitions = [][2]string{
	{"closed", "open"}, {"open", "half_open"}, {"half_open", "closed"}, {"half_open", "open"},
	{"open", "closed"},
}

// zeroAtStart exports the counters whose label values every service has.
func (m *Metrics) zeroAtStart() {
	ctx := context.Background()
	for _, r := range reasons {
		m.skipped.Add(ctx, 0, m.reasons.get(r).add...)
	}
	for _, md := range mode.Modes() {
		m.modeChanges.Add(ctx, 0, m.modes.get(string(md)).add...)
	}
	for _, c := range classes {
		m.deadlineClamps.Add(ctx, 0, m.classes.get(c).add...)
	}
}

// Serving declares methods the service answers (gRPC full method names,
// or "http" at the edge): their mercado_requests_total,
// mercado_late_completions_total and mercado_late_work_seconds_total are
// exported from now on, at zero until the first request.
func (m *Metrics) Serving(methods ...string) {
	if m == nil {
		return
	}
	ctx := context.Background()
	for _, method := range methods {
		o := m.methods.get(method)
		m.requests.Add(ctx, 0, o.add...)
		m.lateCompletions.Add(ctx, 0, o.add...)
		m.lateWork.Add(ctx, 0, o.add...)
	}
}

// zeroPool exports a pool's rejections of every class.
func (m *Metrics) zeroPool(pool string) {
	for _, c := range classes {
		m.poolRejections.Add(context.Background(), 0, m.poolClasses.get(poolKey{pool, c}).add...)
	}
}

// zeroDependency exports a dependency's attempts, retries and breaker
// transitions.
func (m *Metrics) zeroDependency(dep string) {
	ctx := context.Background()
	o := m.deps.get(dep)
	m.attempts.Add(ctx, 0, o.add...)
	m.retries.Add(ctx, 0, o.add...)
	for _, t := range breakerTransitions {
		m.breakerTransitions.Add(ctx, 0, m.transitions.get(transitionKey{dep, t[0], t[1]}).add...)
	}
}
