package console

import (
	"maps"
	"slices"
	"time"

	"github.com/mercado-lab/mercado/loadtest"
)

// Point is one second of one class, as the charts draw it.
type Point struct {
	// T is when the second began, Unix milliseconds.
	T    int64 `json:"t"`
	Sent int   `json:"sent"`
	// Good are the answers that succeeded within the deadline: the
	// goodput.
	Good  int     `json:"good"`
	P50MS float64 `json:"p50_ms"`
	P99MS float64 `json:"p99_ms"`
}

// second is one class's answers in one second.
type second struct {
	sent, good int
	latencies  []time.Duration
}

// bySecond is one class's answers, by the second each is filed under
// (its start, Unix ms).
type bySecond map[int64]*second

// add files one answer under the second sec, and forgets the seconds
// long out of the charts' window.
func (m bySecond) add(sec int64, good bool, latency time.Duration) {
	b := m[sec]
	if b == nil {
		b = &second{}
		m[sec] = b
		for old := range m {
			if sec-old > (2 * window).Milliseconds() {
				delete(m, old)
			}
		}
	}
	b.sent++
	if good {
		b.good++
	}
	b.latencies = append(b.latencies, latency)
}

// since copies the seconds from from (Unix ms) on: their points are
// made from the copy, outside the lock that guards m, which the answers
// being filed wait on.
func (m bySecond) since(from int64) map[int64]second {
	out := map[int64]second{}
	for sec, b := range m {
		if sec >= from {
			out[sec] = second{sent: b.sent, good: b.good, latencies: slices.Clone(b.latencies)}
		}
	}
	return out
}

// points are secs' points, in order.
func points(secs map[int64]second) []Point {
	out := []Point{}
	for _, sec := range slices.Sorted(maps.Keys(secs)) {
		b := secs[sec]
		slices.Sort(b.latencies)
		out = append(out, Point{T: sec, Sent: b.sent, Good: b.good,
			P50MS: msOf(loadtest.Percentile(b.latencies, 50)), P99MS: msOf(loadtest.Percentile(b.latencies, 99))})
	}
	return out
}

func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
