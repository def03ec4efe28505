package telemetry

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/stats"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/mercado-lab/mercado/internal/telemetry/otlptest"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

var arrivalForBench = deadline.ArrivalInfo{Method: "http", HasBudget: true, Remaining: 1200 * time.Millisecond}

// The ways a hop can be built, from nothing to exporting every span.
// "off" is what a service without OTEL_EXPORTER_OTLP_ENDPOINT runs: it
// installs what its Tracing hands out, which is nothing. "noop" is what
// it would run if the instrumentation were always installed on a no-op
// provider; it is here to show what "off" saves.
var tracingVariants = []string{"bare", "off", "noop", "on"}

// tracingFor returns the tracing of a variant; nil for the ones that do
// not use a Tracing.
func tracingFor(b *testing.B, variant string) *Tracing {
	b.Helper()
	for _, k := range []string{envEndpoint, envTracesEndpoint, envSDKDisabled, envTracesExporter} {
		b.Setenv(k, "")
	}
	switch variant {
	case "off":
	case "on":
		otlptest.Start(b).Setenv(b)
	default:
		return nil
	}
	tr, err := NewTracing(context.Background(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	return tr
}

func noopGRPC() []otelgrpc.Option {
	return []otelgrpc.Option{
		otelgrpc.WithTracerProvider(tracenoop.NewTracerProvider()),
		otelgrpc.WithMeterProvider(metricnoop.NewMeterProvider()),
	}
}

// pingDesc is a one-method gRPC service, so that the benchmark measures
// the transport and its instrumentation rather than any handler.
var pingDesc = grpc.ServiceDesc{
	ServiceName: "bench.Ping",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Ping",
		Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			in := new(emptypb.Empty)
			if err := dec(in); err != nil {
				return nil, err
			}
			return in, nil
		},
	}},
}

// BenchmarkTracingGRPC times one unary call over loopback, with the
// client and server instrumentation of each variant.
//
//	go test -run '^$' -bench 'Tracing(GRPC|HTTP)' -benchmem -count 5 ./internal/telemetry/
func BenchmarkTracingGRPC(b *testing.B) {
	for _, v := range tracingVariants {
		b.Run(v, func(b *testing.B) {
			tr := tracingFor(b, v)
			var server, client stats.Handler
			switch v {
			case "noop":
				server, client = otelgrpc.NewServerHandler(noopGRPC()...), otelgrpc.NewClientHandler(noopGRPC()...)
			case "off", "on":
				server, client = tr.GRPCServerHandler(), tr.GRPCClientHandler()
			}
			var sopts []grpc.ServerOption
			copts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
			if server != nil {
				sopts = append(sopts, grpc.StatsHandler(server))
			}
			if client != nil {
				copts = append(copts, grpc.WithStatsHandler(client))
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			srv := grpc.NewServer(sopts...)
			srv.RegisterService(&pingDesc, struct{}{})
			go func() { _ = srv.Serve(ln) }()
			b.Cleanup(srv.Stop)
			cc, err := grpc.NewClient(ln.Addr().String(), copts...)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = cc.Close() })
			ctx := context.Background()
			in, out := &emptypb.Empty{}, &emptypb.Empty{}
			if err := cc.Invoke(ctx, "/bench.Ping/Ping", in, out); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := cc.Invoke(ctx, "/bench.Ping/Ping", in, out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTracingHTTP times one request through the gateway's tracing
// middleware of each variant, in memory: the middleware is all there is
// to measure.
func BenchmarkTracingHTTP(b *testing.B) {
	route := func(*http.Request) string { return "/api/checkout" }
	for _, v := range tracingVariants {
		b.Run(v, func(b *testing.B) {
			tr := tracingFor(b, v)
			var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tr.Arrival(r.Context(), arrivalForBench)
				w.WriteHeader(http.StatusCreated)
			})
			switch v {
			case "noop":
				h = otelhttp.NewMiddleware("http",
					otelhttp.WithTracerProvider(tracenoop.NewTracerProvider()),
					otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()))(h)
			case "off", "on":
				h = tr.HTTPMiddleware(route)(h)
			}
			req := httptest.NewRequest(http.MethodPost, "/api/checkout", nil)
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, req)
			}
		})
	}
}
