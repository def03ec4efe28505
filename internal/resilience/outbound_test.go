package resilience

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/telemetry"
	"github.com/mercado-lab/mercado/internal/timing"
	"github.com/mercado-lab/mercado/pkg/deadline"
	"github.com/mercado-lab/mercado/pkg/resilience/breaker"
	"github.com/mercado-lab/mercado/pkg/resilience/bulkhead"
)

func settings(m mode.Mode) *mode.Live {
	return mode.NewLive(mode.Settings{Mode: m, Mechanisms: m.Mechanisms(), Margin: 3 * time.Millisecond, Floor: 20 * time.Millisecond})
}

// countingInvoker answers every call with err and counts the calls.
func countingInvoker(calls *atomic.Int64, err error) grpc.UnaryInvoker {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, opts ...grpc.CallOption) error {
		calls.Add(1)
		return err
	}
}

func newTestOutbound(t *testing.T, live *mode.Live, o OutboundOptions) *Outbound {
	t.Helper()
	m, err := telemetry.New("test")
	if err != nil {
		t.Fatal(err)
	}
	o.Settings, o.Metrics = live, m
	if o.Name == "" {
		o.Name = "shipping"
	}
	return NewOutbound(o)
}

func call(d *Outbound, ctx context.Context, inv grpc.UnaryInvoker) error {
	return ClientChain(d)(ctx, "/mercado.shipping.v1.ShippingService/CreateShipment", nil, nil, nil, inv)
}

// TestNaiveRetriesAmplify: naive mode retries blind at every layer, so two
// layers of three attempts make nine calls downstream.
func TestNaiveRetriesAmplify(t *testing.T) {
	live := settings(mode.Naive)
	outer := newTestOutbound(t, live, OutboundOptions{Name: "orders", NaiveRetries: true})
	inner := newTestOutbound(t, live, OutboundOptions{Name: "shipping", NaiveRetries: true})
	var calls atomic.Int64
	unavailable := status.Error(codes.Unavailable, "down")
	err := call(outer, context.Background(), func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, opts ...grpc.CallOption) error {
		return call(inner, ctx, countingInvoker(&calls, unavailable))
	})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("err = %v", err)
	}
	if got := calls.Load(); got != 9 {
		t.Errorf("downstream calls = %d, want 3 x 3 = 9", got)
	}
}

