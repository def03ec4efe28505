package deadline_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/mercado-lab/mercado/pkg/deadline"
)

// The first four benchmarks measure the library's own per-call work,
// without gRPC: the interceptors are called directly, with an invoker or a
// handler that does nothing. The loopback benchmarks make real calls over
// 127.0.0.1, without and with both interceptors. docs/performance.md has
// the figures, the targets and the commands that measured them.

var benchPolicy = deadline.Policy{Margin: 20 * time.Millisecond, Floor: 50 * time.Millisecond, Admission: true}

// benchCtx is a request context as a hop sees it: an hour of budget, so
// the benchmark never runs out, and the client's own deadline.
func benchCtx(b *testing.B) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	b.Cleanup(cancel)
	return deadline.WithClientDeadline(ctx, time.Now().Add(time.Hour))
}

func BenchmarkPolicyDecide(b *testing.B) {
	ctx := benchCtx(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := benchPolicy.Decide(ctx, 300*time.Millisecond); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPolicyCall(b *testing.B) {
	ctx := benchCtx(b)
	b.ReportAllocs()
	for b.Loop() {
		_, cancel, _, err := benchPolicy.Call(ctx, 300*time.Millisecond)
		if err != nil {
			b.Fatal(err)
		}
		cancel()
	}
}

func BenchmarkUnaryClientInterceptor(b *testing.B) {
	intercept := deadline.UnaryClientInterceptor(deadline.ClientOptions{
		Policy: func(context.Context) deadline.Policy { return benchPolicy },
		Cap:    func(string) time.Duration { return 300 * time.Millisecond },
		Hooks:  deadline.Hooks{OnCall: func(context.Context, deadline.CallInfo) {}},
	})
	noop := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	ctx := benchCtx(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := intercept(ctx, checkMethod, nil, nil, nil, noop); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnaryServerInterceptor(b *testing.B) {
	intercept := deadline.UnaryServerInterceptor(deadline.ServerOptions{
		Policy: func(context.Context) deadline.Policy { return benchPolicy },
		Hooks: deadline.Hooks{
			OnArrival: func(context.Context, deadline.ArrivalInfo) {},
			OnLate:    func(context.Context, deadline.LateInfo) {},
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	b.Cleanup(cancel)
	ctx = metadata.NewIncomingContext(ctx, metadata.Pairs("x-client-deadline-ms", "900"))
	info := &grpc.UnaryServerInfo{FullMethod: checkMethod}
	noop := func(context.Context, any) (any, error) { return nil, nil }
	b.ReportAllocs()
	for b.Loop() {
		if _, err := intercept(ctx, nil, info, noop); err != nil {
			b.Fatal(err)
		}
	}
}

// loopbackInterceptors are both of the library's interceptors, set up as
// a budgeted service sets them up, without hooks.
func loopbackInterceptors() ([]grpc.UnaryServerInterceptor, []grpc.UnaryClientInterceptor) {
	policy := func(context.Context) deadline.Policy { return benchPolicy }
	server := deadline.UnaryServerInterceptor(deadline.ServerOptions{Policy: policy})
	client := deadline.UnaryClientInterceptor(deadline.ClientOptions{
		Policy: policy,
		Cap:    func(string) time.Duration { return 300 * time.Millisecond },
	})
	return []grpc.UnaryServerInterceptor{server}, []grpc.UnaryClientInterceptor{client}
}

// BenchmarkLoopbackCall puts the figures above in proportion: one real
// unary call over loopback, without and with both interceptors.
func BenchmarkLoopbackCall(b *testing.B) {
	server, client := loopbackInterceptors()
	for _, bb := range []struct {
		name   string
		server []grpc.UnaryServerInterceptor
		client []grpc.UnaryClientInterceptor
	}{
		{name: "plain"},
		{name: "interceptors", server: server, client: client},
	} {
		b.Run(bb.name, func(b *testing.B) {
			c := serve(b, &probe{}, bb.server, bb.client...)
			ctx := benchCtx(b)
			b.ReportAllocs()
			for b.Loop() {
				if err := check(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLoopbackOverhead gives the interceptors' share of a real call
// as one figure. On a shared machine the load changes from second to
// second, so the two halves of BenchmarkLoopbackCall, run one after the
// other, can differ by more than the interceptors cost. Here every
// iteration makes one plain call and one call through both interceptors,
// taking turns at going first, so that both see the same load. It reports
// the mean of each and the overhead in percent of the plain call.
func BenchmarkLoopbackOverhead(b *testing.B) {
	server, client := loopbackInterceptors()
	plain := serve(b, &probe{}, nil)
	intercepted := serve(b, &probe{}, server, client...)
	ctx := benchCtx(b)
	timed := func(c grpc_health_v1.HealthClient) time.Duration {
		start := time.Now()
		if err := check(ctx, c); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var calls int
	var tPlain, tIntercepted time.Duration
	for b.Loop() {
		if calls%2 == 0 {
			tPlain += timed(plain)
			tIntercepted += timed(intercepted)
		} else {
			tIntercepted += timed(intercepted)
			tPlain += timed(plain)
		}
		calls++
	}
	b.ReportMetric(float64(tPlain.Nanoseconds())/float64(calls), "plain-ns/call")
	b.ReportMetric(float64(tIntercepted.Nanoseconds())/float64(calls), "intercepted-ns/call")
	b.ReportMetric(100*(float64(tIntercepted)/float64(tPlain)-1), "overhead-%")
}
