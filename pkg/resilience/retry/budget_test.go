package retry

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
)

// The retry budget's promise: over R first attempts, retries ≤ ratio × R
// + max, however hard the dependency fails.
func TestBudgetBoundsRetries(t *testing.T) {
	const (
		ratio, max = 0.1, 10
		requests   = 1000
	)
	budget := NewBudget(ratio, max)
	calls, empty := 0, 0
	p := Policy{
		MaxAttempts: 3,
		Budget:      budget,
		Hooks: Hooks{OnGiveUp: func(_ context.Context, _ int, reason GiveUp) {
			if reason == GiveUpRetryBudgetEmpty {
				empty++
			}
		}},
	}
	fail := func(context.Context, int) error { calls++; return errUnavailable }
	for range requests {
		_ = p.Do(t.Context(), fail)
	}
	retries := calls - requests
	t.Logf("%d requests: %d retries, %d refused by the retry budget", requests, retries, empty)
	if retries > ratio*requests+max {
		t.Errorf("%d retries, want at most %v", retries, ratio*requests+max)
	}
	// The budget is a limit, not a ban: it does let the earned retries through.
	if retries < ratio*requests {
		t.Errorf("%d retries, want at least %v", retries, ratio*requests)
	}
	if empty == 0 {
		t.Error("the retry budget never refused a retry")
	}

	// Reset refills: the next request gets both its retries at once.
	budget.Reset()
	if got := budget.Tokens(); got != max {
		t.Errorf("after Reset the budget holds %v tokens, want %v", got, max)
	}
	calls = 0
	_ = p.Do(t.Context(), fail)
	if calls != 3 {
		t.Errorf("after Reset: %d calls, want 3", calls)
	}
}

func TestNewBudget(t *testing.T) {
	for _, tt := range []struct {
		name        string
		ratio, max  float64
		deposits    int
		wantRetries int // retries allowed after draining, then deposits
	}{
		// Ten deposits of 0.1 make exactly one token (in float64 they
		// would make 0.9999999999999999).
		{"ten deposits of 0.1 buy one retry", 0.1, 10, 10, 1},
		{"nine do not", 0.1, 10, 9, 0},
		{"the cap holds", 0.5, 2, 100, 2},
		{"max below 1 allows no retry", 0.5, 0.5, 100, 0},
		{"negative ratio earns nothing", -1, 10, 100, 0},
		{"NaN ratio earns nothing", math.NaN(), 10, 100, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBudget(tt.ratio, tt.max)
			for b.Withdraw() {
			}
			for range tt.deposits {
				b.deposit()
			}
			got := 0
			for got < tt.wantRetries+1 && b.Withdraw() {
				got++
			}
			if got != tt.wantRetries {
				t.Errorf("%d retries allowed, want %d", got, tt.wantRetries)
			}
		})
	}

	var zero Budget
	if zero.Withdraw() {
		t.Error("the zero Budget allowed a retry")
	}

	// An absurd budget is unlimited in practice, and does not overflow.
	huge := NewBudget(math.Inf(1), math.Inf(1))
	before := huge.Tokens()
	huge.Withdraw()
	huge.deposit()
	huge.deposit()
	if got := huge.Tokens(); got != before || got < 1e12 {
		t.Errorf("an infinite budget holds %v tokens after a retry and two deposits, want %v", got, before)
	}
}

// Many goroutines share one Budget (run with -race): the bound holds.
func TestBudgetConcurrent(t *testing.T) {
	const (
		ratio, max = 0.1, 10
		goroutines = 8
		each       = 250
	)
	budget := NewBudget(ratio, max)
	p := Policy{MaxAttempts: 3, Budget: budget}
	var calls atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				_ = p.Do(t.Context(), func(context.Context, int) error {
					calls.Add(1)
					return errUnavailable
				})
				if tokens := budget.Tokens(); tokens < 0 || tokens > max {
					t.Errorf("the budget holds %v tokens, want within [0, %v]", tokens, max)
				}
			}
		})
	}
	wg.Wait()
	const requests = goroutines * each
	if retries := int(calls.Load()) - requests; retries > ratio*requests+max {
		t.Errorf("%d retries for %d requests, want at most %v", retries, requests, ratio*requests+max)
	}

	// Reset races with deposits and withdrawals without harm.
	wg.Go(func() {
		for range 1000 {
			budget.Reset()
		}
	})
	wg.Go(func() {
		for range 1000 {
			budget.deposit()
			if budget.Withdraw() {
				budget.refund()
			}
		}
	})
	wg.Wait()
	if tokens := budget.Tokens(); tokens < 0 || tokens > max {
		t.Errorf("the budget holds %v tokens, want within [0, %v]", tokens, max)
	}
}
