package resilience

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/telemetry"
	"github.com/mercado-lab/mercado/internal/telemetry/otlptest"
	"github.com/mercado-lab/mercado/pkg/resilience/breaker"
)

// tracedOutbound returns a policy for shipping, called from orders, that
// traces to a receiver of its own; flush sends the spans and returns what
// the receiver got.
func tracedOutbound(t *testing.T, live *mode.Live, o OutboundOptions) (*Outbound, func() []otlptest.Span) {
	t.Helper()
	rcv := otlptest.Start(t)
	rcv.Setenv(t)
	tr, err := telemetry.NewTracing(context.Background(), "orders")
	if err != nil {
		t.Fatal(err)
	}
	o.Tracing = tr
	return newTestOutbound(t, live, o), func() []otlptest.Span {
		if err := tr.Shutdown(context.Background()); err != nil {
			t.Fatalf("flushing spans: %v", err)
		}
		return rcv.Spans()
	}
}

// TestOutboundSpansBudgeted: in budgeted mode each attempt is a span that
// shows the remaining budget, the timeout clipped to it (remaining −
// margin, here below the cap) and the outcome; the gRPC call runs inside
// it; a call with too little budget left is a span too, though nothing is
// sent; and every retry is a span of its own.
func TestOutboundSpansBudgeted(t *testing.T) {
	live := settings(mode.Budgeted)
	d, flush := tracedOutbound(t, live, OutboundOptions{
		Cap: 300 * time.Millisecond, BudgetedRetries: true, Idempotent: func(string) bool { return true },
	})

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var inside trace.SpanID
	if err := call(d, ctx, func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
		inside = trace.SpanFromContext(ctx).SpanContext().SpanID()
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	short, cancelShort := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancelShort()
	var calls atomic.Int64
	_ = call(d, short, countingInvoker(&calls, nil))
	if calls.Load() != 0 {
		t.Fatal("a call with less than the floor left was made")
	}

	long, cancelLong := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelLong()
	_ = call(d, long, countingInvoker(&calls, status.Error(codes.Unavailable, "down")))

	var ok, skipped otlptest.Span
	var retried []otlptest.Span
	for _, s := range flush() {
		if s.Name != "orders→shipping" || s.Service != "orders" {
			t.Errorf("span %q of %q, want orders→shipping of orders", s.Name, s.Service)
		}
		switch s.Attrs["mercado.outcome"] {
		case "ok":
			ok = s
		case "skipped":
			skipped = s
		case "error":
			retried = append(retried, s)
		}
	}

	if ok.SpanID != inside.String() {
		t.Errorf("the call ran in span %s, not in its attempt's span %s", inside, ok.SpanID)
	}
	rem, _ := ok.Int("deadline.remaining_ms")
	eff, _ := ok.Int("deadline.effective_timeout_ms")
	if rem <= 0 || rem > 200 || rem-eff != 3 || ok.Attrs["deadline.clipped"] != true || ok.Attrs["deadline.cap_ms"] != int64(300) {
		t.Errorf("ok call %v: want remaining ≤ 200, effective = remaining − 3 ms margin, clipped, cap 300", ok.Attrs)
	}

	if _, has := skipped.Attrs["deadline.effective_timeout_ms"]; has || !skipped.Error {
		t.Errorf("skipped call %v error=%v: want an error span with no timeout", skipped.Attrs, skipped.Error)
	}
	if rem, has := skipped.Int("deadline.remaining_ms"); !has || rem > 10 {
		t.Errorf("skipped call remaining %d (%v), want at most 10", rem, has)
	}

	if len(retried) != 3 {
		t.Fatalf("%d failed attempts, want 3", len(retried))
	}
	seen := map[int64]bool{}
	for _, s := range retried {
		n, _ := s.Int("mercado.attempt")
		seen[n] = true
	}
	if !seen[1] || !seen[2] || !seen[3] {
		t.Errorf("attempts %v, want 1, 2 and 3", seen)
	}
}

// TestOutboundSpanBreakerOpen: a call the open breaker refuses never
// leaves, yet shows as a span: outcome breaker_open, with the budget it
// had.
func TestOutboundSpanBreakerOpen(t *testing.T) {
	live := settings(mode.Budgeted)
	d, flush := tracedOutbound(t, live, OutboundOptions{Breaker: breaker.Settings{MinCalls: 4, OpenFor: time.Minute}})
	var calls atomic.Int64
	for range 4 {
		_ = call(d, context.Background(), countingInvoker(&calls, status.Error(codes.Internal, "boom")))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = call(d, ctx, countingInvoker(&calls, nil))
	var open []otlptest.Span
	for _, s := range flush() {
		if s.Attrs["mercado.outcome"] == ReasonBreakerOpen {
			open = append(open, s)
		}
	}
	if len(open) != 1 || !open[0].Error {
		t.Fatalf("breaker_open spans %v, want one error span", open)
	}
	if _, has := open[0].Int("deadline.remaining_ms"); !has {
		t.Errorf("breaker_open span %v has no remaining budget", open[0].Attrs)
	}
}

// TestOutboundSpansNaive: a blind call shows its fixed cap as its timeout
// and no remaining budget, since none was propagated.
func TestOutboundSpansNaive(t *testing.T) {
	live := settings(mode.Naive)
	d, flush := tracedOutbound(t, live, OutboundOptions{Cap: 300 * time.Millisecond})
	var calls atomic.Int64
	if err := call(d, context.Background(), countingInvoker(&calls, nil)); err != nil {
		t.Fatal(err)
	}
	spans := flush()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	if _, has := s.Attrs["deadline.remaining_ms"]; has {
		t.Errorf("naive call has a remaining budget: %v", s.Attrs)
	}
	if s.Attrs["deadline.effective_timeout_ms"] != int64(300) || s.Attrs["deadline.clipped"] != false || s.Attrs["mercado.outcome"] != "ok" {
		t.Errorf("naive call %v: want timeout 300 = the cap, not clipped, ok", s.Attrs)
	}
}
