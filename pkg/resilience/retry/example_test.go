package retry_test

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/pkg/resilience/retry"
)

// The budgeted mode's retries: payments is unreachable twice, then
// answers. Each retry waits a jittered backoff and starts only because it
// fits in what is left of the 1.2s budget.
func ExamplePolicy_Do() {
	policy := retry.Policy{
		MaxAttempts: 3,
		BaseBackoff: 10 * time.Millisecond,
		MaxBackoff:  100 * time.Millisecond,
		BudgetAware: true,
		Margin:      20 * time.Millisecond,
		Floor:       50 * time.Millisecond,
		Budget:      retry.NewBudget(0.1, 10), // share one per dependency
		Hooks: retry.Hooks{
			OnAttempt: func(_ context.Context, attempt int) { fmt.Println("attempt", attempt) },
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer cancel()

	err := policy.Do(ctx, func(ctx context.Context, attempt int) error {
		if attempt < 3 {
			return status.Error(codes.Unavailable, "payments: connection refused")
		}
		return nil // charged
	})
	fmt.Println("err:", err)
	// Output:
	// attempt 1
	// attempt 2
	// attempt 3
	// err: <nil>
}

// The retry storm: the gateway retries orders 3 times, orders retries
// payments 3 times, and one checkout sends payments 9 calls.
func ExampleNaive() {
	calls := 0
	charge := func(context.Context, int) error {
		calls++
		return status.Error(codes.DeadlineExceeded, "payments: too slow")
	}
	checkout := func(ctx context.Context, _ int) error {
		return retry.Naive().Do(ctx, charge) // orders → payments
	}
	err := retry.Naive().Do(context.Background(), checkout) // gateway → orders

	fmt.Println(status.Code(err), "after", calls, "calls to payments")
	// Output:
	// DeadlineExceeded after 9 calls to payments
}

// The ceiling of the full-jitter window doubles from retry to retry until
// MaxBackoff; the wait is a random point in it (here the middle).
func ExampleBackoff() {
	for n := 1; n <= 6; n++ {
		fmt.Printf("retry %d waits %v\n", n, retry.Backoff(n, 100*time.Millisecond, time.Second, 0.5))
	}
	// Output:
	// retry 1 waits 50ms
	// retry 2 waits 100ms
	// retry 3 waits 200ms
	// retry 4 waits 400ms
	// retry 5 waits 500ms
	// retry 6 waits 500ms
}
