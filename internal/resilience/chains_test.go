package resilience

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/telemetry"
	"github.com/mercado-lab/mercado/internal/timing"
	"github.com/mercado-lab/mercado/pkg/deadline"
	"github.com/mercado-lab/mercado/pkg/resilience/bulkhead"
)

// serveThrough runs handler behind the interceptor chain, as a gRPC
// server would.
func serveThrough(ctx context.Context, chain grpc.UnaryServerInterceptor, handler grpc.UnaryHandler) (any, error) {
	return chain(ctx, nil, &grpc.UnaryServerInfo{FullMethod: "/mercado.orders.v1.OrdersService/PlaceOrder"}, handler)
}

// TestModeSwitchMidRequestKeepsTheStartingMode: a request that arrives in
// budgeted mode stays budgeted to its end when the mode switches to naive
// while it runs — its context, and the pool, breaker and clip of a call it
// makes after the switch. The next request runs naive.
func TestModeSwitchMidRequestKeepsTheStartingMode(t *testing.T) {
	m, err := telemetry.New("test")
	if err != nil {
		t.Fatal(err)
	}
	budgeted := mode.Settings{Mode: mode.Budgeted, Mechanisms: mode.Budgeted.Mechanisms(), Margin: 3 * time.Millisecond, Floor: 20 * time.Millisecond}
	naive := mode.Settings{Mode: mode.Naive, Mechanisms: mode.Naive.Mechanisms(), Margin: 3 * time.Millisecond, Floor: 20 * time.Millisecond}
	live := mode.NewLive(budgeted)

	const shippingCap = 300 * time.Millisecond
	shared := NewPoolRef(bulkhead.Settings{Name: "outbound", Capacity: 10, MaxWait: -1}, m)
	shipping := NewOutbound(OutboundOptions{
		Name: "shipping", Cap: shippingCap, Settings: live, Metrics: m, Shared: shared,
		NaiveRetries: true, BudgetedRetries: true, Idempotent: func(string) bool { return true },
	})
	call := ClientChain(shipping)
	server := ServerChain(ServerOptions{Service: "orders", Settings: live, Metrics: m, Workers: 10})
	const method = "/mercado.shipping.v1.ShippingService/CreateShipment"
	ok := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }

	// seen is what one request's handler saw of its last call: its hop, and
	// the slots and breaker verdicts it took.
	type seen struct {
		mode             mode.Mode
		detached         bool
		hop              timing.Hop
		sharedAcquired   uint64
		bulkheadAcquired uint64
		breakerCalls     int
	}
	request := func(switchTo *mode.Settings) seen {
		t.Helper()
		// A 200 ms budget: budgeted clips shipping's 300 ms cap to it.
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		var got seen
		_, err := serveThrough(ctx, server, func(ctx context.Context, _ any) (any, error) {
			if switchTo != nil {
				// The switch comes while the request runs, as when a
				// learner flips the mode under load.
				err := call(ctx, method, nil, nil, nil, func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
					live.Switch(*switchTo)
					return nil
				})
				if err != nil {
					return nil, err
				}
			}
			ctx, rec := timing.WithRecorder(ctx)
			sharedBefore, bulkheadBefore := shared.Pool().Stats().Acquired, shipping.bulkhead.Pool().Stats().Acquired
			breakerBefore := shipping.Breaker(deadline.Interactive).Window().Calls
			if err := call(ctx, method, nil, nil, nil, ok); err != nil {
				return nil, err
			}
			s, _ := mode.From(ctx)
			got = seen{
				mode: s.Mode, detached: ctx.Done() == nil,
				sharedAcquired:   shared.Pool().Stats().Acquired - sharedBefore,
				bulkheadAcquired: shipping.bulkhead.Pool().Stats().Acquired - bulkheadBefore,
				breakerCalls:     shipping.Breaker(deadline.Interactive).Window().Calls - breakerBefore,
			}
			if hops := rec.Hops(); len(hops) == 1 {
				got.hop = hops[0]
			} else {
				t.Errorf("hops = %+v, want the one call", hops)
			}
			return nil, nil
		})
		if err != nil {
			t.Fatalf("request: %v", err)
		}
		return got
	}

	// Switched to naive between two calls: the second is still budgeted.
	got := request(&naive)
	if live.Load().Mode != mode.Naive {
		t.Fatalf("the switch did not happen: %v in force", live.Load().Mode)
	}
	if got.mode != mode.Budgeted {
		t.Errorf("the handler's snapshot says %q after the switch, want budgeted", got.mode)
	}
	if got.detached {
		t.Error("the request was detached from its caller, as only a naive one is")
	}
	if to := got.hop.Timeout; to <= 0 || to > 200*time.Millisecond-budgeted.Margin {
		t.Errorf("the call after the switch had a %v timeout, want it clipped to the budget less the margin (as budgeted), not the %v cap", to, shippingCap)
	}
	if got.bulkheadAcquired != 1 || got.sharedAcquired != 0 {
		t.Errorf("the call after the switch took %d slots of shipping's bulkhead and %d of the shared pool, want 1 and 0 (as budgeted)",
			got.bulkheadAcquired, got.sharedAcquired)
	}
	if got.breakerCalls != 1 {
		t.Errorf("shipping's breaker counted %d calls after the switch, want 1 (as budgeted)", got.breakerCalls)
	}

	// The next request arrives after the switch: naive from start to end.
	got = request(nil)
	if got.mode != mode.Naive || !got.detached {
		t.Errorf("the next request: mode %q, detached %v; want naive, detached", got.mode, got.detached)
	}
	if got.hop.Timeout != shippingCap {
		t.Errorf("the next request's call had a %v timeout, want the naive cap %v", got.hop.Timeout, shippingCap)
	}
	if got.sharedAcquired != 1 || got.bulkheadAcquired != 0 || got.breakerCalls != 0 {
		t.Errorf("the next request's call: shared pool %d, bulkhead %d, breaker %d; want 1, 0, 0 (as naive)",
			got.sharedAcquired, got.bulkheadAcquired, got.breakerCalls)
	}
}
