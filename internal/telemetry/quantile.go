package telemetry

import (
	"math"
	"sort"
	"time"
)

// HopStats are one dependency's calls as the hop histogram has them so
// far: how many were made, the share that ran into the call's own cap,
// and the p99 of their durations.
type HopStats struct {
	Calls    uint64
	TimedOut float64
	P99      time.Duration
}

// Hop returns dep's HopStats over every call made (any outcome but
// skipped: a skipped call took no time), from this service's registry.
// With no call yet, Calls is zero.
func (m *Metrics) HopStats(dep string) HopStats {
	if m == nil {
		return HopStats{}
	}
	families, err := m.registry.Gather()
	if err != nil {
		return HopStats{}
	}
	buckets := map[float64]uint64{}
	var total, timedOut uint64
	for _, f := range families {
		if f.GetName() != NameHopDuration {
			continue
		}
		for _, metric := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range metric.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels[labelDep] != dep || labels[labelOutcome] == "skipped" {
				continue
			}
			h := metric.GetHistogram()
			total += h.GetSampleCount()
			if labels[labelOutcome] == "timeout" {
				timedOut += h.GetSampleCount()
			}
			for _, b := range h.GetBucket() {
				buckets[b.GetUpperBound()] += b.GetCumulativeCount()
			}
		}
	}
	if total == 0 {
		return HopStats{}
	}
	return HopStats{Calls: total, TimedOut: float64(timedOut) / float64(total), P99: quantile(0.99, buckets, total)}
}

// quantile is the q-quantile of a cumulative histogram, interpolated
// linearly inside its bucket as Prometheus' histogram_quantile does; in
// the last, open bucket it is the highest finite bound.
func quantile(q float64, cumulative map[float64]uint64, total uint64) time.Duration {
	bounds := make([]float64, 0, len(cumulative))
	for b := range cumulative {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	rank := q * float64(total)
	lower, below := 0.0, uint64(0)
	for _, b := range bounds {
		n := cumulative[b]
		if float64(n) >= rank {
			if math.IsInf(b, 1) {
				return seconds2d(lower)
			}
			inBucket := n - below
			if inBucket == 0 {
				return seconds2d(b)
			}
			return seconds2d(lower + (b-lower)*(rank-float64(below))/float64(inBucket))
		}
		lower, below = b, n
	}
	return seconds2d(lower)
}

func seconds2d(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
