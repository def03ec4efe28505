package telemetry

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

const checkout = "/mercado.orders.v1.Orders/Checkout"

func TestHandlerExposesEveryFamily(t *testing.T) {
	ctx := context.Background()
	m := newMetrics(t, "orders")

	m.Arrival(ctx, checkout, 800*time.Millisecond, true)
	m.Arrival(ctx, checkout, 700*time.Millisecond, true)
	m.Arrival(ctx, checkout, 0, false) // no deadline: counted, not in the histogram
	m.Skipped(ctx, ReasonBreakerOpen)
	m.Skipped(ctx, ReasonBreakerOpen)
	m.Skipped(ctx, ReasonInsufficientBudget)
	m.Hop(ctx, "payments", 250*time.Millisecond, "ok")
	m.Hop(ctx, "payments", 280*time.Millisecond, "ok")
	m.Hop(ctx, "payments", 330*time.Millisecond, "timeout")
	m.Late(ctx, "http", 1500*time.Millisecond)
	m.Late(ctx, "http", 1500*time.Millisecond)
	m.Attempt(ctx, "payments", false)
	m.Attempt(ctx, "payments", false)
	m.Attempt(ctx, "payments", true)
	m.BreakerTransition(ctx, "payments", "closed", "open")
	m.ModeChange(ctx, "naive")
	m.ModeChange(ctx, "budgeted")
	m.ModeChange(ctx, "budgeted")
	m.PoolRejected(ctx, "payments", "batch")
	m.PoolRejected(ctx, "payments", "batch")
	m.PoolRejected(ctx, "payments", "interactive")
	m.DeadlineClamped(ctx, "batch")
	if err := m.ObservePool("payments", func() (int, int, int) { return 3, 1, 25 }); err != nil {
		t.Fatal(err)
	}
	if err := m.ObserveBreaker("payments", func() int { return BreakerOpen }); err != nil {
		t.Fatal(err)
	}

	counter, histogram, gauge := dto.MetricType_COUNTER, dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE
	tests := []struct {
		name   string
		typ    dto.MetricType
		labels map[string]string
		want   float64 // counter or gauge value, histogram sample count
	}{
		{"mercado_requests_total", counter, map[string]string{"method": checkout}, 3},
		{"mercado_budget_remaining_on_arrival_seconds", histogram, map[string]string{"method": checkout}, 2},
		{"mercado_skipped_total", counter, map[string]string{"reason": "breaker_open"}, 2},
		{"mercado_skipped_total", counter, map[string]string{"reason": "insufficient_budget"}, 1},
		{"mercado_hop_duration_seconds", histogram, map[string]string{"dep": "payments", "outcome": "ok"}, 2},
		{"mercado_hop_duration_seconds", histogram, map[string]string{"dep": "payments", "outcome": "timeout"}, 1},
		{"mercado_late_completions_total", counter, map[string]string{"method": "http"}, 2},
		{"mercado_late_work_seconds_total", counter, map[string]string{"method": "http"}, 3},
		{"mercado_attempts_total", counter, map[string]string{"dep": "payments"}, 3},
		{"mercado_retries_total", counter, map[string]string{"dep": "payments"}, 1},
		{"mercado_breaker_transitions_total", counter, map[string]string{"dep": "payments", "from": "closed", "to": "open"}, 1},
		{"mercado_mode_changes_total", counter, map[string]string{"mode": "naive"}, 1},
		{"mercado_mode_changes_total", counter, map[string]string{"mode": "budgeted"}, 2},
		{"mercado_pool_rejections_total", counter, map[string]string{"pool": "payments", "class": "batch"}, 2},
		{"mercado_pool_rejections_total", counter, map[string]string{"pool": "payments", "class": "interactive"}, 1},
		{"mercado_pool_rejections_total", counter, map[string]string{"pool": "payments", "class": "background"}, 0},
		{"mercado_deadline_clamps_total", counter, map[string]string{"class": "batch"}, 1},
		{"mercado_deadline_clamps_total", counter, map[string]string{"class": "interactive"}, 0},
		{"mercado_pool_in_flight", gauge, map[string]string{"pool": "payments"}, 3},
		{"mercado_pool_waiting", gauge, map[string]string{"pool": "payments"}, 1},
		{"mercado_pool_capacity", gauge, map[string]string{"pool": "payments"}, 25},
		{"mercado_breaker_state", gauge, map[string]string{"dep": "payments"}, 2},
	}

	families := scrape(t, m)
	for _, tt := range tests {
		t.Run(tt.name+fmt.Sprint(tt.labels), func(t *testing.T) {
			mf := families[tt.name]
			if mf == nil {
				t.Fatalf("family %s missing; have %v", tt.name, slices.Sorted(maps.Keys(families)))
			}
			if mf.GetType() != tt.typ {
				t.Errorf("type = %v; want %v", mf.GetType(), tt.typ)
			}
			want := map[string]string{"service": "orders"}
			for k, v := range tt.labels {
				want[k] = v
			}
			s := series(families, tt.name, want)
			if s == nil {
				t.Fatalf("no series with labels %v in %v", want, mf.GetMetric())
			}
			if got := labels(s); len(got) != len(want) {
				t.Errorf("labels = %v; want exactly %v", got, want)
			}
			if got := value(s); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("value = %v; want %v", got, tt.want)
			}
		})
	}

	// Nothing but the families above: no target_info, no otel_scope_*
	// labels, and every series says whose it is.
	wantNames := map[string]bool{}
	for _, tt := range tests {
		wantNames[tt.name] = true
	}
	for name, mf := range families {
		if !wantNames[name] {
			t.Errorf("unexpected family %s", name)
		}
		for _, s := range mf.GetMetric() {
			for k, v := range labels(s) {
				if strings.HasPrefix(k, "otel_") {
					t.Errorf("%s has label %s=%q", name, k, v)
				}
			}
			if got := labels(s)["service"]; got != "orders" {
				t.Errorf("%s%v: service = %q; want orders", name, labels(s), got)
			}
		}
	}
}

