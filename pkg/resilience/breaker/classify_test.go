package breaker

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

	"github.com/mercado-lab/mercado/pkg/deadline"
)

// viaInterceptor makes one call through pkg/deadline's client interceptor
// with the given policy, cap and caller's budget (zero: none), against a
// fake server that answers as gRPC does when the call's context ends, or
// with answer if it is not nil. It returns the interceptor's error.
func viaInterceptor(t *testing.T, p deadline.Policy, cap, budget time.Duration, answer error) error {
	t.Helper()
	var err error
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		if budget > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, budget)
			defer cancel()
		}
		icpt := deadline.UnaryClientInterceptor(deadline.ClientOptions{
			Policy: func(context.Context) deadline.Policy { return p },
			Cap:    func(string) time.Duration { return cap },
		})
		invoker := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
			if answer != nil {
				return answer
			}
			<-ctx.Done()
			return status.FromContextError(ctx.Err()).Err()
		}
		err = icpt(ctx, "/mercado.payments.v1.Payments/Charge", nil, nil, nil, invoker)
	})
	return err
}

func TestClassify(t *testing.T) {
	ownCap := viaInterceptor(t, deadline.Policy{}, 300*time.Millisecond, 0, nil)
	clipped := viaInterceptor(t, deadline.Policy{Margin: 10 * time.Millisecond}, 800*time.Millisecond, 160*time.Millisecond, nil)
	skipped := viaInterceptor(t, deadline.Policy{Margin: 10 * time.Millisecond, Floor: 100 * time.Millisecond}, 300*time.Millisecond, 50*time.Millisecond, nil)
	unavailable := viaInterceptor(t, deadline.Policy{}, 300*time.Millisecond, 0, status.Error(codes.Unavailable, "connection refused"))

	// The interceptor's errors really are the wrapped forms under test.
	for _, c := range []struct {
		err  error
		want deadline.Outcome
	}{{ownCap, deadline.OutcomeTimeout}, {clipped, deadline.OutcomeBudget}, {skipped, deadline.OutcomeSkipped}} {
		var ce *deadline.CallError
		if !errors.As(c.err, &ce) || ce.Outcome != c.want {
			t.Fatalf("interceptor returned %T %v, want a *deadline.CallError with outcome %s", c.err, c.err, c.want)
		}
		if status.Code(c.err) != codes.DeadlineExceeded {
			t.Fatalf("interceptor error %v has code %v, want DeadlineExceeded", c.err, status.Code(c.err))
		}
	}

	tests := []struct {
		name string
		err  error
		want Verdict
	}{
		{"nil", nil, Success},

		// The dependency was slow or broken.
		{"own cap, sentinel", deadline.ErrCallTimeout, Failure},
		{"own cap, CallError from the interceptor", ownCap, Failure},
		{"own cap, CallError wrapped again", fmt.Errorf("charge: %w", ownCap), Failure},
		{"own cap, joined with a status", errors.Join(deadline.ErrCallTimeout, status.Error(codes.DeadlineExceeded, "x")), Failure},
		{"Unavailable", status.Error(codes.Unavailable, "down"), Failure},
		{"Unavailable through the interceptor", unavailable, Failure},
		{"Unavailable, wrapped", fmt.Errorf("charge: %w", status.Error(codes.Unavailable, "down")), Failure},
		{"ResourceExhausted", status.Error(codes.ResourceExhausted, "full"), Failure},
		{"Internal", status.Error(codes.Internal, "bug"), Failure},
		{"Unknown", status.Error(codes.Unknown, "?"), Failure},
		{"DataLoss", status.Error(codes.DataLoss, "lost"), Failure},
		{"not a status", errors.New("boom"), Failure},

		// Says nothing about the dependency.
		{"caller's budget, sentinel", deadline.ErrBudgetExhausted, Excluded},
		{"caller's budget, CallError from the interceptor", clipped, Excluded},
		{"caller's budget, joined with a status", errors.Join(deadline.ErrBudgetExhausted, status.Error(codes.DeadlineExceeded, "x")), Excluded},
		{"insufficient budget, sentinel", deadline.ErrInsufficientBudget, Excluded},
		{"insufficient budget, CallError from the interceptor", skipped, Excluded},
		{"insufficient budget, wrapped", fmt.Errorf("charge: %w", skipped), Excluded},
		{"context.Canceled", context.Canceled, Excluded},
		{"context.Canceled, wrapped", fmt.Errorf("charge: %w", context.Canceled), Excluded},
		{"Canceled status", status.Error(codes.Canceled, "canceled"), Excluded},
		{"bare DeadlineExceeded status", status.Error(codes.DeadlineExceeded, "server: deadline exceeded"), Excluded},
		{"context.DeadlineExceeded", context.DeadlineExceeded, Excluded},

		// Answers the dependency chose to give.
		{"InvalidArgument", status.Error(codes.InvalidArgument, "bad"), Success},
		{"NotFound", status.Error(codes.NotFound, "none"), Success},
		{"FailedPrecondition", status.Error(codes.FailedPrecondition, "out of stock"), Success},
		{"AlreadyExists", status.Error(codes.AlreadyExists, "dup"), Success},
		{"PermissionDenied", status.Error(codes.PermissionDenied, "no"), Success},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.err); got != tt.want {
				t.Errorf("Classify(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
