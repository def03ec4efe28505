package shop_test

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/internal/telemetry/otlptest"
	"github.com/mercado-lab/mercado/lab/shop"
)

// traceCheckout runs one checkout through a shop in mode m whose services
// export their spans to an OTLP receiver of the test's own, stops the
// shop (which sends the last spans) and returns the spans of the
// checkout's trace, found from the gateway's span for the route.
func traceCheckout(t *testing.T, m mode.Mode) []otlptest.Span {
	t.Helper()
	return traceCheckoutWith(t, m, func(*shop.Config) {})
}

// traceCheckoutWith is traceCheckout on a shop whose configuration change
// has changed.
func traceCheckoutWith(t *testing.T, m mode.Mode, change func(*shop.Config)) []otlptest.Span {
	t.Helper()
	rcv := otlptest.Start(t)
	rcv.Setenv(t)
	cfg := shop.EphemeralConfig()
	cfg.Shared.Mode, cfg.Shared.Margin, cfg.Shared.Floor = m, serve.DefaultMargin, serve.DefaultFloor
	change(&cfg)
	s, err := shop.Start(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	resp, body, _ := checkout(t, s.GatewayURL(), "")
	if err := s.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("checkout: %d %s", resp.StatusCode, body)
	}

	all := rcv.Spans()
	var traceID string
	for _, sp := range all {
		if sp.Service == "gateway" && sp.Kind == tracepb.Span_SPAN_KIND_SERVER && sp.Name == "POST /api/checkout" {
			traceID = sp.TraceID
		}
	}
	if traceID == "" {
		t.Fatalf("no gateway span named POST /api/checkout among %d spans", len(all))
	}
	var spans []otlptest.Span
	for _, sp := range all {
		if sp.TraceID == traceID {
			spans = append(spans, sp)
		} else if sp.Kind == tracepb.Span_SPAN_KIND_SERVER {
			t.Errorf("%s served %q in another trace: the trace context was lost", sp.Service, sp.Name)
		}
	}
	services := map[string]bool{}
	for _, sp := range spans {
		services[sp.Service] = true
	}
	for _, name := range []string{"gateway", "orders", "catalog", "payments", "shipping"} {
		if !services[name] {
			t.Errorf("no span of %s in the checkout's trace", name)
		}
	}
	return spans
}

// leafMethods are the four calls of the checkout chain, as the leaves'
// server spans are named.
var leafMethods = []string{
	"mercado.catalog.v1.CatalogService/ReserveStock",
	"mercado.payments.v1.PaymentsService/ScreenOrder",
	"mercado.payments.v1.PaymentsService/CreateCharge",
	"mercado.shipping.v1.ShippingService/CreateShipment",
}

// annotatedChain walks from a span up to the root of its trace and returns
// the spans on the way that carry deadline.remaining_ms, leaf first.
func annotatedChain(spans []otlptest.Span, from otlptest.Span) []otlptest.Span {
	byID := map[string]otlptest.Span{}
	for _, sp := range spans {
		byID[sp.SpanID] = sp
	}
	var chain []otlptest.Span
	for sp, ok := from, true; ok; sp, ok = byID[sp.ParentID] {
		if _, has := sp.Int("deadline.remaining_ms"); has {
			chain = append(chain, sp)
		}
	}
	return chain
}

// callOf returns the call span in orders that a leaf's request came from.
func callOf(spans []otlptest.Span, leaf otlptest.Span) (otlptest.Span, bool) {
	byID := map[string]otlptest.Span{}
	for _, sp := range spans {
		byID[sp.SpanID] = sp
	}
	for sp, ok := byID[leaf.ParentID]; ok; sp, ok = byID[sp.ParentID] {
		if sp.Service == "orders" && sp.Kind == tracepb.Span_SPAN_KIND_INTERNAL {
			return sp, true
		}
	}
	return otlptest.Span{}, false
}

