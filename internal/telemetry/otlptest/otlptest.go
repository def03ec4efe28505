// Package otlptest receives traces in tests: an OTLP/gRPC trace receiver
// on loopback that keeps every span it is sent, so a test can point a
// service's exporter at it through the standard OTEL_* variables and look
// at what a real deployment would show in Jaeger.
package otlptest

import (
	"context"
	"encoding/hex"
	"net"
	"sync"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// Span is one received span, flattened for assertions.
type Span struct {
	// Service is the service.name of the span's resource.
	Service                   string
	TraceID, SpanID, ParentID string // hex; ParentID is "" for a root
	Name                      string
	Kind                      tracepb.Span_SpanKind
	// Attrs are the span's attributes: string, bool, int64 or float64.
	Attrs map[string]any
	// Error reports a span whose status is Error.
	Error bool
	// Start and End are Unix nanoseconds.
	Start, End uint64
}

// Int returns the integer attribute key and whether the span has it.
func (s Span) Int(key string) (int64, bool) {
	v, ok := s.Attrs[key].(int64)
	return v, ok
}

// Receiver is a running OTLP/gRPC trace receiver.
type Receiver struct {
	collectorpb.UnimplementedTraceServiceServer

	addr string
	mu   sync.Mutex
	got  []Span
}

// Start starts a receiver on a free loopback port, stopped when the test
// ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("otlptest: listen: %v", err)
	}
	r := &Receiver{addr: ln.Addr().String()}
	srv := grpc.NewServer()
	collectorpb.RegisterTraceServiceServer(srv, r)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return r
}

// Endpoint is the receiver's address as OTEL_EXPORTER_OTLP_ENDPOINT wants
// it; the http:// scheme means plaintext.
func (r *Receiver) Endpoint() string { return "http://" + r.addr }

// Setenv points every exporter the test creates from now on at r: the
// endpoint, plaintext, and batches sent every 50 ms rather than 5 s. It
// uses t.Setenv, so the test must not be parallel.
func (r *Receiver) Setenv(t testing.TB) {
	t.Helper()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.Endpoint())
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	t.Setenv("OTEL_SDK_DISABLED", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "")
}

// Spans returns every span received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.got...)
}

// Export implements the OTLP trace service.
func (r *Receiver) Export(_ context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	var spans []Span
	for _, rs := range req.GetResourceSpans() {
		service, _ := attrs(rs.GetResource().GetAttributes())["service.name"].(string)
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				spans = append(spans, Span{
					Service: service,
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentID: hex.EncodeToString(s.GetParentSpanId()),
					Name:     s.GetName(), Kind: s.GetKind(), Attrs: attrs(s.GetAttributes()),
					Error: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
					Start: s.GetStartTimeUnixNano(), End: s.GetEndTimeUnixNano(),
				})
			}
		}
	}
	r.mu.Lock()
	r.got = append(r.got, spans...)
	r.mu.Unlock()
	return &collectorpb.ExportTraceServiceResponse{}, nil
}

func attrs(kvs []*commonpb.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = v.StringValue
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = v.BoolValue
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = v.IntValue
		case *commonpb.AnyValue_DoubleValue:
			m[kv.GetKey()] = v.DoubleValue
		}
	}
	return m
}