func TestHistogramBuckets(t *testing.T) {
	m := newMetrics(t, "orders")
	m.Hop(context.Background(), "catalog", 280*time.Millisecond, "ok") // under the 300 ms cap

	h := series(scrape(t, m), "mercado_hop_duration_seconds", map[string]string{"dep": "catalog"}).GetHistogram()
	var bounds []float64
	for _, b := range h.GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
	}
	wantBounds := append(slices.Clone(SecondsBuckets), math.Inf(1))
	if !slices.Equal(bounds, wantBounds) {
		t.Errorf("bucket bounds = %v; want %v", bounds, wantBounds)
	}
	if first, last := SecondsBuckets[0], SecondsBuckets[len(SecondsBuckets)-1]; first != 0.001 || last != 30 {
		t.Errorf("buckets span %v..%v s; want 0.001..30", first, last)
	}
	for _, b := range h.GetBucket() {
		want := uint64(0)
		if b.GetUpperBound() >= 0.3 {
			want = 1
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("bucket le=%v: count %d; want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	if got := h.GetSampleSum(); math.Abs(got-0.28) > 1e-9 {
		t.Errorf("sum = %v; want 0.28", got)
	}
}

func TestNegativeDurationsRecordZero(t *testing.T) {
	ctx := context.Background()
	m := newMetrics(t, "orders")
	m.Arrival(ctx, checkout, -50*time.Millisecond, true) // expired on arrival
	m.Hop(ctx, "catalog", -time.Millisecond, "ok")
	m.Late(ctx, checkout, -time.Millisecond)

	families := scrape(t, m)
	for _, name := range []string{"mercado_budget_remaining_on_arrival_seconds", "mercado_hop_duration_seconds"} {
		h := series(families, name, nil).GetHistogram()
		if h.GetSampleCount() != 1 || h.GetSampleSum() != 0 {
			t.Errorf("%s: count %d sum %v; want 1 and 0", name, h.GetSampleCount(), h.GetSampleSum())
		}
	}
	if got := value(series(families, "mercado_late_work_seconds_total", nil)); got != 0 {
		t.Errorf("mercado_late_work_seconds_total = %v; want 0", got)
	}
	if got := value(series(families, "mercado_late_completions_total", nil)); got != 1 {
		t.Errorf("mercado_late_completions_total = %v; want 1", got)
	}
}

func TestServicesDoNotSeeEachOther(t *testing.T) {
	ctx := context.Background()
	orders := newMetrics(t, "orders")
	catalog := newMetrics(t, "catalog")

	orders.Skipped(ctx, ReasonBreakerOpen)
	orders.Skipped(ctx, ReasonBreakerOpen)
	catalog.Skipped(ctx, ReasonBreakerOpen)
	catalog.Hop(ctx, "postgres", time.Millisecond, "ok")
	if err := orders.ObservePool("payments", func() (int, int, int) { return 1, 0, 25 }); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		m           *Metrics
		service     string
		wantSkipped float64
		wantFamily  string
		notFamily   string
	}{
		{orders, "orders", 2, "mercado_pool_in_flight", "mercado_hop_duration_seconds"},
		{catalog, "catalog", 1, "mercado_hop_duration_seconds", "mercado_pool_in_flight"},
	}
	for _, tt := range tests {
		t.Run(tt.service, func(t *testing.T) {
			families := scrape(t, tt.m)
			for name, mf := range families {
				for _, s := range mf.GetMetric() {
					if got := labels(s)["service"]; got != tt.service {
						t.Errorf("%s%v: service %q on %s's handler", name, labels(s), got, tt.service)
					}
				}
			}
			sum := 0.0
			for _, s := range families["mercado_skipped_total"].GetMetric() {
				sum += value(s)
			}
			if got := value(series(families, "mercado_skipped_total", map[string]string{"reason": ReasonBreakerOpen})); got != tt.wantSkipped || sum != tt.wantSkipped {
				t.Errorf("mercado_skipped_total{reason=breaker_open} = %v, all reasons %v; want %v", got, sum, tt.wantSkipped)
			}
			if families[tt.wantFamily] == nil {
				t.Errorf("family %s missing", tt.wantFamily)
			}
			if families[tt.notFamily] != nil {
				t.Errorf("family %s belongs to the other service", tt.notFamily)
			}
		})
	}
}

