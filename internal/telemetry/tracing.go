package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc/filters"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc/stats"
)

// The standard variables that decide whether a service exports traces.
// Everything else (OTEL_EXPORTER_OTLP_INSECURE, _HEADERS, _TIMEOUT,
// OTEL_TRACES_SAMPLER, OTEL_BSP_*, OTEL_RESOURCE_ATTRIBUTES ...) is read by
// the OpenTelemetry exporter and SDK themselves.
const (
	envSDKDisabled    = "OTEL_SDK_DISABLED"
	envTracesExporter = "OTEL_TRACES_EXPORTER"
	envEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
)

// Tracing is one service's traces: its own TracerProvider, whose resource
// says service.name=<service>, and the instrumentation built on it.
//
// Each service has its own for the reason each has its own [Metrics]:
// `mercado serve all` runs all five in one process, and a global provider
// would report every span as one service's. Nothing here touches
// OpenTelemetry's global state; the provider is handed to otelgrpc and
// otelhttp explicitly.
//
// When no OTLP endpoint is configured, tracing is off: there is no SDK,
// the instrumentation is not installed at all ([Tracing.GRPCServerHandler]
// and [Tracing.GRPCClientHandler] are nil, [Tracing.HTTPMiddleware] passes
// requests through) and the annotation methods return at once, so a
// service that exports nothing pays nothing for being traceable. A nil
// *Tracing is tracing off.
type Tracing struct {
	service string
	sdk     *sdktrace.TracerProvider // nil when tracing is off
	tracer  trace.Tracer
}

// W3C trace context is what carries a trace from hop to hop.
var propagator propagation.TextMapPropagator = propagation.TraceContext{}

// NewTracing returns the tracing of one service, configured only by the
// standard OTEL_* environment variables. Tracing is on when
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set
// and not empty, unless OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none.
// Spans then go in batches to that endpoint over OTLP/gRPC (an http://
// endpoint, or OTEL_EXPORTER_OTLP_INSECURE=true, means plaintext).
//
// Call Shutdown when the service stops, to send the spans still batched.
func NewTracing(ctx context.Context, service string) (*Tracing, error) {
	if service == "" {
		return nil, errors.New("telemetry: service name is empty")
	}
	t := &Tracing{service: service}
	if !tracingWanted(os.Getenv) {
		return t, nil
	}
	for _, k := range []string{envProtocol, envTracesProtocol} {
		if p := strings.TrimSpace(os.Getenv(k)); p != "" && p != "grpc" {
			return nil, fmt.Errorf("telemetry: %s=%q: Mercado exports traces over OTLP/gRPC only (\"grpc\")", k, p)
		}
	}
	exporter, err := otlptracegrpc.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("telemetry: trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithFromEnv(),
		resource.WithTelemetrySDK(),
		// Last, so that it wins over OTEL_SERVICE_NAME: in one process the
		// five services share one environment, yet each reports as itself.
		resource.WithAttributes(
			attribute.String("service.name", service),
			attribute.String("service.namespace", scopeName),
		),
	)
	if err != nil {
		_ = exporter.Shutdown(ctx)
		return nil, fmt.Errorf("telemetry: trace resource: %w", err)
	}
	// The SDK reads the sampler (OTEL_TRACES_SAMPLER) and the batching
	// (OTEL_BSP_*) from the environment.
	t.sdk = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	t.tracer = t.sdk.Tracer(scopeName)
	return t, nil
}

// tracingWanted applies the rules of NewTracing to the environment.
func tracingWanted(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv(envSDKDisabled)), "true") {
		return false
	}
	if strings.EqualFold(strings.TrimSpace(getenv(envTracesExporter)), "none") {
		return false
	}
	return strings.TrimSpace(getenv(envEndpoint)) != "" || strings.TrimSpace(getenv(envTracesEndpoint)) != ""
}

// Enabled reports whether the service exports traces.
func (t *Tracing) Enabled() bool { return t != nil && t.sdk != nil }

// TracerProvider returns the service's provider: a no-op one when tracing
// is off.
func (t *Tracing) TracerProvider() trace.TracerProvider {
	if !t.Enabled() {
		return tracenoop.NewTracerProvider()
	}
	return t.sdk
}

// Shutdown sends the spans still batched and stops the exporter. It is
// safe to call when tracing is off, and more than once.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	return t.sdk.Shutdown(ctx)
}

// GRPCServerHandler returns the otelgrpc stats handler of the service's
// gRPC server, or nil when tracing is off. Health checks and reflection
// are not traced: a probe every few seconds would bury the requests.
func (t *Tracing) GRPCServerHandler() stats.Handler {
	if !t.Enabled() {
		return nil
	}
	return otelgrpc.NewServerHandler(append(t.grpcOptions(),
		otelgrpc.WithFilter(filters.None(filters.HealthCheck(), filters.ServicePrefix("grpc.reflection."))),
	)...)
}

// GRPCClientHandler returns the otelgrpc stats handler of the service's
// gRPC clients, or nil when tracing is off.
func (t *Tracing) GRPCClientHandler() stats.Handler {
	if !t.Enabled() {
		return nil
	}
	return otelgrpc.NewClientHandler(t.grpcOptions()...)
}

func (t *Tracing) grpcOptions() []otelgrpc.Option {
	return []otelgrpc.Option{
		otelgrpc.WithTracerProvider(t.sdk),
		otelgrpc.WithPropagators(propagator),
		// Mercado's own metrics already time every hop; none from otelgrpc.
		otelgrpc.WithMeterProvider(metricnoop.NewMeterProvider()),
	}
}

// HTTPMiddleware returns middleware that gives each request a server span,
// continuing the caller's trace when it sent a traceparent header. route
// returns the pattern the router matched ("/api/checkout"); it runs after
// the handler, because a router such as chi knows the route only once it
// has routed, and names the span "<method> <route>". When tracing is off
// the middleware passes requests straight through.
func (t *Tracing) HTTPMiddleware(route func(*http.Request) string) func(http.Handler) http.Handler {
	if !t.Enabled() {
		return func(next http.Handler) http.Handler { return next }
	}
	traced := otelhttp.NewMiddleware("http",
		otelhttp.WithTracerProvider(t.sdk),
		otelhttp.WithPropagators(propagator),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
		// Until the route is known, the method alone: never the raw path,
		// whose IDs would make a span name per order.
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }),
	)
	return func(next http.Handler) http.Handler {
		return traced(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r)
			if pattern := route(r); pattern != "" {
				span := trace.SpanFromContext(r.Context())
				span.SetName(r.Method + " " + pattern)
				span.SetAttributes(attribute.String("http.route", pattern))
			}
		}))
	}
}
