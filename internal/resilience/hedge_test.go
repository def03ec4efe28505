package resilience

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/pkg/resilience/retry"
)

// hedging is budgeted mode with hedging switched on.
func hedging(on bool) *mode.Live {
	live := settings(mode.Budgeted)
	s := live.Load()
	s.Mechanisms.Hedging = on
	live.Switch(s)
	return live
}

func hedgedOutbound(t *testing.T, live *mode.Live, budget *retry.Budget) *Outbound {
	return newTestOutbound(t, live, OutboundOptions{
		Name: "fraud", Hedged: true, RetryBudget: budget,
	})
}

// screen makes one hedgeable call through d's chain and returns its reply.
func screen(ctx context.Context, d *Outbound, inv grpc.UnaryInvoker) (string, error) {
	reply := &wrapperspb.StringValue{}
	err := ClientChain(d)(ctx, "/mercado.payments.v1.PaymentsService/ScreenOrder", nil, reply, nil, inv)
	return reply.GetValue(), err
}

// warm times HedgeWarmUp calls that each take took, so the policy's
// quantile, and with it the hedge's delay, is about took.
func warm(t *testing.T, d *Outbound, took time.Duration) {
	t.Helper()
	quick := func(ctx context.Context, _ string, _, reply any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
		time.Sleep(took)
		return nil
	}
	for range HedgeWarmUp {
		if _, err := screen(context.Background(), d, quick); err != nil {
			t.Fatal(err)
		}
	}
}

// slowThenQuick answers its first call only when that call's context ends,
// and every later one at once with "hedge"; cancelled reports whether the
// first call's context was cancelled.
func slowThenQuick(calls *atomic.Int64, cancelled chan<- bool) grpc.UnaryInvoker {
	return func(ctx context.Context, _ string, _, reply any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
		if calls.Add(1) == 1 {
			<-ctx.Done()
			cancelled <- true
			return status.FromContextError(ctx.Err()).Err()
		}
		reply.(*wrapperspb.StringValue).Value = "hedge"
		return nil
	}
}

// TestHedgeWinsAndCancelsTheSlowAttempt: a call still running after the
// dependency's p95 is sent again; the second answer is the call's, the
// first attempt is cancelled, and the hedge paid a retry token.
func TestHedgeWinsAndCancelsTheSlowAttempt(t *testing.T) {
	budget := retry.NewBudget(0, 5)
	d := hedgedOutbound(t, hedging(true), budget)
	warm(t, d, time.Millisecond)
	var calls atomic.Int64
	cancelled := make(chan bool, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	got, err := screen(ctx, d, slowThenQuick(&calls, cancelled))
	if err != nil || got != "hedge" {
		t.Fatalf("screen = %q, %v; want the hedge's answer", got, err)
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("took %v: the call waited for the slow attempt", took)
	}
	select {
	case <-cancelled:
	case <-time.After(time.Second):
		t.Error("the slow attempt was not cancelled")
	}
	if calls.Load() != 2 {
		t.Errorf("calls = %d, want 2", calls.Load())
	}
	if budget.Tokens() != 4 {
		t.Errorf("retry budget = %v tokens, want 4: a hedge pays one", budget.Tokens())
	}
}

// TestNoHedge: the call is made once when hedging is off, when the retry
// budget is empty, and when the budget left at the hedge's moment is below
// the floor: the first attempt's answer, or its deadline, is the call's.
func TestNoHedge(t *testing.T) {
	for _, tc := range []struct {
		name    string
		on      bool
		tokens  float64
		timeout time.Duration
	}{
		{"hedging off", false, 5, 200 * time.Millisecond},
		{"retry budget empty", true, 0, 200 * time.Millisecond},
		// The floor is 20 ms and the margin 3: of 30 ms, the first
		// attempt may start, but less than the floor is left once the
		// hedge's delay, about 10 ms, has passed.
		{"budget below the floor", true, 5, 30 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			budget := retry.NewBudget(0, tc.tokens)
			d := hedgedOutbound(t, hedging(tc.on), budget)
			warm(t, d, 10*time.Millisecond)
			var calls atomic.Int64
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			_, err := screen(ctx, d, slowThenQuick(&calls, make(chan bool, 1)))
			if status.Code(err) != codes.DeadlineExceeded {
				t.Errorf("err = %v, want the first attempt's DeadlineExceeded", err)
			}
			if calls.Load() != 1 {
				t.Errorf("calls = %d, want 1", calls.Load())
			}
			if budget.Tokens() != tc.tokens {
				t.Errorf("retry budget = %v tokens, want %v: no hedge was paid for", budget.Tokens(), tc.tokens)
			}
		})
	}
}