// TestBudgetedRetriesOnlyAtTheirLayer: in budgeted mode a layer without
// BudgetedRetries calls once, and the retrying layer stays within three
// attempts.
func TestBudgetedRetriesOnlyAtTheirLayer(t *testing.T) {
	live := settings(mode.Budgeted)
	unavailable := status.Error(codes.Unavailable, "down")
	for _, tc := range []struct {
		name string
		o    OutboundOptions
		want int64
	}{
		{"gateway layer", OutboundOptions{Name: "orders", NaiveRetries: true}, 1},
		{"orders layer", OutboundOptions{Name: "shipping", BudgetedRetries: true, Idempotent: func(string) bool { return true }}, 3},
		{"orders layer, not idempotent", OutboundOptions{Name: "shipping", BudgetedRetries: true, Idempotent: func(string) bool { return false }}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newTestOutbound(t, live, tc.o)
			var calls atomic.Int64
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = call(d, ctx, countingInvoker(&calls, unavailable))
			if got := calls.Load(); got != tc.want {
				t.Errorf("calls = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestBreakerOpensAndFailsFast: after enough failures the breaker
// opens and later calls are rejected without reaching the dependency, as
// Unavailable, recorded as a breaker_open hop.
func TestBreakerOpensAndFailsFast(t *testing.T) {
	live := settings(mode.Budgeted)
	d := newTestOutbound(t, live, OutboundOptions{Breaker: breaker.Settings{MinCalls: 4, OpenFor: time.Minute}})
	var calls atomic.Int64
	failing := countingInvoker(&calls, status.Error(codes.Internal, "boom"))
	for range 4 {
		_ = call(d, context.Background(), failing)
	}
	if d.Breaker(deadline.Interactive).State() != breaker.Open {
		t.Fatalf("breaker %v after 4 failures of at least 4 calls, want open", d.Breaker(deadline.Interactive).State())
	}
	ctx, rec := timing.WithRecorder(context.Background())
	err := call(d, ctx, failing)
	if calls.Load() != 4 {
		t.Errorf("the open breaker let a call through (%d calls)", calls.Load())
	}
	var rej *Rejection
	if !errors.As(err, &rej) || rej.Reason != ReasonBreakerOpen || status.Code(err) != codes.Unavailable || !errors.Is(err, breaker.ErrOpen) {
		t.Errorf("err = %v, want an Unavailable breaker_open rejection", err)
	}
	if hops := rec.Hops(); len(hops) != 1 || hops[0].Outcome != ReasonBreakerOpen {
		t.Errorf("hops = %+v, want one breaker_open hop", hops)
	}

	// A mode switch starts a new phase: the breaker is closed again.
	live.Switch(live.Load())
	if d.Breaker(deadline.Interactive).State() != breaker.Closed {
		t.Errorf("breaker %v after a switch, want closed", d.Breaker(deadline.Interactive).State())
	}
}

// TestBulkheadFullFailsFast: budgeted calls beyond the dependency's
// bulkhead are rejected at once as ResourceExhausted, and not retried.
func TestBulkheadFullFailsFast(t *testing.T) {
	live := settings(mode.Budgeted)
	d := newTestOutbound(t, live, OutboundOptions{
		Bulkhead: bulkhead.Settings{Capacity: 1}, BudgetedRetries: true, Idempotent: func(string) bool { return true },
	})
	release := make(chan struct{})
	entered := make(chan struct{})
	go func() {
		_ = call(d, context.Background(), func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
			close(entered)
			<-release
			return nil
		})
	}()
	<-entered
	var calls atomic.Int64
	err := call(d, context.Background(), countingInvoker(&calls, nil))
	close(release)
	if status.Code(err) != codes.ResourceExhausted || !errors.Is(err, bulkhead.ErrFull) {
		t.Errorf("err = %v, want ResourceExhausted wrapping bulkhead.ErrFull", err)
	}
	if calls.Load() != 0 {
		t.Errorf("a call beyond the bulkhead reached the dependency")
	}
}

// TestClipRecordsTheHop: a call records its effective timeout, clipped by
// the budget, and its outcome.
func TestClipRecordsTheHop(t *testing.T) {
	live := settings(mode.Budgeted)
	d := newTestOutbound(t, live, OutboundOptions{Cap: time.Second})
	ctx, rec := timing.WithRecorder(context.Background())
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	var calls atomic.Int64
	if err := call(d, ctx, countingInvoker(&calls, nil)); err != nil {
		t.Fatal(err)
	}
	hops := rec.Hops()
	if len(hops) != 1 || hops[0].Name != "shipping" || hops[0].Outcome != "ok" {
		t.Fatalf("hops = %+v", hops)
	}
	if to := hops[0].Timeout; to <= 0 || to > 500*time.Millisecond-3*time.Millisecond {
		t.Errorf("timeout %v, want clipped to at most the budget less the margin", to)
	}
}

// A dependency's breaker window holds a call hung to its cap, and the time
// the bulkhead's slots take to end the calls a breaker opens on, twice
// over; never less than breaker.DefaultWindow.
func TestBreakerWindow(t *testing.T) {
	for _, tc := range []struct {
		cap                time.Duration
		bulkhead, minCalls int
		want               time.Duration
	}{
		{5 * time.Second, 25, 20, 13 * time.Second}, // Drill 76's vendor
		{300 * time.Millisecond, 25, 20, breaker.DefaultWindow},
		{0, 25, 20, breaker.DefaultWindow}, // no cap: nothing to size it by
		{5 * time.Second, 5, 20, 45 * time.Second},
		{5 * time.Second, 0, 0, 13 * time.Second}, // the defaults
	} {
		if got := BreakerWindow(tc.cap, tc.bulkhead, tc.minCalls); got != tc.want {
			t.Errorf("BreakerWindow(%v, %d, %d) = %v, want %v", tc.cap, tc.bulkhead, tc.minCalls, got, tc.want)
		}
	}
}
