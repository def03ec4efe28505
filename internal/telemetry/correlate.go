package telemetry

import (
	"context"
	"crypto/rand"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
)

// Log lines of one request share its trace id (TraceID) whether or not
// the shop exports traces. With tracing on, the spans carry it from hop
// to hop; with it off, nothing would, so the three steps below carry the
// W3C trace context themselves: the edge continues the client's
// traceparent or starts a trace of its own, every call sends it on in
// metadata, and every server reads it. With tracing on they do nothing.

// TraceID is the id of the trace ctx belongs to, "" when it has none.
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.HasTraceID() {
		return ""
	}
	return sc.TraceID().String()
}

// CorrelateHTTP gives each request at the edge a trace context when
// tracing is off: the client's traceparent, or a new trace.
func (t *Tracing) CorrelateHTTP(next http.Handler) http.Handler {
	if t.Enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		if !trace.SpanContextFromContext(ctx).IsValid() {
			ctx = trace.ContextWithRemoteSpanContext(ctx, newSpanContext())
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// Incoming is ctx with the caller's trace context, read from the
// request's metadata, when tracing is off (a step of
// resilience.ServerChain).
func (t *Tracing) Incoming(ctx context.Context) context.Context {
	if t.Enabled() {
		return ctx
	}
	return propagator.Extract(ctx, incomingCarrier{ctx})
}

// Outgoing is ctx with its trace context added to the outgoing metadata
// when tracing is off, for a call to send on.
func (t *Tracing) Outgoing(ctx context.Context) context.Context {
	if t.Enabled() || !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	var kv outgoingCarrier
	propagator.Inject(ctx, &kv)
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

// newSpanContext is the context of a trace the edge starts, not sampled:
// with tracing off no span is recorded, the ids only correlate.
func newSpanContext() trace.SpanContext {
	var tid trace.TraceID
	var sid trace.SpanID
	_, _ = rand.Read(tid[:])
	_, _ = rand.Read(sid[:])
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, Remote: true})
}

// incomingCarrier reads the trace context from a request's incoming
// metadata one key at a time: the propagator asks only for its own keys
// (traceparent, tracestate), so the rest of the metadata is not copied.
type incomingCarrier struct{ ctx context.Context }

func (c incomingCarrier) Get(key string) string {
	if vs := metadata.ValueFromIncomingContext(c.ctx, key); len(vs) > 0 {
		return vs[0]
	}
	return ""
}

func (c incomingCarrier) Set(string, string) {}

func (c incomingCarrier) Keys() []string { return propagator.Fields() }

// outgoingCarrier collects the trace context as the key, value pairs
// metadata.AppendToOutgoingContext takes.
type outgoingCarrier []string

func (c *outgoingCarrier) Get(string) string { return "" }

func (c *outgoingCarrier) Set(key, value string) { *c = append(*c, key, value) }

func (c *outgoingCarrier) Keys() []string {
	var keys []string
	for i := 0; i < len(*c); i += 2 {
		keys = append(keys, (*c)[i])
	}
	return keys
}
