package retry

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// callError makes one call through deadline's client interceptor to a
// dependency that never answers, and returns the error the retry layer
// sees: the real errors, not look-alikes. budget 0 means no deadline.
func callError(t *testing.T, p deadline.Policy, cap, budget time.Duration) error {
	t.Helper()
	var err error
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		if budget > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, budget)
			defer cancel()
		}
		intercept := deadline.UnaryClientInterceptor(deadline.ClientOptions{
			Policy: func(context.Context) deadline.Policy { return p },
			Cap:    func(string) time.Duration { return cap },
		})
		hang := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
			<-ctx.Done()
			return status.FromContextError(ctx.Err()).Err()
		}
		err = intercept(ctx, "/mercado.payments.v1.Payments/Charge", nil, nil, nil, hang)
	})
	return err
}

func TestRetryable(t *testing.T) {
	// The call's own 100ms cap expires: the dependency was slow this time.
	callTimeout := callError(t, deadline.Policy{}, 100*time.Millisecond, 0)
	// The caller's 100ms budget clips the 300ms cap and runs out.
	budgetExhausted := callError(t, deadline.Policy{Margin: 20 * time.Millisecond}, 300*time.Millisecond, 100*time.Millisecond)
	// 30ms left, the floor is 50ms: the call is not made.
	insufficient := callError(t, deadline.Policy{Floor: 50 * time.Millisecond}, 300*time.Millisecond, 30*time.Millisecond)
	for err, want := range map[error]error{
		callTimeout:     deadline.ErrCallTimeout,
		budgetExhausted: deadline.ErrBudgetExhausted,
		insufficient:    deadline.ErrInsufficientBudget,
	} {
		if !errors.Is(err, want) {
			t.Fatalf("set-up: got %v, want an error matching %v", err, want)
		}
	}

	unavailable := status.Error(codes.Unavailable, "connection refused")
	for _, tt := range []struct {
		name     string
		err      error
		budgeted bool // DefaultRetryable
		naive    bool // NaiveRetryable
	}{
		{"nil", nil, false, false},
		{"Unavailable", unavailable, true, true},
		{"Unavailable wrapped", fmt.Errorf("charge: %w", unavailable), true, true},
		{"Unavailable passed on by apperr", apperr.FromGRPC(unavailable, "charging"), true, true},
		{"own cap expired (ErrCallTimeout)", callTimeout, true, true},
		{"ErrCallTimeout wrapped", fmt.Errorf("reserve: %w", callTimeout), true, true},
		{"caller's budget exhausted", budgetExhausted, false, true},
		{"insufficient budget", insufficient, false, true},
		// The budget's verdict wins over the code: there is no time left.
		{"budget exhausted and Unavailable", fmt.Errorf("%w: %w", deadline.ErrBudgetExhausted, unavailable), false, true},
		{"insufficient budget and Unavailable", fmt.Errorf("%w: %w", deadline.ErrInsufficientBudget, unavailable), false, true},
		{"context canceled", context.Canceled, false, true},
		{"context deadline exceeded", context.DeadlineExceeded, false, true},
		{"peer answered DeadlineExceeded", status.Error(codes.DeadlineExceeded, "deadline exceeded"), false, true},
		{"ResourceExhausted", status.Error(codes.ResourceExhausted, "bulkhead full"), false, true},
		{"Internal", status.Error(codes.Internal, "boom"), false, true},
		{"plain error", errors.New("boom"), false, true},
		{"InvalidArgument", status.Error(codes.InvalidArgument, "bad card"), false, false},
		{"NotFound", status.Error(codes.NotFound, "no such product"), false, false},
		{"FailedPrecondition", status.Error(codes.FailedPrecondition, "out of stock"), false, false},
		{"AlreadyExists", status.Error(codes.AlreadyExists, "duplicate"), false, false},
		{"apperr Invalid", apperr.New(apperr.Invalid, "quantity must be positive"), false, false},
		{"apperr Conflict", apperr.New(apperr.Conflict, "out of stock"), false, false},
		{"Permanent Unavailable (breaker open)", Permanent(unavailable), false, false},
		{"Permanent wrapped", fmt.Errorf("payments: %w", Permanent(unavailable)), false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := DefaultRetryable(tt.err); got != tt.budgeted {
				t.Errorf("DefaultRetryable(%v) = %v, want %v", tt.err, got, tt.budgeted)
			}
			if got := NaiveRetryable(tt.err); got != tt.naive {
				t.Errorf("NaiveRetryable(%v) = %v, want %v", tt.err, got, tt.naive)
			}
		})
	}
}

func TestPermanent(t *testing.T) {
	if Permanent(nil) != nil {
		t.Fatal("Permanent(nil) is not nil")
	}
	unavailable := status.Error(codes.Unavailable, "breaker open")
	err := Permanent(unavailable)
	if !errors.Is(err, unavailable) || status.Code(err) != codes.Unavailable || err.Error() != unavailable.Error() {
		t.Errorf("Permanent(%v) = %v (code %v): the mark is not transparent", unavailable, err, status.Code(err))
	}

	// Do never retries a Permanent error, even with a policy that retries
	// everything.
	calls := 0
	p := Policy{MaxAttempts: 5, Retryable: func(error) bool { return true }}
	got := p.Do(t.Context(), func(context.Context, int) error {
		calls++
		return err
	})
	if calls != 1 || got != err {
		t.Errorf("Do: %d calls, returned %v; want 1 call returning %v", calls, got, err)
	}
}
