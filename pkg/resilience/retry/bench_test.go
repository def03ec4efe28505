package retry

import (
	"context"
	"testing"
	"time"
)

// BenchmarkDo measures what the retry layer adds to a call that succeeds
// at once, with every budgeted mechanism on: the target is 0 allocations.
func BenchmarkDo(b *testing.B) {
	p := Policy{
		MaxAttempts: 3,
		BaseBackoff: 25 * time.Millisecond,
		MaxBackoff:  250 * time.Millisecond,
		BudgetAware: true,
		Margin:      20 * time.Millisecond,
		Floor:       50 * time.Millisecond,
		Budget:      NewBudget(0.1, 10),
		Hooks: Hooks{
			OnAttempt: func(context.Context, int) {},
			OnGiveUp:  func(context.Context, int, GiveUp) {},
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	b.Cleanup(cancel)
	ok := func(context.Context, int) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Do(ctx, ok); err != nil {
			b.Fatal(err)
		}
	}
}
