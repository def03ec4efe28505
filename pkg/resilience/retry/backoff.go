package retry

import (
	"math"
	"time"
)

// Backoff returns the wait before retry n (n = 1 for the second attempt)
// with full jitter: r × min(maxBackoff, base × 2^(n−1)), where r is a random
// number in [0, 1). The result lies in [0, ceiling) for a positive ceiling,
// and is 0 when base is not positive (retry at once). A maxBackoff that is
// not positive means no ceiling but the largest Duration. n below 1 counts
// as 1, and r outside [0, 1) is clamped into it.
//
// Full jitter spreads the retries of callers that failed together over the
// whole window, instead of sending them back in one wave.
func Backoff(n int, base, maxBackoff time.Duration, r float64) time.Duration {
	if base <= 0 {
		return 0
	}
	if maxBackoff <= 0 {
		maxBackoff = math.MaxInt64
	}
	ceiling := maxBackoff
	if n < 1 {
		n = 1
	}
	// base × 2^(n−1) without overflowing: stop doubling at the ceiling.
	if shift := n - 1; shift < 63 && base <= maxBackoff>>shift {
		ceiling = base << shift
	}
	if !(r > 0) { // also catches NaN
		return 0
	}
	d := time.Duration(r * float64(ceiling))
	if d >= ceiling { // r ≥ 1, or float rounding of r close to 1
		d = ceiling - 1
	}
	return d
}
