package telemetry

import (
	"context"
	"testing"
	"time"
)

// TestHopCapTimeoutAndExhaustion: a dependency's cap is on /metrics
// (none when it has no cap), its budget exhaustion is exported at zero
// and counts each call the budget skipped or cut, and each call's timeout
// lands in the timeout histogram.
func TestHopCapTimeoutAndExhaustion(t *testing.T) {
	m := newMetrics(t, "orders")
	catalogCap := 300 * time.Millisecond
	if err := m.ObserveCap("catalog", func() time.Duration { return catalogCap }); err != nil {
		t.Fatal(err)
	}
	if err := m.ObserveCap("audit", func() time.Duration { return 0 }); err != nil {
		t.Fatal(err)
	}
	if err := m.ObserveCap("", func() time.Duration { return time.Second }); err == nil {
		t.Error("ObserveCap without a dependency: no error")
	}
	f := scrape(t, m)
	if s := series(f, NameHopCap, map[string]string{"dep": "catalog"}); s == nil || s.GetGauge().GetValue() != 0.3 {
		t.Errorf("%s{dep=catalog} = %v; want 0.3", NameHopCap, s)
	}
	if s := series(f, NameHopCap, map[string]string{"dep": "audit"}); s != nil {
		t.Errorf("%s{dep=audit} = %v; want no series for a hop without a cap", NameHopCap, s)
	}
	if s := series(f, NameBudgetExhausted, map[string]string{"dep": "catalog"}); s == nil || value(s) != 0 {
		t.Errorf("%s{dep=catalog} = %v; want a counter at 0", NameBudgetExhausted, s)
	}

	catalogCap = 0 // the caps mechanism switched off: no cap, no headroom
	if s := series(scrape(t, m), NameHopCap, map[string]string{"dep": "catalog"}); s != nil {
		t.Errorf("%s{dep=catalog} = %v after the cap went; want no series", NameHopCap, s)
	}
	catalogCap = 300 * time.Millisecond

	ctx := context.Background()
	m.BudgetExhausted(ctx, "catalog")
	m.BudgetExhausted(ctx, "catalog")
	m.HopTimeout(ctx, "catalog", 250*time.Millisecond)
	f = scrape(t, m)
	if s := series(f, NameBudgetExhausted, map[string]string{"dep": "catalog"}); value(s) != 2 {
		t.Errorf("%s{dep=catalog} = %v; want 2", NameBudgetExhausted, value(s))
	}
	h := series(f, NameHopTimeout, map[string]string{"dep": "catalog"}).GetHistogram()
	if h.GetSampleCount() != 1 || h.GetSampleSum() != 0.25 {
		t.Errorf("%s{dep=catalog}: count %d sum %v; want 1 and 0.25", NameHopTimeout, h.GetSampleCount(), h.GetSampleSum())
	}
}
