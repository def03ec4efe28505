package deadline_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mercado-lab/mercado/pkg/deadline"
)

const ms = time.Millisecond

// withLeft returns a context whose deadline is left from now. Inside a
// synctest bubble time stands still, so Remaining reports exactly left.
// A negative or zero left gives an already expired context.
func withLeft(t *testing.T, left time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), left)
	t.Cleanup(cancel)
	return ctx
}

func TestRemaining(t *testing.T) {
	tests := []struct {
		name    string
		left    time.Duration // zero: no deadline
		want    time.Duration
		wantHas bool
	}{
		{name: "no deadline", want: 0, wantHas: false},
		{name: "time left", left: 250 * ms, want: 250 * ms, wantHas: true},
		{name: "deadline passed", left: -40 * ms, want: -40 * ms, wantHas: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				if tt.left != 0 {
					ctx = withLeft(t, tt.left)
				}
				got, has := deadline.Remaining(ctx)
				if got != tt.want || has != tt.wantHas {
					t.Errorf("Remaining() = %v, %v; want %v, %v", got, has, tt.want, tt.wantHas)
				}
			})
		})
	}
}

func TestPolicyDecide(t *testing.T) {
	tests := []struct {
		name   string
		policy deadline.Policy
		left   time.Duration // zero: the caller's context has no deadline
		cap    time.Duration
		want   deadline.Decision
		// wantErr is a fragment of the error message; empty means no error.
		wantErr string
	}{
		{
			name: "no deadline keeps the cap",
			cap:  300 * ms,
			want: deadline.Decision{Timeout: 300 * ms},
		},
		{
			name: "no deadline and no cap is unbounded",
			want: deadline.Decision{},
		},
		{
			name: "cap wins when the budget is larger",
			left: time.Second,
			cap:  300 * ms,
			want: deadline.Decision{HasBudget: true, Remaining: time.Second, Timeout: 300 * ms},
		},
		{
			name: "budget wins when it is smaller (lesson 7)",
			left: 160 * ms,
			cap:  300 * ms,
			want: deadline.Decision{HasBudget: true, Remaining: 160 * ms, Timeout: 160 * ms, ClippedByBudget: true},
		},
		{
			name: "no cap: the budget bounds the call",
			left: 500 * ms,
			want: deadline.Decision{HasBudget: true, Remaining: 500 * ms, Timeout: 500 * ms, ClippedByBudget: true},
		},
		{
			name: "cap equal to the budget is the cap",
			left: 300 * ms,
			cap:  300 * ms,
			want: deadline.Decision{HasBudget: true, Remaining: 300 * ms, Timeout: 300 * ms},
		},
		{
			name:   "margin is kept back from the budget",
			policy: deadline.Policy{Margin: 50 * ms},
			left:   500 * ms,
			cap:    time.Second,
			want:   deadline.Decision{HasBudget: true, Remaining: 500 * ms, Timeout: 450 * ms, ClippedByBudget: true},
		},
		{
			name:   "margin can leave the cap the winner",
			policy: deadline.Policy{Margin: 50 * ms},
			left:   500 * ms,
			cap:    400 * ms,
			want:   deadline.Decision{HasBudget: true, Remaining: 500 * ms, Timeout: 400 * ms},
		},
		{
			name:   "exactly the floor is enough",
			policy: deadline.Policy{Margin: 20 * ms, Floor: 80 * ms},
			left:   100 * ms,
			cap:    300 * ms,
			want:   deadline.Decision{HasBudget: true, Remaining: 100 * ms, Timeout: 80 * ms, ClippedByBudget: true},
		},
		{
			name:    "below the floor after the margin is skipped",
			policy:  deadline.Policy{Margin: 20 * ms, Floor: 100 * ms},
			left:    100 * ms,
			cap:     300 * ms,
			want:    deadline.Decision{HasBudget: true, Remaining: 100 * ms, Timeout: 300 * ms},
			wantErr: "80ms left after margin, floor is 100ms",
		},
		{
			name:    "margin eating the whole budget is spent",
			policy:  deadline.Policy{Margin: 50 * ms},
			left:    50 * ms,
			cap:     300 * ms,
			want:    deadline.Decision{HasBudget: true, Remaining: 50 * ms, Timeout: 300 * ms},
			wantErr: "budget spent (0s after margin)",
		},
		{
			name:    "expired deadline is spent even without a floor",
			left:    -10 * ms,
			cap:     300 * ms,
			want:    deadline.Decision{HasBudget: true, Remaining: -10 * ms, Timeout: 300 * ms},
			wantErr: "budget spent (-10ms after margin)",
		},
		{
			name:   "blind ignores the budget",
			policy: deadline.Policy{Blind: true, Margin: 20 * ms, Floor: time.Second},
			left:   50 * ms,
			cap:    300 * ms,
			want:   deadline.Decision{HasBudget: true, Remaining: 50 * ms, Timeout: 300 * ms},
		},
		{
			name:   "blind calls even with the budget spent",
			policy: deadline.Policy{Blind: true},
			left:   -10 * ms,
			cap:    300 * ms,
			want:   deadline.Decision{HasBudget: true, Remaining: -10 * ms, Timeout: 300 * ms},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				if tt.left != 0 {
					ctx = withLeft(t, tt.left)
				}
				got, err := tt.policy.Decide(ctx, tt.cap)
				if got != tt.want {
					t.Errorf("Decide() = %+v; want %+v", got, tt.want)
				}
				checkInsufficient(t, err, tt.wantErr)
			})
		})
	}
}