func TestObservedGaugesAreReadAtScrapeTime(t *testing.T) {
	m := newMetrics(t, "payments")
	var inFlight, state atomic.Int64
	stats := func() (int, int, int) { return int(inFlight.Load()), 4, 25 }
	if err := m.ObservePool("psp", stats); err != nil {
		t.Fatal(err)
	}
	if err := m.ObserveBreaker("psp", func() int { return int(state.Load()) }); err != nil {
		t.Fatal(err)
	}

	check := func(wantInFlight, wantState float64) {
		t.Helper()
		families := scrape(t, m)
		psp := map[string]string{"pool": "psp"}
		if got := value(series(families, "mercado_pool_in_flight", psp)); got != wantInFlight {
			t.Errorf("mercado_pool_in_flight = %v; want %v", got, wantInFlight)
		}
		if got := value(series(families, "mercado_pool_waiting", psp)); got != 4 {
			t.Errorf("mercado_pool_waiting = %v; want 4", got)
		}
		if got := value(series(families, "mercado_pool_capacity", psp)); got != 25 {
			t.Errorf("mercado_pool_capacity = %v; want 25", got)
		}
		if got := value(series(families, "mercado_breaker_state", map[string]string{"dep": "psp"})); got != wantState {
			t.Errorf("mercado_breaker_state = %v; want %v", got, wantState)
		}
	}
	check(0, BreakerClosed)
	inFlight.Store(25)
	state.Store(BreakerOpen)
	check(25, BreakerOpen)
	state.Store(BreakerHalfOpen)
	check(25, BreakerHalfOpen)

	// Observing the same pool again replaces the earlier stats (a pool
	// rebuilt on a mode switch).
	if err := m.ObservePool("psp", func() (int, int, int) { return 7, 4, 25 }); err != nil {
		t.Fatal(err)
	}
	check(7, BreakerHalfOpen)
	if n := len(scrape(t, m)["mercado_pool_in_flight"].GetMetric()); n != 1 {
		t.Errorf("mercado_pool_in_flight has %d series after re-observing; want 1", n)
	}
}

