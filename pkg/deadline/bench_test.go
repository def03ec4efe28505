package deadline_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/mercado-lab/mercado/pkg/deadline"
)

// These benchmarks measure the library's own per-call work, without gRPC:
// the target is at most 1µs and 3 allocations per call.

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
		Policy: func() deadline.Policy { return benchPolicy },
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
		Policy: func() deadline.Policy { return benchPolicy },
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

// BenchmarkLoopbackCall puts the figures above in proportion: one real
// unary call over loopback, without and with both interceptors.
func BenchmarkLoopbackCall(b *testing.B) {
	for _, bb := range []struct {
		name   string
		server []grpc.UnaryServerInterceptor
		client []grpc.UnaryClientInterceptor
	}{
		{name: "plain"},
		{
			name:   "interceptors",
			server: []grpc.UnaryServerInterceptor{deadline.UnaryServerInterceptor(deadline.ServerOptions{Policy: func() deadline.Policy { return benchPolicy }})},
			client: []grpc.UnaryClientInterceptor{deadline.UnaryClientInterceptor(deadline.ClientOptions{
				Policy: func() deadline.Policy { return benchPolicy },
				Cap:    func(string) time.Duration { return 300 * time.Millisecond },
			})},
		},
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
