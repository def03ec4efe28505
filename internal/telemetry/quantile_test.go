package telemetry

import (
	"context"
	"math"
	"testing"
	"time"
)

func TestQuantileInterpolatesInItsBucket(t *testing.T) {
	// 100 samples: 90 under 0.1 s, 10 between 0.1 and 0.5 s.
	h := map[float64]uint64{0.1: 90, 0.5: 100, math.Inf(1): 100}
	if got, want := quantile(0.99, h, 100), 460*time.Millisecond; got < want-time.Millisecond || got > want+time.Millisecond {
		t.Fatalf("p99 = %v, want %v (0.1 + 0.4 × 9/10)", got, want)
	}
	// Past the last finite bound it is that bound.
	if got := quantile(0.99, map[float64]uint64{0.1: 50, math.Inf(1): 100}, 100); got != 100*time.Millisecond {
		t.Fatalf("p99 in the open bucket = %v, want 100ms", got)
	}
}

func TestHopStatsCountsMadeCallsAndTimeouts(t *testing.T) {
	m, err := New("test")
	if err != nil {
		t.Fatal(err)
	}
	if s := m.HopStats("vendor"); s.Calls != 0 {
		t.Fatalf("no calls yet: %+v", s)
	}
	ctx := context.Background()
	for range 97 {
		m.Hop(ctx, "vendor", 10*time.Millisecond, "ok")
	}
	for range 3 {
		m.Hop(ctx, "vendor", 300*time.Millisecond, "timeout")
	}
	m.Hop(ctx, "vendor", 0, "skipped")
	m.Hop(ctx, "other", time.Second, "ok")
	s := m.HopStats("vendor")
	if s.Calls != 100 || math.Abs(s.TimedOut-0.03) > 1e-9 || s.P99 < 100*time.Millisecond || s.P99 > 300*time.Millisecond {
		t.Fatalf("stats = %+v, want 100 calls, 3%% timed out, p99 in the timeouts' bucket", s)
	}
}