// checkInsufficient checks that err is nil when want is empty, and
// otherwise wraps ErrInsufficientBudget with a message containing want.
func checkInsufficient(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("err = %v; want nil", err)
		}
		return
	}
	if !errors.Is(err, deadline.ErrInsufficientBudget) {
		t.Fatalf("err = %v; want one wrapping ErrInsufficientBudget", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("err = %q; want it to contain %q", err, want)
	}
}

func TestPolicyCall(t *testing.T) {
	tests := []struct {
		name        string
		policy      deadline.Policy
		left        time.Duration // zero: no deadline
		cap         time.Duration
		wantTimeout time.Duration // when the derived context ends
		wantOutcome deadline.Outcome
		// wantCause is context.Cause of the derived context; nil means
		// not checked.
		wantCause error
	}{
		{
			name:        "cap sets the timeout",
			left:        time.Second,
			cap:         300 * ms,
			wantTimeout: 300 * ms, wantOutcome: deadline.OutcomeTimeout, wantCause: deadline.ErrCallTimeout,
		},
		{
			name: "cap without a budget",
			cap:  300 * ms, wantTimeout: 300 * ms,
			wantOutcome: deadline.OutcomeTimeout, wantCause: deadline.ErrCallTimeout,
		},
		{
			name:        "budget after margin sets the timeout",
			policy:      deadline.Policy{Margin: 30 * ms},
			left:        160 * ms,
			cap:         300 * ms,
			wantTimeout: 130 * ms, wantOutcome: deadline.OutcomeBudget, wantCause: deadline.ErrBudgetExhausted,
		},
		{
			// With no margin the call ends at the caller's own deadline,
			// so the caller's timer may fire first and its cause wins.
			// Either way the call is classified as budget exhausted.
			name:        "budget without margin sets the timeout",
			left:        160 * ms,
			cap:         300 * ms,
			wantTimeout: 160 * ms, wantOutcome: deadline.OutcomeBudget,
		},
		{
			// The naive system: the call keeps its cap, and the caller's
			// own deadline cuts it short with the caller's cause.
			name:        "blind call ends with the caller's deadline",
			policy:      deadline.Policy{Blind: true},
			left:        50 * ms,
			cap:         300 * ms,
			wantTimeout: 50 * ms, wantOutcome: deadline.OutcomeBudget, wantCause: context.DeadlineExceeded,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				if tt.left != 0 {
					ctx = withLeft(t, tt.left)
				}
				start := time.Now()
				callCtx, cancel, d, err := tt.policy.Call(ctx, tt.cap)
				defer cancel()
				if err != nil {
					t.Fatalf("Call() error = %v", err)
				}
				<-callCtx.Done()
				if took := time.Since(start); took != tt.wantTimeout {
					t.Errorf("call context ended after %v; want %v", took, tt.wantTimeout)
				}
				if tt.wantCause != nil {
					if cause := context.Cause(callCtx); cause != tt.wantCause {
						t.Errorf("context.Cause = %v; want %v", cause, tt.wantCause)
					}
				}
				if got := deadline.Classify(callCtx, d, callCtx.Err()); got != tt.wantOutcome {
					t.Errorf("Classify() = %q; want %q", got, tt.wantOutcome)
				}
			})
		})
	}
}

func TestPolicyCallUnbounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		callCtx, cancel, d, err := deadline.Policy{}.Call(context.Background(), 0)
		if err != nil {
			t.Fatalf("Call() error = %v", err)
		}
		if d.Timeout != 0 || d.HasBudget {
			t.Errorf("Decision = %+v; want an unbounded call", d)
		}
		if _, ok := callCtx.Deadline(); ok {
			t.Error("derived context has a deadline; want none")
		}
		time.Sleep(time.Hour)
		if callCtx.Err() != nil {
			t.Fatalf("derived context ended on its own: %v", callCtx.Err())
		}
		cancel()
		if cause := context.Cause(callCtx); cause != context.Canceled {
			t.Errorf("context.Cause after cancel = %v; want context.Canceled", cause)
		}
	})
}

func TestPolicyCallInsufficient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := withLeft(t, 30*ms)
		p := deadline.Policy{Floor: 50 * ms}
		callCtx, cancel, d, err := p.Call(ctx, 300*ms)
		if !errors.Is(err, deadline.ErrInsufficientBudget) {
			t.Fatalf("Call() error = %v; want ErrInsufficientBudget", err)
		}
		if callCtx != ctx {
			t.Error("Call() derived a context although the call must not be made")
		}
		if d.Remaining != 30*ms || !d.HasBudget {
			t.Errorf("Decision = %+v; want the remaining budget reported", d)
		}
		cancel() // a no-op, but it must be safe to call
		if ctx.Err() != nil {
			t.Errorf("the no-op cancel canceled the caller's context: %v", ctx.Err())
		}
	})
}