func describe(chain []otlptest.Span) string {
	var parts []string
	for _, sp := range slices.Backward(chain) {
		rem, _ := sp.Int("deadline.remaining_ms")
		parts = append(parts, sp.Service+" "+sp.Name+"="+strconv.FormatInt(rem, 10))
	}
	return strings.Join(parts, " → ")
}

// TestCheckoutTraceBudgeted: one checkout is one trace across all five
// services, and in budgeted mode the deadline visibly shrinks along every
// path from the edge to a leaf: gateway ingress → gateway's call to
// orders → orders ingress → orders' call → the leaf's ingress. It never
// grows, and it drops at every network hop, by at least the margin each
// call keeps back; each call's timeout is min(cap, remaining − margin).
func TestCheckoutTraceBudgeted(t *testing.T) {
	spans := traceCheckout(t, mode.Budgeted)
	marginMs := serve.DefaultMargin.Milliseconds()
	leaves := 0
	for _, sp := range spans {
		if sp.Kind != tracepb.Span_SPAN_KIND_SERVER || !slices.ContainsFunc(leafMethods, func(m string) bool { return sp.Name == m }) {
			continue
		}
		leaves++
		chain := annotatedChain(spans, sp)
		t.Logf("remaining ms: %s", describe(chain))
		var svcs []string
		for _, c := range slices.Backward(chain) {
			svcs = append(svcs, c.Service)
		}
		if got, want := strings.Join(svcs, ","), "gateway,gateway,orders,orders,"+sp.Service; got != want {
			t.Errorf("%s: deadline annotated on %s, want %s (%s)", sp.Name, got, want, describe(chain))
			continue
		}
		for i := 0; i+1 < len(chain); i++ {
			child, parent := chain[i], chain[i+1]
			c, _ := child.Int("deadline.remaining_ms")
			p, _ := parent.Int("deadline.remaining_ms")
			if c > p || (child.Service != parent.Service && c >= p) {
				t.Errorf("remaining grows or stands still across a hop: %s", describe(chain))
			}
		}
		for _, c := range chain {
			if c.Kind != tracepb.Span_SPAN_KIND_INTERNAL {
				continue
			}
			rem, _ := c.Int("deadline.remaining_ms")
			eff, _ := c.Int("deadline.effective_timeout_ms")
			want := rem - marginMs
			if cp, ok := c.Int("deadline.cap_ms"); ok && cp < want {
				want = cp
			}
			if eff != want || c.Attrs["mercado.outcome"] != "ok" {
				t.Errorf("%s: timeout %d outcome %v, want min(cap, %d − %d) = %d, ok", c.Name, eff, c.Attrs["mercado.outcome"], rem, marginMs, want)
			}
		}
	}
	if leaves != 4 {
		t.Errorf("%d leaf calls in the trace, want 4 (reserve, screen, charge, ship)", leaves)
	}
}

// TestCheckoutTraceNaive: in naive mode the client's budget stops at the
// edge. Orders arrives with no deadline at all, each of its calls gets its
// own fixed cap as its timeout, and a leaf's deadline is that cap, blind
// to what the client has left.
func TestCheckoutTraceNaive(t *testing.T) {
	spans := traceCheckout(t, mode.Naive)
	calls := 0
	for _, sp := range spans {
		switch {
		case sp.Service == "orders" && sp.Kind == tracepb.Span_SPAN_KIND_SERVER:
			if _, has := sp.Attrs["deadline.remaining_ms"]; has {
				t.Errorf("orders arrived with a deadline in naive mode: %v", sp.Attrs)
			}
		case sp.Service == "orders" && sp.Kind == tracepb.Span_SPAN_KIND_INTERNAL:
			calls++
			eff, _ := sp.Int("deadline.effective_timeout_ms")
			if _, has := sp.Attrs["deadline.remaining_ms"]; has || eff == 0 || sp.Attrs["deadline.cap_ms"] != eff || sp.Attrs["deadline.clipped"] != false {
				t.Errorf("%s: %v, want the cap as the timeout and no remaining budget", sp.Name, sp.Attrs)
			}
		case sp.Kind == tracepb.Span_SPAN_KIND_SERVER && slices.Contains(leafMethods, sp.Name):
			call, ok := callOf(spans, sp)
			if !ok {
				t.Errorf("%s: no call span from orders above it", sp.Name)
				continue
			}
			rem, _ := sp.Int("deadline.remaining_ms")
			if cp, _ := call.Int("deadline.cap_ms"); rem <= 0 || rem >= cp {
				t.Errorf("%s arrived with %d ms, want just under orders' cap %d ms", sp.Name, rem, cp)
			}
		}
	}
	// Naive calls every dependency in line: the chain's four, then the
	// delivery estimate and the audit write.
	if calls != 6 {
		t.Errorf("%d calls from orders, want 6 (reserve, screen, charge, ship, estimate, audit)", calls)
	}
}

