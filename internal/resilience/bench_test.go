package resilience

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/telemetry"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// BenchmarkOutbound measures what the budgeted outbound policy adds to one
// call — retry bookkeeping, a bulkhead slot, the breaker, the clip to the
// budget, metrics and the hop record — against the same call made bare.
// The invoker does nothing, so gRPC itself is left out.
//
//	go test -run '^$' -bench Outbound -benchmem ./internal/resilience/
func BenchmarkOutbound(b *testing.B) {
	noop := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, opts ...grpc.CallOption) error {
		return nil
	}
	const method = "/mercado.shipping.v1.ShippingService/CreateShipment"
	base, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	ctx := deadline.WithClientDeadline(base, time.Now().Add(time.Hour))

	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = noop(ctx, method, nil, nil, nil)
		}
	})
	b.Run("budgeted", func(b *testing.B) {
		m, err := telemetry.New("bench")
		if err != nil {
			b.Fatal(err)
		}
		live := mode.NewLive(mode.Settings{Mode: mode.Budgeted, Mechanisms: mode.Budgeted.Mechanisms(),
			Margin: 3 * time.Millisecond, Floor: 20 * time.Millisecond})
		d := NewOutbound(OutboundOptions{
			Name: "shipping", Cap: 300 * time.Millisecond, Settings: live, Metrics: m,
			BudgetedRetries: true, Idempotent: func(string) bool { return true },
		})
		icpt := ClientChain(d)
		// A call made for a request, which carries the mode's snapshot its
		// server took.
		ctx, _ := live.Snapshot(ctx)
		b.ReportAllocs()
		for b.Loop() {
			_ = icpt(ctx, method, nil, nil, nil, noop)
		}
	})
}
