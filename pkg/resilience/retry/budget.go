package retry

import (
	"math"
	"sync"
)

// milli is the number of stored units per token. Like gRPC's retry
// throttling, the budget counts in thousandths of a token, so that ten
// deposits of 0.1 make exactly one token (ten float64 additions of 0.1 make
// 0.9999999999999999, one retry short).
const milli = 1000

// limit bounds ratio and max so that balance + ratio never overflows: a
// budget that large is unlimited in practice.
const limit = math.MaxInt64 / 4

// Budget is a retry budget: a token bucket that caps retries at a fraction
// of the calls made, so that retries cannot multiply the load on a
// dependency that is already failing. It is safe for concurrent use; share
// one Budget per dependency between all the calls to it.
//
// Every first attempt deposits ratio tokens, every retry withdraws one, and
// a retry is refused when less than one token is left. The balance starts
// full, at max, and never goes above it. Over any run of R first attempts,
// retries ≤ ratio × R + max: with ratio 0.1 and max 10, retries add at most
// 10% to the load, plus a burst of 10.
//
// The zero Budget holds no tokens and allows no retries; use [NewBudget].
type Budget struct {
	mu         sync.Mutex
	ratio, max int64 // in thousandths of a token
	balance    int64 // in thousandths of a token
}

// NewBudget returns a full budget that earns ratio tokens per first attempt
// and holds at most maxTokens. Both are kept to three decimal places;
// negative values count as zero. A maxTokens below 1 allows no retries.
func NewBudget(ratio, maxTokens float64) *Budget {
	b := &Budget{ratio: thousandths(ratio), max: thousandths(maxTokens)}
	b.balance = b.max
	return b
}

func thousandths(f float64) int64 {
	switch {
	case !(f > 0): // also NaN
		return 0
	case f >= limit/milli:
		return limit
	}
	return int64(math.Round(f * milli))
}

// Reset refills the budget to its maximum: the lab resets retry budgets
// when it switches modes, so one phase does not leak into the next.
func (b *Budget) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.balance = b.max
}

// Tokens reports the balance, for metrics and tests.
func (b *Budget) Tokens() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return float64(b.balance) / milli
}

// deposit credits a first attempt.
func (b *Budget) deposit() { b.credit(b.ratio) }

// refund gives back the token of a retry that was not made after all.
func (b *Budget) refund() { b.credit(milli) }

func (b *Budget) credit(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.balance = min(b.max, b.balance+n)
}

// Withdraw takes one token for a retry, or reports that none is left. A
// hedge (a second attempt sent before the first has failed) pays with one
// too: it adds load as a retry does.
func (b *Budget) Withdraw() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.balance < milli {
		return false
	}
	b.balance -= milli
	return true
}