// TestCheckoutTraceFanout: the trace shows the fan-out. With catalog and
// the fraud screen each taking 60 ms, orders' two calls overlap in
// budgeted mode (parallel), and in naive mode (sequential) the screen's
// starts after the reservation's has ended.
func TestCheckoutTraceFanout(t *testing.T) {
	const took = 60 * time.Millisecond
	for _, m := range []mode.Mode{mode.Budgeted, mode.Naive} {
		t.Run(string(m), func(t *testing.T) {
			spans := traceCheckoutWith(t, m, func(c *shop.Config) {
				c.Catalog.Faults = faults.Set{sim.CatalogReserveStock: {Latency: took}}
				c.Payments.Faults = faults.Set{sim.PaymentsScreenOrder: {Latency: took}}
			})
			calls := map[string]otlptest.Span{}
			for _, sp := range spans {
				if sp.Kind != tracepb.Span_SPAN_KIND_SERVER || !slices.Contains(leafMethods[:2], sp.Name) {
					continue
				}
				call, ok := callOf(spans, sp)
				if !ok {
					t.Fatalf("%s: no call span from orders above it", sp.Name)
				}
				calls[sp.Name] = call
			}
			reserve, okR := calls[leafMethods[0]]
			screen, okS := calls[leafMethods[1]]
			if !okR || !okS {
				t.Fatalf("calls from orders: %v, want the reservation's and the screen's", calls)
			}
			overlap := time.Duration(int64(min(reserve.End, screen.End)) - int64(max(reserve.Start, screen.Start)))
			t.Logf("reserve [0, %v], screen [%v, %v]: overlap %v", time.Duration(reserve.End-reserve.Start),
				time.Duration(int64(screen.Start)-int64(reserve.Start)), time.Duration(int64(screen.End)-int64(reserve.Start)), overlap)
			switch m {
			case mode.Budgeted:
				if overlap < took/2 {
					t.Errorf("the two calls overlap by %v, want most of their %v", overlap, took)
				}
			case mode.Naive:
				if screen.Start < reserve.End {
					t.Errorf("the screen started %v before the reservation ended, want after", time.Duration(reserve.End-screen.Start))
				}
			}
		})
	}
}

// BenchmarkCheckoutTracing is BenchmarkCheckout's memory run with tracing
// off (no OTEL endpoint: what BenchmarkCheckout measures too) and on,
// every span of every service exported to a receiver in the test.
//
//	go test -run '^$' -bench CheckoutTracing -benchmem -count 5 ./lab/shop/
func BenchmarkCheckoutTracing(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := map[bool]string{false: "off", true: "on"}[on]
		b.Run(name, func(b *testing.B) {
			for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER"} {
				b.Setenv(k, "")
			}
			if on {
				otlptest.Start(b).Setenv(b)
			}
			b.ReportAllocs()
			benchmarkCheckout(b, shop.EphemeralConfig())
		})
	}
}