func TestObserveRejectsMissingArguments(t *testing.T) {
	m := newMetrics(t, "orders")
	stats := func() (int, int, int) { return 0, 0, 0 }
	state := func() int { return 0 }
	tests := []struct {
		name string
		call func() error
	}{
		{"pool without name", func() error { return m.ObservePool("", stats) }},
		{"pool without stats", func() error { return m.ObservePool("psp", nil) }},
		{"breaker without dep", func() error { return m.ObserveBreaker("", state) }},
		{"breaker without state", func() error { return m.ObserveBreaker("psp", nil) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); err == nil {
				t.Error("err = nil; want an error")
			}
		})
	}
}

func TestNewRejectsEmptyService(t *testing.T) {
	if m, err := New(""); err == nil {
		t.Errorf("New(\"\") = %v, nil; want an error", m)
	}
}

func TestCustomMeterSharesTheHandler(t *testing.T) {
	m := newMetrics(t, "payments")
	replays, err := m.Custom().Int64Counter("mercado_idempotent_replays_total")
	if err != nil {
		t.Fatal(err)
	}
	replays.Add(context.Background(), 1)

	s := series(scrape(t, m), "mercado_idempotent_replays_total", map[string]string{"service": "payments"})
	if s == nil || value(s) != 1 {
		t.Fatalf("mercado_idempotent_replays_total = %v; want 1 with service=payments", s)
	}
}

func TestShutdown(t *testing.T) {
	m, err := New("shipping")
	if err != nil {
		t.Fatal(err)
	}
	m.Skipped(context.Background(), ReasonBulkheadFull)
	if err := m.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	m.Skipped(context.Background(), ReasonBulkheadFull) // a no-op, not a panic
	if families := scrape(t, m); len(families) != 0 {
		t.Errorf("after Shutdown: %d families; want none", len(families))
	}
}

func TestNilMetricsRecordsNothing(t *testing.T) {
	var m *Metrics
	ctx := context.Background()
	m.Arrival(ctx, checkout, time.Second, true)
	m.Skipped(ctx, ReasonBreakerOpen)
	m.Hop(ctx, "payments", time.Second, "ok")
	m.Late(ctx, checkout, time.Second)
	m.Attempt(ctx, "payments", true)
	m.BreakerTransition(ctx, "payments", "closed", "open")
	m.ModeChange(ctx, "naive")
	m.PoolRejected(ctx, "payments", "interactive")
	if err := m.ObservePool("payments", nil); err != nil {
		t.Errorf("ObservePool: %v", err)
	}
	if err := m.ObserveBreaker("payments", nil); err != nil {
		t.Errorf("ObserveBreaker: %v", err)
	}
	if _, err := m.Custom().Int64Counter("x"); err != nil {
		t.Errorf("Custom: %v", err)
	}
	if err := m.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if m.Handler() == nil {
		t.Error("Handler() = nil")
	}
}

