package telemetry

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/mercado-lab/mercado/internal/telemetry/otlptest"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

func TestTracingWanted(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"nothing set", nil, false},
		{"empty endpoint, as compose passes it", map[string]string{envEndpoint: ""}, false},
		{"blank endpoint", map[string]string{envEndpoint: "  "}, false},
		{"endpoint", map[string]string{envEndpoint: "http://jaeger:4317"}, true},
		{"traces endpoint", map[string]string{envTracesEndpoint: "http://jaeger:4317"}, true},
		{"SDK disabled", map[string]string{envEndpoint: "http://jaeger:4317", envSDKDisabled: "TRUE"}, false},
		{"SDK not disabled", map[string]string{envEndpoint: "http://jaeger:4317", envSDKDisabled: "false"}, true},
		{"exporter none", map[string]string{envEndpoint: "http://jaeger:4317", envTracesExporter: "none"}, false},
		{"exporter otlp", map[string]string{envEndpoint: "http://jaeger:4317", envTracesExporter: "otlp"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tracingWanted(func(k string) string { return tc.env[k] }); got != tc.want {
				t.Errorf("tracingWanted = %v, want %v", got, tc.want)
			}
		})
	}
}

// clearTracingEnv unsets what turns tracing on, whatever the shell running
// the tests has set.
func clearTracingEnv(t *testing.T) {
	for _, k := range []string{envEndpoint, envTracesEndpoint, envSDKDisabled, envTracesExporter, envProtocol, envTracesProtocol} {
		t.Setenv(k, "")
	}
}

type passHandler struct{ served int }

func (h *passHandler) ServeHTTP(http.ResponseWriter, *http.Request) { h.served++ }

