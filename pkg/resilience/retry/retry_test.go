package retry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

var errUnavailable = status.Error(codes.Unavailable, "payments: connection refused")

// fixed returns a Rand that always returns r.
func fixed(r float64) func() float64 { return func() float64 { return r } }

// record counts the calls to fn and the give-ups of a Policy.
type record struct {
	calls   int
	times   []time.Duration // when each attempt started, since start
	reasons []GiveUp
	start   time.Time
}

func newRecord() *record { return &record{start: time.Now()} }

func (r *record) hooks() Hooks {
	return Hooks{
		OnGiveUp: func(_ context.Context, _ int, reason GiveUp) { r.reasons = append(r.reasons, reason) },
	}
}

// failing is an fn that fails every time with err.
func (r *record) failing(err error) func(context.Context, int) error {
	return func(context.Context, int) error {
		r.calls++
		r.times = append(r.times, time.Since(r.start))
		return err
	}
}

// Every retry checks the budget: a retry starts only if backoff + floor
// fits in remaining − margin; otherwise Do stops at once.
func TestDoRetryOnlyIfItFits(t *testing.T) {
	// Margin 20ms, floor 50ms; with Rand fixed at 0.5 the backoffs are
	// 20ms before retry 1 and 40ms before retry 2.
	policy := Policy{
		MaxAttempts: 3,
		BaseBackoff: 40 * time.Millisecond,
		MaxBackoff:  time.Second,
		BudgetAware: true,
		Margin:      20 * time.Millisecond,
		Floor:       50 * time.Millisecond,
		Rand:        fixed(0.5),
	}
	for _, tt := range []struct {
		name       string
		budget     time.Duration // 0: no deadline
		wantCalls  int
		wantTimes  []time.Duration
		wantReason GiveUp
	}{
		// 80 − 20 − 20 = 40ms would be left for retry 1: below the floor.
		{"no retry fits", 80 * time.Millisecond, 1, []time.Duration{0}, GiveUpBudgetDoesNotFit},
		// 90 − 20 − 20 = 50ms: retry 1 just fits (the floor is inclusive);
		// then 70 − 20 − 40 = 10ms: retry 2 does not.
		{"floor exactly", 90 * time.Millisecond, 2, []time.Duration{0, 20 * time.Millisecond}, GiveUpBudgetDoesNotFit},
		// 100 − 20 − 20 = 60ms fits; 80 − 20 − 40 = 20ms does not.
		{"one retry fits", 100 * time.Millisecond, 2, []time.Duration{0, 20 * time.Millisecond}, GiveUpBudgetDoesNotFit},
		// Plenty of budget: MaxAttempts stops the retries.
		{"both retries fit", 200 * time.Millisecond, 3, []time.Duration{0, 20 * time.Millisecond, 60 * time.Millisecond}, GiveUpAttemptsExhausted},
		// No deadline, no budget to check.
		{"no deadline", 0, 3, []time.Duration{0, 20 * time.Millisecond, 60 * time.Millisecond}, GiveUpAttemptsExhausted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				if tt.budget > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.budget)
					defer cancel()
				}
				r := newRecord()
				p := policy
				p.Hooks = r.hooks()
				err := p.Do(ctx, r.failing(errUnavailable))
				if !errors.Is(err, errUnavailable) {
					t.Errorf("Do returned %v, want the last error %v", err, errUnavailable)
				}
				if r.calls != tt.wantCalls || !slices.Equal(r.times, tt.wantTimes) {
					t.Errorf("attempts at %v, want %v", r.times, tt.wantTimes)
				}
				if !slices.Equal(r.reasons, []GiveUp{tt.wantReason}) {
					t.Errorf("give-ups %v, want [%v]", r.reasons, tt.wantReason)
				}
				// The give-up is immediate: Do does not sleep towards a
				// retry it will not make.
				if took, want := time.Since(r.start), tt.wantTimes[len(tt.wantTimes)-1]; took != want {
					t.Errorf("Do took %v, want %v", took, want)
				}
			})
		})
	}
}

func TestDoStopsAtMaxAttempts(t *testing.T) {
	for _, tt := range []struct {
		maxAttempts, wantCalls int
	}{
		{-1, 1}, {0, 1}, {1, 1}, {2, 2}, {3, 3}, {5, 5},
	} {
		t.Run(fmt.Sprint(tt.maxAttempts), func(t *testing.T) {
			r := newRecord()
			p := Policy{MaxAttempts: tt.maxAttempts, Hooks: r.hooks()}
			if err := p.Do(t.Context(), r.failing(errUnavailable)); err != errUnavailable {
				t.Errorf("Do returned %v, want %v", err, errUnavailable)
			}
			if r.calls != tt.wantCalls {
				t.Errorf("%d calls, want %d", r.calls, tt.wantCalls)
			}
			if !slices.Equal(r.reasons, []GiveUp{GiveUpAttemptsExhausted}) {
				t.Errorf("give-ups %v, want [%v]", r.reasons, GiveUpAttemptsExhausted)
			}
		})
	}
}