// TestConcurrentUse records, observes and scrapes from many goroutines at
// once (run it with -race), then checks that no measurement was lost.
func TestConcurrentUse(t *testing.T) {
	const (
		goroutines = 8
		iterations = 500
		deps       = 4
	)
	ctx := context.Background()
	m := newMetrics(t, "orders")

	var wg sync.WaitGroup
	stop := make(chan struct{})
	scraped := make(chan struct{})
	go func() { // a Prometheus scraping while the requests run
		defer close(scraped)
		for {
			select {
			case <-stop:
				return
			default:
				if _, err := tryScrape(m); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	for g := range goroutines {
		wg.Go(func() {
			// Label values first seen concurrently exercise the cache's
			// writers as well as its readers.
			dep := fmt.Sprintf("dep%d", g%deps)
			for i := range iterations {
				m.Arrival(ctx, checkout, time.Second, true)
				m.Skipped(ctx, ReasonBreakerOpen)
				m.Hop(ctx, dep, time.Millisecond, "ok")
				m.Attempt(ctx, dep, i%2 == 1)
				m.Late(ctx, checkout, time.Millisecond)
				m.PoolRejected(ctx, dep, "interactive")
				if i%100 == 0 {
					_ = m.ObservePool(dep, func() (int, int, int) { return i, 0, 25 })
					_ = m.ObserveBreaker(dep, func() int { return BreakerClosed })
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	<-scraped

	families := scrape(t, m)
	total := float64(goroutines * iterations)
	perDep := total / deps
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"mercado_requests_total", nil, total},
		{"mercado_budget_remaining_on_arrival_seconds", nil, total},
		{"mercado_skipped_total", map[string]string{"reason": ReasonBreakerOpen}, total},
		{"mercado_late_completions_total", nil, total},
		{"mercado_hop_duration_seconds", map[string]string{"dep": "dep0"}, perDep},
		{"mercado_attempts_total", map[string]string{"dep": "dep1"}, perDep},
		{"mercado_retries_total", map[string]string{"dep": "dep2"}, perDep / 2},
		{"mercado_pool_rejections_total", map[string]string{"dep": "dep3"}, 0}, // pool label, not dep
		{"mercado_pool_rejections_total", map[string]string{"pool": "dep3", "class": "interactive"}, perDep},
	}
	for _, tt := range tests {
		s := series(families, tt.name, tt.labels)
		if tt.want == 0 {
			if s != nil {
				t.Errorf("%s%v exists; want no such series", tt.name, tt.labels)
			}
			continue
		}
		if got := value(s); got != tt.want {
			t.Errorf("%s%v = %v; want %v", tt.name, tt.labels, got, tt.want)
		}
	}
	if n := len(families["mercado_pool_in_flight"].GetMetric()); n != deps {
		t.Errorf("mercado_pool_in_flight has %d series; want %d", n, deps)
	}
}

// TestRecordingDoesNotAllocate guards the performance requirement: once a
// label value has been seen, recording allocates nothing.
func TestRecordingDoesNotAllocate(t *testing.T) {
	ctx := context.Background()
	m := newMetrics(t, "orders")
	tests := []struct {
		name   string
		record func()
	}{
		{"Arrival", func() { m.Arrival(ctx, checkout, time.Second, true) }},
		{"Skipped", func() { m.Skipped(ctx, ReasonBreakerOpen) }},
		{"Hop", func() { m.Hop(ctx, "payments", time.Millisecond, "ok") }},
		{"Late", func() { m.Late(ctx, checkout, time.Millisecond) }},
		{"Attempt", func() { m.Attempt(ctx, "payments", true) }},
		{"BreakerTransition", func() { m.BreakerTransition(ctx, "payments", "closed", "open") }},
		{"ModeChange", func() { m.ModeChange(ctx, "budgeted") }},
		{"PoolRejected", func() { m.PoolRejected(ctx, "payments", "interactive") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.record() // first sight of the labels builds and caches them
			if got := testing.AllocsPerRun(100, tt.record); got > 0 {
				t.Errorf("%s: %v allocs per call; want 0", tt.name, got)
			}
		})
	}
}
