package telemetry

import (
	"context"
	"testing"
	"time"
)

// The recording methods run on every request. These benchmarks measure the
// steady state: label values already seen, as in a running service.

func BenchmarkHop(b *testing.B) {
	m := newMetrics(b, "orders")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		m.Hop(ctx, "payments", 250*time.Millisecond, "ok")
	}
}

func BenchmarkSkipped(b *testing.B) {
	m := newMetrics(b, "orders")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		m.Skipped(ctx, ReasonInsufficientBudget)
	}
}

func BenchmarkArrival(b *testing.B) {
	m := newMetrics(b, "orders")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		m.Arrival(ctx, checkout, 800*time.Millisecond, true)
	}
}

// BenchmarkHopParallel records from every P at once, as concurrent
// requests do: the label cache is read without a lock.
func BenchmarkHopParallel(b *testing.B) {
	m := newMetrics(b, "orders")
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Hop(ctx, "payments", 250*time.Millisecond, "ok")
		}
	})
}
