package orders

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/faults"
)

// A charge rules the money out only when every attempt that left orders
// was refused before any work: one attempt that timed out, or broke, keeps
// the outcome unknown whatever the attempts after it said.
func TestSentRulesOutTheMoneyOnlyForRefusals(t *testing.T) {
	refused := apperr.Status(faults.ErrRefused)
	timedOut := status.Error(codes.DeadlineExceeded, "payments did not answer")
	unreachable := status.Error(codes.Unavailable, "connection reset")
	for _, tt := range []struct {
		name     string
		attempts []error
		unsure   bool
	}{
		{"no attempt left (breaker open, bulkhead full, no budget)", nil, false},
		{"every attempt refused", []error{refused, refused, refused}, false},
		{"a timeout, then refusals", []error{timedOut, refused, refused}, true},
		{"refusals, then a broken connection", []error{refused, unreachable}, true},
		{"a plain Unavailable", []error{unreachable}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, s := watchSent(context.Background())
			for _, err := range tt.attempts {
				invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return err }
				if got := recordSent(ctx, "/m", nil, nil, nil, invoker); got != err {
					t.Fatalf("recordSent = %v, want the attempt's own error %v", got, err)
				}
			}
			if got := s.unsure.Load(); got != tt.unsure {
				t.Errorf("unsure = %v, want %v", got, tt.unsure)
			}
		})
	}
	// Outside a charge (no record in the context) it only passes the call on.
	invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return timedOut }
	if err := recordSent(context.Background(), "/m", nil, nil, nil, invoker); err != timedOut {
		t.Errorf("recordSent without a record = %v", err)
	}
}

func TestUnknownOutcome(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "down")
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"Unavailable", unavailable, true},
		{"DeadlineExceeded", status.Error(codes.DeadlineExceeded, "late"), true},
		{"declined", status.Error(codes.FailedPrecondition, "no"), false},
		{"Unavailable, nothing charged", notCharged{unavailable}, false},
		{"timeout, nothing sent", notCharged{status.Error(codes.DeadlineExceeded, "no budget")}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := unknownOutcome(tt.err); got != tt.want {
				t.Errorf("unknownOutcome(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
	if apperr.GRPCCode(notCharged{unavailable}) != codes.Unavailable {
		t.Error("notCharged must keep the code of the error it marks")
	}
}
