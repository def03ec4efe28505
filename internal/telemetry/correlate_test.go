package telemetry

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
)

// With tracing off, the trace id a request carries reaches the next
// service: Outgoing puts it in the call's metadata, and the server's
// Incoming reads it back from there.
func TestTraceIDCrossesAHopWithTracingOff(t *testing.T) {
	var off *Tracing
	sc := newSpanContext()
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), sc)

	out, ok := metadata.FromOutgoingContext(off.Outgoing(ctx))
	if !ok || len(out.Get("traceparent")) != 1 {
		t.Fatalf("outgoing metadata = %v, want one traceparent", out)
	}
	// What the server receives: the caller's metadata and headers of
	// gRPC's own, which the trace context must not depend on.
	in := metadata.Join(out, metadata.Pairs("user-agent", "grpc-go", "x-client-deadline-ms", "900"))
	got := TraceID(off.Incoming(metadata.NewIncomingContext(context.Background(), in)))
	if want := sc.TraceID().String(); got != want {
		t.Errorf("the server's trace id = %q, want the caller's %q", got, want)
	}

	// A request that brought no trace context gets none.
	if id := TraceID(off.Incoming(metadata.NewIncomingContext(context.Background(), metadata.Pairs("user-agent", "grpc-go")))); id != "" {
		t.Errorf("a request without a traceparent has trace id %q", id)
	}
	// Nor does a call made for no request send one.
	if md, _ := metadata.FromOutgoingContext(off.Outgoing(context.Background())); len(md) != 0 {
		t.Errorf("a call without a trace context sends %v", md)
	}
}