func TestDoStopsAtSuccessOrNonRetryable(t *testing.T) {
	invalid := status.Error(codes.InvalidArgument, "bad card")
	for _, tt := range []struct {
		name      string
		errs      []error // the answer of each attempt, the last one repeated
		wantCalls int
		wantErr   error
	}{
		{"first succeeds", []error{nil}, 1, nil},
		{"second succeeds", []error{errUnavailable, nil}, 2, nil},
		{"business error", []error{invalid}, 1, invalid},
		{"business error after a retry", []error{errUnavailable, invalid}, 2, invalid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRecord()
			p := Policy{MaxAttempts: 5, Hooks: r.hooks()}
			err := p.Do(t.Context(), func(_ context.Context, attempt int) error {
				r.calls++
				return tt.errs[min(attempt, len(tt.errs))-1]
			})
			if err != tt.wantErr || r.calls != tt.wantCalls {
				t.Errorf("Do: %d calls returning %v, want %d returning %v", r.calls, err, tt.wantCalls, tt.wantErr)
			}
			if len(r.reasons) != 0 {
				t.Errorf("give-ups %v, want none", r.reasons)
			}
		})
	}
}

// The naive policy retries timeouts and outages 3 times, all at once.
func TestNaive(t *testing.T) {
	for _, err := range []error{
		status.Error(codes.DeadlineExceeded, "deadline exceeded"),
		context.DeadlineExceeded,
		errUnavailable,
	} {
		t.Run(err.Error(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// The naive caller is blind to this deadline, and well
				// inside it anyway.
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				r := newRecord()
				p := Naive()
				p.Hooks = r.hooks()
				if got := p.Do(ctx, r.failing(err)); got != err {
					t.Errorf("Do returned %v, want %v", got, err)
				}
				if want := []time.Duration{0, 0, 0}; !slices.Equal(r.times, want) {
					t.Errorf("attempts at %v, want %v: 3 attempts, no backoff", r.times, want)
				}
				if !slices.Equal(r.reasons, []GiveUp{GiveUpAttemptsExhausted}) {
					t.Errorf("give-ups %v, want [%v]", r.reasons, GiveUpAttemptsExhausted)
				}
			})
		})
	}
}

// The retry storm: naive retries at every layer multiply, budgeted
// retries at one layer add up.
func TestAmplification(t *testing.T) {
	budgeted := Policy{MaxAttempts: 3, BudgetAware: true}
	once := Policy{}
	for _, tt := range []struct {
		name   string
		layers []Policy // outermost first
		want   int      // calls to the dependency per outer call
	}{
		{"naive, one layer", []Policy{Naive()}, 3},
		{"naive, two layers", []Policy{Naive(), Naive()}, 9},
		{"naive, three layers", []Policy{Naive(), Naive(), Naive()}, 27},
		{"budgeted, retries at one layer", []Policy{once, once, budgeted}, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			var call func(ctx context.Context, layer int) error
			call = func(ctx context.Context, layer int) error {
				if layer == len(tt.layers) {
					calls++ // the dependency itself
					return errUnavailable
				}
				return tt.layers[layer].Do(ctx, func(ctx context.Context, _ int) error {
					return call(ctx, layer+1)
				})
			}
			if err := call(t.Context(), 0); !errors.Is(err, errUnavailable) {
				t.Errorf("got %v, want %v", err, errUnavailable)
			}
			if calls != tt.want {
				t.Errorf("the dependency was called %d times per request, want %d", calls, tt.want)
			}
		})
	}
}

// The backoffs grow as base × 2^(n−1) until MaxBackoff, jittered by Rand.
func TestDoWaitsTheBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecord()
		p := Policy{
			MaxAttempts: 5,
			BaseBackoff: 10 * time.Millisecond,
			MaxBackoff:  25 * time.Millisecond,
			Rand:        fixed(0.5),
		}
		_ = p.Do(context.Background(), r.failing(errUnavailable))
		// Waits of 5, 10, 12.5 (capped) and 12.5ms.
		want := []time.Duration{0, 5 * time.Millisecond, 15 * time.Millisecond, 27500 * time.Microsecond, 40 * time.Millisecond}
		if !slices.Equal(r.times, want) {
			t.Errorf("attempts at %v, want %v", r.times, want)
		}
	})
}