// TestTracingOffInstallsNothing: with no endpoint there is no SDK and no
// instrumentation to pay for, and every method is safe, on a nil
// *Tracing too.
func TestTracingOffInstallsNothing(t *testing.T) {
	clearTracingEnv(t)
	off, err := NewTracing(context.Background(), "orders")
	if err != nil {
		t.Fatal(err)
	}
	for name, tr := range map[string]*Tracing{"no endpoint": off, "nil": nil} {
		t.Run(name, func(t *testing.T) {
			if tr.Enabled() {
				t.Fatal("Enabled with no endpoint")
			}
			if tr.GRPCServerHandler() != nil || tr.GRPCClientHandler() != nil {
				t.Error("stats handlers installed with tracing off")
			}
			h := &passHandler{}
			if got := tr.HTTPMiddleware(func(*http.Request) string { return "/x" })(h); got != http.Handler(h) {
				t.Error("HTTP middleware wraps the handler with tracing off")
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			callCtx, span := tr.StartCall(ctx, "payments", 1)
			if callCtx != ctx || span.IsRecording() {
				t.Error("StartCall started a span with tracing off")
			}
			tr.CallDecided(callCtx, time.Second, deadline.CallInfo{})
			tr.CallEnded(callCtx, "error", errors.New("boom"))
			tr.Arrival(ctx, deadline.ArrivalInfo{HasBudget: true, Remaining: time.Second})
			tr.Late(ctx, time.Second)
			span.End()
			if tr.TracerProvider() == nil {
				t.Error("no provider")
			}
			if err := tr.Shutdown(context.Background()); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		})
	}
}

// TestTracingOffAllocatesNothing: what every request runs with tracing
// off — the hooks' annotations and a call's span — allocates nothing.
func TestTracingOffAllocatesNothing(t *testing.T) {
	clearTracingEnv(t)
	off, err := NewTracing(context.Background(), "orders")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	call := deadline.CallInfo{Decision: deadline.Decision{HasBudget: true, Remaining: time.Second, Timeout: 300 * time.Millisecond}}
	arrival := deadline.ArrivalInfo{HasBudget: true, Remaining: time.Second}
	allocs := testing.AllocsPerRun(100, func() {
		off.Arrival(ctx, arrival)
		callCtx, span := off.StartCall(ctx, "payments", 1)
		off.CallDecided(callCtx, 300*time.Millisecond, call)
		off.CallEnded(callCtx, "timeout", context.DeadlineExceeded)
		span.End()
		off.Late(ctx, time.Millisecond)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per request with tracing off, want 0", allocs)
	}
}

func TestNewTracingRejects(t *testing.T) {
	clearTracingEnv(t)
	if _, err := NewTracing(context.Background(), ""); err == nil {
		t.Error("no error for an empty service name")
	}
	t.Setenv(envEndpoint, "http://127.0.0.1:4318")
	t.Setenv(envProtocol, "http/protobuf")
	if _, err := NewTracing(context.Background(), "orders"); err == nil || !strings.Contains(err.Error(), "OTLP/gRPC") {
		t.Errorf("err = %v, want one saying Mercado speaks OTLP/gRPC only", err)
	}
}

// startTraced starts tracing for service, exporting to a fresh receiver.
func startTraced(t *testing.T, service string) (*Tracing, *otlptest.Receiver) {
	t.Helper()
	clearTracingEnv(t)
	rcv := otlptest.Start(t)
	rcv.Setenv(t)
	tr, err := NewTracing(context.Background(), service)
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Enabled() {
		t.Fatal("tracing off with an endpoint set")
	}
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	return tr, rcv
}

func byName(spans []otlptest.Span) map[string]otlptest.Span {
	m := map[string]otlptest.Span{}
	for _, s := range spans {
		m[s.Name] = s
	}
	return m
}

// TestCallSpans: each attempt at a call is a span named caller→hop with
// the deadline it had, the timeout it got and how it ended.
func TestCallSpans(t *testing.T) {
	tr, rcv := startTraced(t, "orders")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	callCtx, span := tr.StartCall(ctx, "shipping", 2)
	tr.CallDecided(callCtx, 300*time.Millisecond, deadline.CallInfo{
		Decision: deadline.Decision{HasBudget: true, Remaining: 163 * time.Millisecond, Timeout: 160 * time.Millisecond, ClippedByBudget: true},
		Outcome:  deadline.OutcomeOK,
	})
	tr.CallEnded(callCtx, "ok", nil)
	span.End()

	callCtx, span = tr.StartCall(ctx, "payments", 1)
	tr.CallDecided(callCtx, 800*time.Millisecond, deadline.CallInfo{
		Decision: deadline.Decision{HasBudget: true, Remaining: 10 * time.Millisecond, Timeout: 800 * time.Millisecond},
		Outcome:  deadline.OutcomeSkipped,
	})
	tr.CallEnded(callCtx, "skipped", errors.New("insufficient budget"))
	span.End()

	callCtx, span = tr.StartCall(ctx, "catalog", 1)
	tr.CallEnded(callCtx, "breaker_open", nil)
	span.End()

	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	spans := byName(rcv.Spans())

	ship, ok := spans["orders→shipping"]
	if !ok {
		t.Fatalf("no orders→shipping span in %v", rcv.Spans())
	}
	if ship.Service != "orders" {
		t.Errorf("service.name = %q, want orders", ship.Service)
	}
	for k, want := range map[string]any{
		"deadline.remaining_ms": int64(163), "deadline.effective_timeout_ms": int64(160), "deadline.cap_ms": int64(300),
		"deadline.clipped": true, "mercado.outcome": "ok", "mercado.attempt": int64(2),
	} {
		if got := ship.Attrs[k]; got != want {
			t.Errorf("shipping %s = %v, want %v", k, got, want)
		}
	}
	if ship.Error {
		t.Error("an ok call marked as an error")
	}

	pay := spans["orders→payments"]
	if _, ok := pay.Attrs["deadline.effective_timeout_ms"]; ok {
		t.Error("a skipped call has an effective timeout")
	}
	if pay.Attrs["mercado.outcome"] != "skipped" || !pay.Error {
		t.Errorf("payments: %v error=%v, want a skipped error span", pay.Attrs, pay.Error)
	}

	cat := spans["orders→catalog"]
	if rem, ok := cat.Int("deadline.remaining_ms"); !ok || rem <= 0 || rem > 10_000 {
		t.Errorf("a call refused before its decision keeps the remaining it started with, got %v", cat.Attrs)
	}
	if cat.Attrs["mercado.outcome"] != "breaker_open" || !cat.Error {
		t.Errorf("catalog: %v error=%v, want a breaker_open error span", cat.Attrs, cat.Error)
	}
}

// TestHTTPSpanNamedByRoute: the span continues the caller's trace, is
// named after the route the router matched, and carries the budget the
// request arrived with.
func TestHTTPSpanNamedByRoute(t *testing.T) {
	tr, rcv := startTraced(t, "gateway")
	h := tr.HTTPMiddleware(func(*http.Request) string { return "/api/orders/{id}" })(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr.Arrival(r.Context(), deadline.ArrivalInfo{Method: "http", HasBudget: true, Remaining: 1200 * time.Millisecond})
		tr.Late(r.Context(), 40*time.Millisecond)
	}))
	req := httptest.NewRequest(http.MethodGet, "/api/orders/o-123", nil)
	const parent = "0af7651916cd43dd8448eb211c80319c"
	req.Header.Set("traceparent", "00-"+parent+"-b7ad6b7169203331-01")
	h.ServeHTTP(httptest.NewRecorder(), req)
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	if len(spans) != 1 {
		t.Fatalf("got %d spans, want 1: %v", len(spans), spans)
	}
	s := spans[0]
	if s.Name != "GET /api/orders/{id}" || s.Attrs["http.route"] != "/api/orders/{id}" {
		t.Errorf("span %q route %v, want GET /api/orders/{id}", s.Name, s.Attrs["http.route"])
	}
	if s.TraceID != parent || s.ParentID != "b7ad6b7169203331" {
		t.Errorf("trace %s parent %s: the caller's trace context was not continued", s.TraceID, s.ParentID)
	}
	if rem, _ := s.Int("deadline.remaining_ms"); rem != 1200 {
		t.Errorf("deadline.remaining_ms = %d, want 1200", rem)
	}
	if late, _ := s.Int("deadline.late_ms"); late != 40 {
		t.Errorf("deadline.late_ms = %d, want 40", late)
	}
}

