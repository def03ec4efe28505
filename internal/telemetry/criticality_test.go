package telemetry

import (
	"context"
	"testing"
)

// The criticality metrics appear only on the service that declares them,
// at zero for every label value from the declaration on, and count what
// they are told.
func TestCriticalityMetrics(t *testing.T) {
	ctx := context.Background()
	other := newMetrics(t, "payments")
	fams := scrape(t, other)
	for _, name := range []string{NameDegraded, NameAuditEvents, NameAuditRetries, NameAuditQueueDepth} {
		if fams[name] != nil {
			t.Errorf("%s is exported by a service that declared no optional dependency or queue", name)
		}
	}

	m := newMetrics(t, "orders")
	depth := 7
	m.DegradedDependency("estimate")
	m.ObserveAuditQueue(func() int { return depth })
	fams = scrape(t, m)
	for _, r := range degradedReasons {
		if s := series(fams, NameDegraded, map[string]string{"dep": "estimate", "reason": r}); s == nil || s.GetCounter().GetValue() != 0 {
			t.Errorf("mercado_degraded_total{dep=estimate,reason=%s} = %v, want 0 from the declaration on", r, s)
		}
	}
	for _, o := range auditOutcomes {
		if s := series(fams, NameAuditEvents, map[string]string{"outcome": o}); s == nil || s.GetCounter().GetValue() != 0 {
			t.Errorf("mercado_audit_events_total{outcome=%s} = %v, want 0", o, s)
		}
	}
	if s := series(fams, NameAuditQueueDepth, nil); s == nil || s.GetGauge().GetValue() != 7 {
		t.Errorf("mercado_audit_queue_depth = %v, want the queue's 7", s)
	}

	m.Degraded(ctx, "estimate", DegradedLate)
	m.Degraded(ctx, "estimate", DegradedLate)
	m.AuditEvent(ctx, AuditDroppedFull)
	m.AuditRetry(ctx)
	depth = 2
	fams = scrape(t, m)
	if s := series(fams, NameDegraded, map[string]string{"dep": "estimate", "reason": DegradedLate}); s.GetCounter().GetValue() != 2 {
		t.Errorf("late = %v, want 2", s)
	}
	if s := series(fams, NameAuditEvents, map[string]string{"outcome": AuditDroppedFull}); s.GetCounter().GetValue() != 1 {
		t.Errorf("dropped_queue_full = %v, want 1", s)
	}
	if s := series(fams, NameAuditRetries, nil); s.GetCounter().GetValue() != 1 {
		t.Errorf("retries = %v, want 1", s)
	}
	if s := series(fams, NameAuditQueueDepth, nil); s.GetGauge().GetValue() != 2 {
		t.Errorf("depth = %v, want 2, read at scrape time", s)
	}
}