// A context that ends during the backoff ends the wait at once.
func TestDoContextDoneDuringBackoff(t *testing.T) {
	for _, tt := range []struct {
		name    string
		ctx     func() (context.Context, context.CancelFunc)
		wantErr error
		wantAt  time.Duration
	}{
		{
			name: "canceled",
			ctx: func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(100*time.Millisecond, cancel)
				return ctx, cancel
			},
			wantErr: context.Canceled,
			wantAt:  100 * time.Millisecond,
		},
		{
			// Without BudgetAware, nothing stops Do from sleeping past the
			// deadline; the timer still honours it.
			name: "deadline passes",
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 150*time.Millisecond)
			},
			wantErr: context.DeadlineExceeded,
			wantAt:  150 * time.Millisecond,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := tt.ctx()
				defer cancel()
				budget := NewBudget(0.1, 10)
				r := newRecord()
				p := Policy{
					MaxAttempts: 3,
					BaseBackoff: time.Second, // a 500ms wait
					Rand:        fixed(0.5),
					Budget:      budget,
					Hooks:       r.hooks(),
				}
				err := p.Do(ctx, r.failing(errUnavailable))
				if !errors.Is(err, tt.wantErr) || !errors.Is(err, errUnavailable) {
					t.Errorf("Do returned %v, want an error matching %v and %v", err, tt.wantErr, errUnavailable)
				}
				if took := time.Since(r.start); took != tt.wantAt {
					t.Errorf("Do returned after %v, want %v", took, tt.wantAt)
				}
				if r.calls != 1 || !slices.Equal(r.reasons, []GiveUp{GiveUpContextDone}) {
					t.Errorf("%d calls, give-ups %v; want 1 call, [%v]", r.calls, r.reasons, GiveUpContextDone)
				}
				// The token of the retry that was not made is given back.
				if got := budget.Tokens(); got != 10 {
					t.Errorf("retry budget holds %v tokens, want 10", got)
				}
			})
		})
	}
}

// A context already done when an attempt fails stops the retries, and an
// attempt that already reports the context's end is returned as is.
func TestDoContextAlreadyDone(t *testing.T) {
	ctx, cancel := context.WithCancelCause(t.Context())
	cause := errors.New("client went away")
	cancel(cause)

	r := newRecord()
	p := Naive()
	p.Hooks = r.hooks()
	err := p.Do(ctx, r.failing(errUnavailable))
	if !errors.Is(err, context.Canceled) || !errors.Is(err, cause) || !errors.Is(err, errUnavailable) {
		t.Errorf("Do returned %v, want an error matching context.Canceled, its cause and the last error", err)
	}
	if r.calls != 1 || !slices.Equal(r.reasons, []GiveUp{GiveUpContextDone}) {
		t.Errorf("%d calls, give-ups %v; want 1 call, [%v]", r.calls, r.reasons, GiveUpContextDone)
	}

	ctxErr := fmt.Errorf("reserve: %w", context.Canceled)
	if err := p.Do(ctx, func(context.Context, int) error { return ctxErr }); err != ctxErr {
		t.Errorf("Do returned %v, want %v unchanged", err, ctxErr)
	}
}

func TestHooks(t *testing.T) {
	type ctxKey struct{}
	for _, tt := range []struct {
		name   string
		policy Policy
		errs   []error // the answer of each attempt, the last one repeated
		want   []string
	}{
		{
			name:   "success at once",
			policy: Policy{MaxAttempts: 3},
			errs:   []error{nil},
			want:   []string{"attempt 1"},
		},
		{
			name:   "success on the third attempt",
			policy: Policy{MaxAttempts: 3},
			errs:   []error{errUnavailable, errUnavailable, nil},
			want:   []string{"attempt 1", "attempt 2", "attempt 3"},
		},
		{
			name:   "attempts exhausted",
			policy: Policy{MaxAttempts: 3},
			errs:   []error{errUnavailable},
			want:   []string{"attempt 1", "attempt 2", "attempt 3", "give up after 3: attempts_exhausted"},
		},
		{
			name:   "not retryable: no give-up reported",
			policy: Policy{MaxAttempts: 3},
			errs:   []error{status.Error(codes.NotFound, "no such order")},
			want:   []string{"attempt 1"},
		},
		{
			name:   "retry budget empty",
			policy: Policy{MaxAttempts: 3, Budget: NewBudget(0.1, 1)},
			errs:   []error{errUnavailable},
			want:   []string{"attempt 1", "attempt 2", "give up after 2: retry_budget_empty"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.WithValue(t.Context(), ctxKey{}, tt.name)
			var got []string
			checkCtx := func(hook string, c context.Context) {
				if c.Value(ctxKey{}) != tt.name {
					t.Errorf("%s got another context than the caller's", hook)
				}
			}
			p := tt.policy
			p.Hooks = Hooks{
				OnAttempt: func(c context.Context, attempt int) {
					checkCtx("OnAttempt", c)
					got = append(got, fmt.Sprint("attempt ", attempt))
				},
				OnGiveUp: func(c context.Context, attempt int, reason GiveUp) {
					checkCtx("OnGiveUp", c)
					got = append(got, fmt.Sprintf("give up after %d: %s", attempt, reason))
				},
			}
			_ = p.Do(ctx, func(_ context.Context, attempt int) error {
				if n := len(got); n == 0 || got[n-1] != fmt.Sprint("attempt ", attempt) {
					t.Errorf("attempt %d ran without its OnAttempt first", attempt)
				}
				return tt.errs[min(attempt, len(tt.errs))-1]
			})
			if !slices.Equal(got, tt.want) {
				t.Errorf("hooks saw\n\t%q\nwant\n\t%q", got, tt.want)
			}
		})
	}
}
