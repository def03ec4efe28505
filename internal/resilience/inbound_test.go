package resilience

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/telemetry"
)

func newTestInbound(t *testing.T, live *mode.Live, o InboundOptions) *Inbound {
	t.Helper()
	m, err := telemetry.New("test")
	if err != nil {
		t.Fatal(err)
	}
	o.Service, o.Settings, o.Metrics = "gateway", live, m
	return NewInbound(o)
}

// hold starts n requests through h and returns once all have started.
func hold(t *testing.T, h http.Handler, n int, path string) {
	t.Helper()
	var started sync.WaitGroup
	started.Add(n)
	for range n {
		go func() {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			h.ServeHTTP(httptest.NewRecorder(), req.WithContext(context.WithValue(req.Context(), startedKey{}, &started)))
		}()
	}
	started.Wait()
}

type startedKey struct{}

// blocking is a handler that says it started, then waits for release.
func blocking(release chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if wg, ok := r.Context().Value(startedKey{}).(*sync.WaitGroup); ok {
			wg.Done()
			<-release
		}
	})
}

// TestBulkheadsIsolateRouteGroups: in budgeted mode a full checkout
// bulkhead answers 503 at once, while browse, on its own bulkhead, is
// served.
func TestBulkheadsIsolateRouteGroups(t *testing.T) {
	live := settings(mode.Budgeted)
	in := newTestInbound(t, live, InboundOptions{Routes: []string{"checkout", "browse"}, RouteBulkhead: 2, MaxWait: 0})
	release := make(chan struct{})
	defer close(release)
	checkout := in.Middleware("checkout")(blocking(release))
	browse := in.Middleware("browse")(blocking(release))
	hold(t, checkout, 2, "/api/checkout")

	rec := httptest.NewRecorder()
	checkout.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/checkout", nil))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("checkout beyond its bulkhead: %d (Retry-After %q), want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	rec = httptest.NewRecorder()
	browse.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/products", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("browse while checkout is full: %d, want 200", rec.Code)
	}
}

// TestNaiveSharedPoolStarvesEveryRoute: in naive mode one pool serves
// every route, so when checkouts hold it, browse waits behind them.
func TestNaiveSharedPoolStarvesEveryRoute(t *testing.T) {
	live := settings(mode.Naive)
	in := newTestInbound(t, live, InboundOptions{Routes: []string{"checkout", "browse"}, Workers: 2})
	release := make(chan struct{})
	hold(t, in.Middleware("checkout")(blocking(release)), 2, "/api/checkout")

	served := make(chan int, 1)
	go func() {
		rec := httptest.NewRecorder()
		in.Middleware("browse")(blocking(release)).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/products", nil))
		served <- rec.Code
	}()
	select {
	case code := <-served:
		t.Fatalf("browse was served (%d) while checkouts held the shared pool", code)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if code := <-served; code != http.StatusOK {
		t.Errorf("browse after the pool freed: %d, want 200", code)
	}
}

// TestQueueWaitCountsAgainstTheBudget: a request that waits for a worker
// longer than its budget is turned away with 504, not started late.
func TestQueueWaitCountsAgainstTheBudget(t *testing.T) {
	live := settings(mode.Budgeted)
	in := newTestInbound(t, live, InboundOptions{Workers: 1, MaxWait: time.Minute})
	release := make(chan struct{})
	defer close(release)
	h := in.Middleware("")(blocking(release))
	hold(t, h, 1, "/x")

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	rec := httptest.NewRecorder()
	start := time.Now()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/x", nil).WithContext(ctx))
	if rec.Code != http.StatusGatewayTimeout {
		t.Errorf("status %d, want 504", rec.Code)
	}
	if waited := time.Since(start); waited > 2*time.Second {
		t.Errorf("waited %v for a worker with a 50 ms budget", waited)
	}
}

// A switch that names a pool size puts pools of that size in force, and
// one that names none, the size the pools started with.
func TestSwitchResizesTheWorkerPools(t *testing.T) {
	live := settings(mode.Naive)
	in := newTestInbound(t, live, InboundOptions{Workers: 4})
	capacity := func() (int, int) {
		return in.shared.Pool().Stats().Capacity, in.bounded.Pool().Stats().Capacity
	}
	if shared, bounded := capacity(); shared != 4 || bounded != 4 {
		t.Fatalf("at start: shared %d, workers %d slots; want 4, 4", shared, bounded)
	}
	s := live.Load()
	s.Workers = 2
	live.Switch(s)
	if shared, bounded := capacity(); shared != 2 || bounded != 2 {
		t.Errorf("after a switch to 2 workers: shared %d, workers %d slots; want 2, 2", shared, bounded)
	}
	s.Workers = 0
	live.Switch(s)
	if shared, bounded := capacity(); shared != 2 || bounded != 2 {
		t.Errorf("after a switch naming none: shared %d, workers %d slots; want the size in force, 2", shared, bounded)
	}
}
