package bulkhead

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// A free slot: the cost every call pays when the pool is not the problem.
func BenchmarkAcquireRelease(b *testing.B) {
	p := New(Settings{Name: "bench", MaxWait: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Acquire(ctx); err != nil {
			b.Fatal(err)
		}
		p.Release()
	}
}

// Many goroutines at once: with room for all of them the cost is the lock;
// with fewer slots than goroutines, callers queue and slots change hands.
func BenchmarkAcquireReleaseParallel(b *testing.B) {
	procs := runtime.GOMAXPROCS(0)
	tests := []struct {
		name     string
		capacity int
	}{
		{"room_for_all", 4 * procs},
		{"default_capacity", DefaultCapacity},
		{"one_slot", 1},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			p := New(Settings{Name: "bench", Capacity: tt.capacity, MaxWait: -1})
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := p.Acquire(ctx); err != nil {
						b.Error(err)
						return
					}
					p.Release()
				}
			})
		})
	}
}
