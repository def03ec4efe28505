package resilience

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/pkg/deadline"
	"github.com/mercado-lab/mercado/pkg/resilience/breaker"
	"github.com/mercado-lab/mercado/pkg/resilience/bulkhead"
)

// hangs is a dependency that never answers: every call ends when its
// context does, as a gRPC call whose deadline passes.
func hangs(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
	<-ctx.Done()
	return status.FromContextError(ctx.Err()).Err()
}

// answers is a dependency that answers at once.
func answers(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
	return nil
}

// Traffic classes are isolated all the way down to a dependency's
// mechanisms: a flood of batch calls that each hit the dependency's cap
// holds no more than batch's share of its bulkhead and opens no breaker
// interactive calls pass, so every interactive call made during the flood
// gets a slot and an answer. Interactive failures still open interactive's
// breaker.
func TestBatchTimeoutsLeaveInteractiveItsPoolAndBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const capacity, exporters, flood = 8, 6, 5 * time.Second
		live := settings(mode.Budgeted)
		d := newTestOutbound(t, live, OutboundOptions{
			Name: "catalog", Cap: 300 * time.Millisecond, Bulkhead: bulkhead.Settings{Capacity: capacity},
		})
		batchShare := deadline.Batch.Limit(capacity)
		end := time.Now().Add(flood)

		// The flood: more exporters than batch's share of the bulkhead, for
		// five seconds, every call timing out on the dependency's cap. A
		// call refused (batch's share in use, or a breaker open) waits a
		// little and asks again, as the export does.
		batch, cancel := context.WithTimeout(deadline.WithClass(context.Background(), deadline.Batch), 2*time.Minute)
		defer cancel()
		var wg sync.WaitGroup
		var timeouts atomic.Int64
		for range exporters {
			wg.Go(func() {
				for time.Now().Before(end) {
					err := call(d, batch, hangs)
					switch {
					case errors.Is(err, deadline.ErrCallTimeout):
						timeouts.Add(1)
					case errors.Is(err, bulkhead.ErrFull), errors.Is(err, breaker.ErrOpen):
						time.Sleep(10 * time.Millisecond)
					default:
						t.Errorf("batch call: %v, want its cap's timeout or a refusal", err)
						return
					}
				}
			})
		}

		// Shoppers during the flood: one interactive call every 100 ms.
		interactive, stop := context.WithTimeout(context.Background(), time.Hour)
		defer stop()
		var calls, failed int
		var first error
		for time.Now().Before(end) {
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
			if in := d.bulkhead.Pool().Stats().InFlight; in > batchShare {
				t.Errorf("batch holds %d of the bulkhead's %d slots, more than its share of %d", in, capacity, batchShare)
			}
			calls++
			if err := call(d, interactive, answers); err != nil {
				failed++
				first = cmp.Or(first, err)
			}
		}
		wg.Wait()
		if failed > 0 {
			t.Fatalf("%d of %d interactive calls during a flood of %d batch timeouts failed; the first: %v",
				failed, calls, timeouts.Load(), first)
		}
		if n := timeouts.Load(); n < breaker.DefaultMinCalls {
			t.Fatalf("the flood had %d timeouts, fewer than the %d calls a breaker opens on", n, breaker.DefaultMinCalls)
		}

		// Interactive failures still open the breaker interactive calls
		// pass: as many failures as its window holds successes.
		unavailable := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
			return status.Error(codes.Unavailable, "catalog: down")
		}
		for range calls {
			_ = call(d, interactive, unavailable)
		}
		if err := call(d, interactive, answers); !errors.Is(err, breaker.ErrOpen) {
			t.Fatalf("after %d interactive successes and as many failures: %v, want the breaker open", calls, err)
		}
	})
}
