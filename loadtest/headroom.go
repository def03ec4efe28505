package loadtest

import (
	"encoding/json"
	"math"
	"sort"
)

// Histogram is one hop's duration histogram read from /metrics: counts
// cumulative by upper bound (seconds), ascending, the last bound +Inf.
type Histogram struct {
	Bounds []float64
	Counts []float64
}

// histogramJSON is a Histogram as JSON carries it: JSON has no +Inf, so
// the last bound is left out, and the counts keep its count last.
type histogramJSON struct {
	Bounds []float64 `json:"bounds"`
	Counts []float64 `json:"counts"`
}

// MarshalJSON writes h without its +Inf bound.
func (h Histogram) MarshalJSON() ([]byte, error) {
	out := histogramJSON{Bounds: h.Bounds, Counts: h.Counts}
	if n := len(h.Bounds); n > 0 && math.IsInf(h.Bounds[n-1], 1) {
		out.Bounds = h.Bounds[:n-1]
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON wrote, its +Inf bound put back.
func (h *Histogram) UnmarshalJSON(b []byte) error {
	var in histogramJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	if len(in.Counts) == len(in.Bounds)+1 {
		in.Bounds = append(in.Bounds, math.Inf(1))
	}
	*h = Histogram(in)
	return nil
}

// Add folds o, with the same bounds, into h (a hop's outcomes together).
func (h Histogram) Add(o Histogram) Histogram {
	if len(h.Bounds) == 0 {
		return Histogram{Bounds: append([]float64(nil), o.Bounds...), Counts: append([]float64(nil), o.Counts...)}
	}
	out := Histogram{Bounds: h.Bounds, Counts: append([]float64(nil), h.Counts...)}
	for i := range out.Counts {
		if i < len(o.Counts) {
			out.Counts[i] += o.Counts[i]
		}
	}
	return out
}

// Since is what h counted after before: each bucket's growth.
func (h Histogram) Since(before Histogram) Histogram {
	out := Histogram{Bounds: h.Bounds, Counts: append([]float64(nil), h.Counts...)}
	for i := range out.Counts {
		if i < len(before.Counts) {
			out.Counts[i] -= before.Counts[i]
		}
	}
	return out
}

// Total is how many observations h counted (its +Inf bucket); 0 for an
// empty histogram.
func (h Histogram) Total() float64 {
	if len(h.Counts) == 0 {
		return 0
	}
	return h.Counts[len(h.Counts)-1]
}

// Quantile is Prometheus' histogram_quantile over h: the bucket holding
// rank q × total, interpolated linearly inside it (from 0 in the first
// bucket); a rank in the +Inf bucket gives the highest finite bound. NaN
// when h counted nothing.
func (h Histogram) Quantile(q float64) float64 {
	n := len(h.Counts)
	if n < 2 || n != len(h.Bounds) || !math.IsInf(h.Bounds[n-1], 1) || h.Counts[n-1] <= 0 {
		return math.NaN()
	}
	rank := q * h.Counts[n-1]
	b := sort.Search(n-1, func(i int) bool { return h.Counts[i] >= rank })
	if b == n-1 {
		return h.Bounds[n-2]
	}
	start, below := 0.0, 0.0
	if b > 0 {
		start, below = h.Bounds[b-1], h.Counts[b-1]
	}
	in := h.Counts[b] - below
	if in <= 0 {
		return h.Bounds[b]
	}
	return start + (h.Bounds[b]-start)*(rank-below)/in
}

// headroomMS is a hop's headroom over a span, computed as the recording
// rule mercado:hop_headroom_seconds (deploy/prometheus/alerts.yml) does
// over its window: the hop's cap minus the p99 of the calls it made in
// the span, in milliseconds. ok is false for a hop without a cap or
// without calls.
func headroomMS(capSeconds float64, before, after Histogram) (ms float64, ok bool) {
	if capSeconds <= 0 {
		return 0, false
	}
	p99 := after.Since(before).Quantile(0.99)
	if math.IsNaN(p99) {
		return 0, false
	}
	return (capSeconds - p99) * 1000, true
}
