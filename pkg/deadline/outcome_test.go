package deadline_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/pkg/deadline"
)

func TestClassify(t *testing.T) {
	live := context.Background()
	ended := func(cause error) context.Context {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		return ctx
	}
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()

	capped := deadline.Decision{Timeout: 300 * ms}
	clipped := deadline.Decision{HasBudget: true, Timeout: 160 * ms, ClippedByBudget: true}
	blindShort := deadline.Decision{HasBudget: true, Remaining: 50 * ms, Timeout: 300 * ms}
	blindLong := deadline.Decision{HasBudget: true, Remaining: time.Second, Timeout: 300 * ms}
	blindNoCap := deadline.Decision{HasBudget: true, Remaining: 50 * ms}
	peerExpired := status.Error(codes.DeadlineExceeded, "peer: deadline exceeded")
	anyErr := errors.New("boom")

	tests := []struct {
		name string
		ctx  context.Context
		d    deadline.Decision
		err  error
		want deadline.Outcome
	}{
		{"no error", expired, capped, nil, deadline.OutcomeOK},
		{"skipped", live, capped, fmt.Errorf("call: %w", deadline.ErrInsufficientBudget), deadline.OutcomeSkipped},
		{"own cap fired", ended(deadline.ErrCallTimeout), capped, anyErr, deadline.OutcomeTimeout},
		{"budget fired", ended(deadline.ErrBudgetExhausted), clipped, anyErr, deadline.OutcomeBudget},
		{"caller's plain deadline fired", expired, capped, anyErr, deadline.OutcomeBudget},
		{"caller canceled", canceled, capped, anyErr, deadline.OutcomeCanceled},
		{"caller canceled with another cause", ended(errors.New("shutdown")), capped, anyErr, deadline.OutcomeError},
		{"peer's deadline first, cap set it", live, capped, peerExpired, deadline.OutcomeTimeout},
		{"peer's deadline first, budget set it", live, clipped, peerExpired, deadline.OutcomeBudget},
		{"peer's deadline first, call unbounded", live, deadline.Decision{}, peerExpired, deadline.OutcomeError},
		// A blind call is bounded by the caller's deadline as well as its cap.
		{"peer's deadline first, blind, caller's deadline before the cap", live, blindShort, peerExpired, deadline.OutcomeBudget},
		{"peer's deadline first, blind, cap before the caller's deadline", live, blindLong, peerExpired, deadline.OutcomeTimeout},
		{"peer's deadline first, blind without a cap", live, blindNoCap, peerExpired, deadline.OutcomeBudget},
		{"other failure", live, capped, status.Error(codes.Unavailable, "down"), deadline.OutcomeError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := deadline.Classify(tt.ctx, tt.d, tt.err); got != tt.want {
				t.Errorf("Classify() = %q; want %q", got, tt.want)
			}
		})
	}
}
