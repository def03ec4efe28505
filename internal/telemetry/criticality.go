package telemetry

import (
	"context"
	"errors"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The metrics of a dependency's criticality (docs/criticality.md): answers
// degraded to an optional dependency's default, and the fire-forward
// audit queue. Only orders has these dependencies; it declares them
// (DegradedDependency, ObserveAuditQueue), which exports their counters
// at zero.

// Why an optional dependency's answer was replaced by its default, the
// values of mercado_degraded_total's reason label.
const (
	// The answer was not back when the critical path was done.
	DegradedLate = "late"
	// The call's own cap ran out.
	DegradedTimeout = "timeout"
	// The dependency's breaker was open, or its bulkhead full.
	DegradedRejected = "rejected"
	// Too little budget was left to make the call, or it ran out.
	DegradedBudget = "budget"
	// The dependency answered with an error.
	DegradedError = "error"
)

var degradedReasons = []string{DegradedLate, DegradedTimeout, DegradedRejected, DegradedBudget, DegradedError}

// What became of an audit event, the values of
// mercado_audit_events_total's outcome label.
const (
	// Put on the queue, for the worker to write.
	AuditQueued = "queued"
	// Written by the queue's worker.
	AuditRecorded = "recorded"
	// Written in line by the checkout (criticality off).
	AuditInLine = "in_line"
	// Dropped: the queue was full.
	AuditDroppedFull = "dropped_queue_full"
	// Dropped: its lifetime ran out before a write succeeded.
	AuditDroppedExpired = "dropped_expired"
	// Dropped: the process stopped before it was written.
	AuditDroppedShutdown = "dropped_shutdown"
	// Dropped: the trail refused the event itself (a bug, not an outage).
	AuditDroppedRejected = "dropped_rejected"
	// The in-line write failed, and the checkout with it.
	AuditFailedInLine = "failed_in_line"
)

var auditOutcomes = []string{AuditQueued, AuditRecorded, AuditInLine, AuditDroppedFull, AuditDroppedExpired, AuditDroppedShutdown, AuditDroppedRejected, AuditFailedInLine}

type degradedKey struct{ dep, reason string }

func degradedAttrs(k degradedKey) attribute.Set {
	return attribute.NewSet(attribute.String(labelDep, k.dep), attribute.String(labelReason, k.reason))
}

// criticality holds the instruments, built once per Metrics.
type criticality struct {
	degraded     metric.Int64Counter
	auditEvents  metric.Int64Counter
	auditRetries metric.Int64Counter
	auditDepth   metric.Int64ObservableGauge

	degradedAttrs *attrCache[degradedKey]
	outcomes      *attrCache[string]
	depth         atomic.Pointer[func() int]
}

func (m *Metrics) criticalityInstruments() error {
	c := &m.crit
	c.degradedAttrs = newAttrCache(degradedAttrs)
	c.outcomes = newAttrCache(oneLabel(labelOutcome))
	var errs [4]error
	c.degraded, errs[0] = m.meter.Int64Counter(NameDegraded,
		metric.WithDescription("Answers that carry an optional dependency's default value instead of its answer, by dependency and reason."))
	c.auditEvents, errs[1] = m.meter.Int64Counter(NameAuditEvents,
		metric.WithDescription("Audit events of completed checkouts, by what became of them."))
	c.auditRetries, errs[2] = m.meter.Int64Counter(NameAuditRetries,
		metric.WithDescription("Audit writes tried again after a failed attempt."))
	c.auditDepth, errs[3] = m.meter.Int64ObservableGauge(NameAuditQueueDepth,
		metric.WithDescription("Audit events waiting on the queue."))
	if err := errors.Join(errs[:]...); err != nil {
		return err
	}
	_, err := m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		if f := c.depth.Load(); f != nil {
			o.ObserveInt64(c.auditDepth, int64((*f)()))
		}
		return nil
	}, c.auditDepth)
	return err
}

// DegradedDependency declares an optional dependency: its
// mercado_degraded_total is exported from now on, at zero for every reason.
func (m *Metrics) DegradedDependency(dep string) {
	if m == nil {
		return
	}
	for _, r := range degradedReasons {
		m.crit.degraded.Add(context.Background(), 0, m.crit.degradedAttrs.get(degradedKey{dep, r}).add...)
	}
}

// Degraded counts an answer that carries dep's default value, and why
// (one of the Degraded constants).
func (m *Metrics) Degraded(ctx context.Context, dep, reason string) {
	if m == nil {
		return
	}
	m.crit.degraded.Add(ctx, 1, m.crit.degradedAttrs.get(degradedKey{dep, reason}).add...)
}

// ObserveAuditQueue declares the audit queue: mercado_audit_queue_depth
// reads depth at scrape time, and mercado_audit_events_total (every
// outcome) and mercado_audit_retries_total are exported at zero.
func (m *Metrics) ObserveAuditQueue(depth func() int) {
	if m == nil || depth == nil {
		return
	}
	m.crit.depth.Store(&depth)
	for _, o := range auditOutcomes {
		m.crit.auditEvents.Add(context.Background(), 0, m.crit.outcomes.get(o).add...)
	}
	m.crit.auditRetries.Add(context.Background(), 0)
}

// AuditEvent counts an audit event's outcome (one of the Audit constants).
func (m *Metrics) AuditEvent(ctx context.Context, outcome string) {
	if m == nil {
		return
	}
	m.crit.auditEvents.Add(ctx, 1, m.crit.outcomes.get(outcome).add...)
}

// AuditRetry counts an audit write tried again.
func (m *Metrics) AuditRetry(ctx context.Context) {
	if m == nil {
		return
	}
	m.crit.auditRetries.Add(ctx, 1)
}
