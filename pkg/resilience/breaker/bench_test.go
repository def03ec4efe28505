package breaker

import (
	"testing"
)

// BenchmarkDo is the cost the breaker adds to every call in the common
// case: closed, and the call succeeds.
func BenchmarkDo(b *testing.B) {
	br := New(Settings{Name: "bench"})
	fn := func() error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		if err := br.Do(fn); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDoFailure is a closed breaker whose calls fail, with a window
// too large to trip: Classify runs on a real status error.
func BenchmarkDoFailure(b *testing.B) {
	br := New(Settings{Name: "bench", FailureRatio: 2})
	fn := func() error { return errDown }
	b.ReportAllocs()
	for b.Loop() {
		_ = br.Do(fn)
	}
}

// BenchmarkDoParallel is the closed breaker under contention: every call
// takes the breaker's mutex twice.
func BenchmarkDoParallel(b *testing.B) {
	br := New(Settings{Name: "bench"})
	fn := func() error { return nil }
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = br.Do(fn)
		}
	})
}
