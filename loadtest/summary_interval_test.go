package loadtest

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The interval holds the true p99 about 95% of the time, and narrows as
// draws grow: latencies drawn from an exponential distribution of mean
// 10 ms, whose p99 is 10 ms × ln 100 ≈ 46.05 ms.
func TestPercentileIntervalCoversTheTruePercentile(t *testing.T) {
	const truth = 46051701 * time.Nanosecond
	rng := rand.New(rand.NewPCG(1, 2))
	draw := func(n int) []time.Duration {
		xs := make([]time.Duration, n)
		for i := range xs {
			xs[i] = time.Duration(rng.ExpFloat64() * float64(10*time.Millisecond))
		}
		slices.Sort(xs)
		return xs
	}
	const trials = 400
	covered := 0
	var width1k, width10k time.Duration
	for range trials {
		lo, hi := PercentileInterval(draw(1000), 99)
		if lo <= truth && truth <= hi {
			covered++
		}
		width1k += (hi - lo) / trials
		lo, hi = PercentileInterval(draw(10000), 99)
		width10k += (hi - lo) / trials
	}
	if share := float64(covered) / trials; share < 0.9 || share > 0.99 {
		t.Errorf("the interval held the true p99 in %.1f%% of %d draws of 1,000, want about 95%%", 100*share, trials)
	}
	if width10k*2 > width1k {
		t.Errorf("mean width %v with 10,000 draws, %v with 1,000: want it to narrow (about √10 times)", width10k, width1k)
	}
}

func TestPercentileIntervalEdges(t *testing.T) {
	if lo, hi := PercentileInterval(nil, 99); lo != 0 || hi != 0 {
		t.Errorf("no draws: %v–%v, want 0–0", lo, hi)
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	if lo, hi := PercentileInterval(hundred, 99); lo != 97*time.Millisecond || hi != 100*time.Millisecond {
		t.Errorf("a hundred draws' p99: %v–%v, want the 97th value to the largest", lo, hi)
	}
}
