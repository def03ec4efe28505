package driver

import (
	"context"
	"math"

	dto "github.com/prometheus/client_model/go"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/loadtest"
)

// Families are one scrape of a /metrics endpoint, by family name.
type Families map[string]*dto.MetricFamily

// Scrape reads and parses the /metrics of the service c calls.
func Scrape(ctx context.Context, c admin.Client) (Families, error) {
	fams, err := c.Metrics(ctx)
	return Families(fams), err
}

// Sum adds up a counter or gauge family's series whose labels include
// every label in match (nil matches all). Histograms add their counts.
func (f Families) Sum(name string, match map[string]string) float64 {
	fam, ok := f[name]
	if !ok {
		return 0
	}
	var total float64
	for _, m := range fam.GetMetric() {
		if !labelsMatch(m, match) {
			continue
		}
		switch {
		case m.GetCounter() != nil:
			total += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			total += m.GetGauge().GetValue()
		case m.GetHistogram() != nil:
			total += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return total
}

// ByLabel adds up a family's series by the value of one label.
func (f Families) ByLabel(name, label string) map[string]float64 {
	out := map[string]float64{}
	fam, ok := f[name]
	if !ok {
		return out
	}
	for _, m := range fam.GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() != label {
				continue
			}
			switch {
			case m.GetCounter() != nil:
				out[lp.GetValue()] += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[lp.GetValue()] += m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// Count adds up the series of a counter family, or the counts of a
// histogram family, whose label named label has the value value, by the
// value of the label by (mercado_hop_duration_seconds' calls that ended
// in a timeout, by dep).
func (f Families) Count(name, label, value, by string) map[string]float64 {
	out := map[string]float64{}
	fam, ok := f[name]
	if !ok {
		return out
	}
	for _, m := range fam.GetMetric() {
		if !labelsMatch(m, map[string]string{label: value}) {
			continue
		}
		for _, lp := range m.GetLabel() {
			if lp.GetName() != by {
				continue
			}
			switch {
			case m.GetCounter() != nil:
				out[lp.GetValue()] += m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				out[lp.GetValue()] += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// Histograms adds up a histogram family's series by the value of one
// label (a hop's outcomes together, by dep): cumulative counts by upper
// bound, +Inf last.
func (f Families) Histograms(name, label string) map[string]loadtest.Histogram {
	out := map[string]loadtest.Histogram{}
	fam, ok := f[name]
	if !ok {
		return out
	}
	for _, m := range fam.GetMetric() {
		h := m.GetHistogram()
		if h == nil {
			continue
		}
		var one loadtest.Histogram
		for _, b := range h.GetBucket() {
			// The text format's own +Inf bucket, when the parser keeps
			// it, is the one appended below.
			if math.IsInf(b.GetUpperBound(), 1) {
				continue
			}
			one.Bounds = append(one.Bounds, b.GetUpperBound())
			one.Counts = append(one.Counts, float64(b.GetCumulativeCount()))
		}
		one.Bounds = append(one.Bounds, math.Inf(1))
		one.Counts = append(one.Counts, float64(h.GetSampleCount()))
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label {
				out[lp.GetValue()] = out[lp.GetValue()].Add(one)
			}
		}
	}
	return out
}

func labelsMatch(m *dto.Metric, match map[string]string) bool {
	for k, v := range match {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == k && lp.GetValue() == v {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