// TestGRPCHandlersSkipHealthChecks: a probe's health check is traced on
// the client that made it, never on the server, where probes every few
// seconds would bury the requests.
func TestGRPCHandlersSkipHealthChecks(t *testing.T) {
	tr, rcv := startTraced(t, "catalog")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.StatsHandler(tr.GRPCServerHandler()))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	cc, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithStatsHandler(tr.GRPCClientHandler()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	if _, err := healthpb.NewHealthClient(cc).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var client, server int
	for _, s := range rcv.Spans() {
		switch s.Kind.String() {
		case "SPAN_KIND_CLIENT":
			client++
		case "SPAN_KIND_SERVER":
			server++
		}
	}
	if client != 1 || server != 0 {
		t.Errorf("client spans %d, server spans %d; want 1 and 0", client, server)
	}
}

// TestSpanSaysTheDeadlineWasClamped: a server that cut a request's
// deadline to its class's maximum says so on the request's span, with the
// class.
func TestSpanSaysTheDeadlineWasClamped(t *testing.T) {
	tr, rcv := startTraced(t, "catalog")
	h := tr.HTTPMiddleware(func(*http.Request) string { return "/x" })(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr.Arrival(r.Context(), deadline.ArrivalInfo{Method: "/x", Class: deadline.Batch, HasBudget: true,
			Remaining: time.Hour, Clamped: true, ClampedTo: 30 * time.Minute})
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/x", nil))
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	if len(spans) != 1 {
		t.Fatalf("got %d spans, want 1", len(spans))
	}
	s := spans[0]
	if to, _ := s.Int("deadline.clamped_to_ms"); to != 1_800_000 || s.Attrs["mercado.class"] != "batch" {
		t.Errorf("span attributes %v, want deadline.clamped_to_ms 1800000 and mercado.class batch", s.Attrs)
	}
}
