package retry

import (
	"math"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	const ms = time.Millisecond
	for _, tt := range []struct {
		n         int
		base, max time.Duration
		r         float64
		want      time.Duration
	}{
		{1, 100 * ms, time.Second, 0.5, 50 * ms},
		{2, 100 * ms, time.Second, 0.5, 100 * ms},
		{3, 100 * ms, time.Second, 0.5, 200 * ms},
		{4, 100 * ms, time.Second, 0.5, 400 * ms},
		{5, 100 * ms, time.Second, 0.5, 500 * ms}, // capped at 1s
		{60, 100 * ms, time.Second, 0.5, 500 * ms},
		{3, 100 * ms, time.Second, 0, 0},
		{0, 100 * ms, time.Second, 0.5, 50 * ms},  // n < 1 counts as 1
		{1, 0, time.Second, 0.5, 0},               // no base: retry at once
		{3, 100 * ms, 0, 0.5, 200 * ms},           // no ceiling
		{1, 100 * ms, time.Second, 1, 100*ms - 1}, // r clamped below 1
		{1, 100 * ms, time.Second, -1, 0},
		{1, 100 * ms, time.Second, math.NaN(), 0},
	} {
		if got := Backoff(tt.n, tt.base, tt.max, tt.r); got != tt.want {
			t.Errorf("Backoff(%d, %v, %v, %v) = %v, want %v", tt.n, tt.base, tt.max, tt.r, got, tt.want)
		}
	}
}

// Full jitter: every backoff lies in [0, min(max, base × 2^(n−1))),
// whatever n and r, without overflow.
func TestBackoffBounds(t *testing.T) {
	rs := []float64{0, 1e-9, 0.25, 0.5, 0.75, 0.999, math.Nextafter(1, 0)}
	for _, limits := range []struct{ base, max time.Duration }{
		{time.Millisecond, 250 * time.Millisecond},
		{25 * time.Millisecond, time.Second},
		{time.Second, 0}, // no ceiling: bounded by the largest Duration
		{1, math.MaxInt64},
	} {
		for n := 1; n <= 100; n++ {
			ceiling := limits.max
			if ceiling <= 0 {
				ceiling = math.MaxInt64
			}
			if n <= 63 {
				if exp := float64(limits.base) * math.Exp2(float64(n-1)); exp < float64(ceiling) {
					ceiling = time.Duration(exp)
				}
			}
			for _, r := range rs {
				got := Backoff(n, limits.base, limits.max, r)
				if got < 0 || got >= ceiling {
					t.Fatalf("Backoff(%d, %v, %v, %v) = %v, want in [0, %v)", n, limits.base, limits.max, r, got, ceiling)
				}
			}
		}
	}
}
