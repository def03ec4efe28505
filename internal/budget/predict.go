package budget

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/mercado-lab/mercado/internal/faults"
)

// Predicting a checkout's latency from its calls' distributions. The plan
// adds p99s along a seq and takes their maximum across a par; neither is
// the p99 of the whole. A sum's p99 is below the sum of the p99s (every
// call is rarely slow at once), and the maximum of two calls is slower
// than either, so its p99 is above the larger p99. Predict composes the
// distributions themselves, on a grid:
//
//   - a seq convolves its items: each starts when the one before ends;
//   - a par's branches start together, and it ends when the slowest ends,
//     or when the first critical failure cancels the rest; branches are
//     taken as independent;
//   - a critical call that outlasts its timeout fails the request then; an
//     optional one gives its default then; deferred and fire-forward calls
//     take no time of the request's;
//   - each call's timeout is the mode's: naive, its cap; budgeted,
//     min(cap, target − elapsed − margin), and no call under the floor.
//
// It does not know queueing (calls that wait for each other), retries, or
// the time a service spends between calls beyond edge and own: where a run
// disagrees with it, one of those is why.

// gridBins is how many bins the target is cut into; the grid runs to
// horizonTargets targets, and everything later falls into its last bin.
const (
	gridBins       = 2000
	horizonTargets = 3
)

// ModePrediction is the predicted checkout for one mode.
type ModePrediction struct {
	Mode string `json:"mode"`
	// P50Ms, P99Ms and P999Ms are the answers' latency percentiles, every
	// answer counted (a failure's too, once the own work after it is
	// done). Past is set when the p99.9 is beyond the grid's horizon
	// (three targets): the figures there are the horizon.
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	P999Ms float64 `json:"p999_ms"`
	Past   bool    `json:"past_horizon,omitempty"`
	// MissShare is the share of checkouts that do not get a good answer
	// within the target: failed by a timeout or the floor, or answered
	// after it. FailedShare is the failed part alone.
	MissShare   float64 `json:"deadline_miss_share"`
	FailedShare float64 `json:"failed_share"`
}

// Prediction is what `mercado budget predict` prints.
type Prediction struct {
	TargetMs int64 `json:"target_ms"`
	// PlanP99Ms is the plan's arithmetic for the whole: edge + the
	// critical path's p99 (sum along seq, max across par) + own.
	PlanP99Ms int64            `json:"plan_p99_ms"`
	Modes     []ModePrediction `json:"modes"`
	// Assumptions name what the prediction took for calls the file
	// describes only in part.
	Assumptions []string `json:"assumptions"`
}

// In is the prediction for budgeted mode, which clips each call to the
// budget, or else for naive mode.
func (p Prediction) In(budgeted bool) ModePrediction {
	if budgeted {
		return p.Modes[1]
	}
	return p.Modes[0]
}

// Predict composes f's calls' distributions into the checkout's, for
// naive and budgeted mode. f must be valid (Validate). A call's
// distribution is its Measured histogram, else the log-normal of its P50
// and P99, else always its P99; its timeout is its Cap, else the plan's.
func Predict(f File) Prediction {
	caps := map[*Call]time.Duration{}
	allocate(&f.Graph, f.Available(), f.Margin, caps)
	for _, c := range f.Graph.Calls() {
		if c.Cap > 0 {
			caps[c] = c.Cap
		}
	}
	out := Prediction{
		TargetMs:    f.Target.Milliseconds(),
		PlanP99Ms:   (f.Edge + f.Own).Milliseconds() + length(&f.Graph, 0, edit{}).Milliseconds(),
		Assumptions: []string{},
	}
	for _, c := range f.Graph.Calls() {
		if c.Measured == nil && c.P50 == 0 && c.Criticality != Deferred && c.Criticality != FireForward {
			out.Assumptions = append(out.Assumptions, fmt.Sprintf("%s has no p50: taken to last its p99, %s, every time", c.Name, ms(c.P99)))
		}
	}
	for _, budgeted := range []bool{false, true} {
		m := model{file: f, caps: caps, budgeted: budgeted, step: max(f.Target/gridBins, 10*time.Microsecond)}
		m.n = int(horizonTargets*f.Target/m.step) + 1
		m.cdfs = map[*Call][]float64{}
		out.Modes = append(out.Modes, m.predict())
	}
	return out
}

// model evaluates the graph on a grid of step: bin j stands for the times
// within half a step of j·step, and the last bin for the horizon and past.
type model struct {
	file     File
	caps     map[*Call]time.Duration
	budgeted bool
	step     time.Duration
	n        int
	cdfs     map[*Call][]float64 // a call's CDF at each bin's upper edge
}

// outcome is the mass of the requests still going (ok) and failed (fail),
// by the bin in which their part of the graph ended.
type outcome struct{ ok, fail []float64 }

func (m *model) newOutcome() outcome {
	return outcome{ok: make([]float64, m.n), fail: make([]float64, m.n)}
}

func (m *model) bin(d time.Duration) int {
	return min(max(int(math.Round(float64(d)/float64(m.step))), 0), m.n-1)
}

func (m *model) predict() ModePrediction {
	start := make([]float64, m.n)
	start[m.bin(m.file.Edge)] = 1
	o := m.eval(&m.file.Graph, start)
	// The answer: the service's own work after the calls, then the way
	// back, whether the calls ended well or not.
	answers := make([]float64, m.n)
	own := m.bin(m.file.Own)
	var failed, late float64
	target := m.bin(m.file.Target)
	for j := range m.n {
		answers[min(j+own, m.n-1)] += o.ok[j] + o.fail[j]
		failed += o.fail[j]
		if j+own > target {
			late += o.ok[j]
		}
	}
	mode := "naive"
	if m.budgeted {
		mode = "budgeted"
	}
	p := ModePrediction{Mode: mode, MissShare: failed + late, FailedShare: failed}
	var past bool
	p.P50Ms, _ = m.quantile(answers, 0.5)
	p.P99Ms, _ = m.quantile(answers, 0.99)
	p.P999Ms, past = m.quantile(answers, 0.999)
	p.Past = past
	return p
}

// quantile interpolates the q quantile of mass in its bin, in ms; past is
// true when it falls in the last bin.
func (m *model) quantile(mass []float64, q float64) (msec float64, past bool) {
	var cum float64
	for j, x := range mass {
		if cum+x >= q && x > 0 {
			if j == m.n-1 {
				return float64(j) * float64(m.step) / float64(time.Millisecond), true
			}
			at := (float64(j) - 0.5 + (q-cum)/x) * float64(m.step)
			return max(at, 0) / float64(time.Millisecond), false
		}
		cum += x
	}
	return float64(m.n-1) * float64(m.step) / float64(time.Millisecond), true
}

// eval runs n for the requests whose mass by start bin is in.
func (m *model) eval(n *Node, in []float64) outcome {
	switch {
	case n.Call != nil:
		out := m.newOutcome()
		for i, mass := range in {
			if mass > 0 {
				m.call(n.Call, i, mass, out)
			}
		}
		return out
	case n.Par != nil:
		return m.par(n.Par, in)
	default:
		out := m.newOutcome()
		cur := in
		for i := range n.Seq {
			o := m.eval(&n.Seq[i], cur)
			for j, x := range o.fail {
				out.fail[j] += x
			}
			cur = o.ok
		}
		copy(out.ok, cur)
		return out
	}
}

// call adds to out what c does to mass starting in bin i.
func (m *model) call(c *Call, i int, mass float64, out outcome) {
	if c.Criticality == Deferred || c.Criticality == FireForward {
		out.ok[i] += mass
		return
	}
	limit := m.caps[c]
	if m.budgeted {
		left := m.file.Target - time.Duration(i)*m.step - m.file.Margin
		if left < m.file.Floor || left <= 0 {
			// Not started: a critical call fails the request at once,
			// an optional one gives its default.
			m.end(c, out, i, mass)
			return
		}
		if limit <= 0 || left < limit {
			limit = left
		}
	}
	// X's bin j is [(j − ½)·step, (j + ½)·step): cdf[j] is the CDF at
	// its upper edge. Past the horizon, the last bin takes the rest.
	cdf := m.cdf(c)
	end, cut := m.n-1-i, false
	if limit > 0 && m.bin(limit) < end {
		end, cut = m.bin(limit), true
	}
	below := 0.0
	for j := range end {
		out.ok[i+j] += mass * (cdf[j] - below)
		below = cdf[j]
	}
	if !cut {
		out.ok[i+end] += mass * (1 - below)
		return
	}
	within := c.cdf(limit)
	out.ok[i+end] += mass * (within - below)
	m.end(c, out, i+end, mass*(1-within))
}

// end is a call cut short in bin j: a critical one fails the request, an
// optional one gives its default and the request goes on.
func (m *model) end(c *Call, out outcome, j int, mass float64) {
	if c.Criticality == Optional {
		out.ok[j] += mass
		return
	}
	out.fail[j] += mass
}

// par runs the branches together from each start bin of in.
func (m *model) par(branches []Node, in []float64) outcome {
	out := m.newOutcome()
	for i, mass := range in {
		if mass <= 1e-12 {
			continue
		}
		point := make([]float64, m.n)
		point[i] = 1
		okAll := make([]float64, m.n)  // P(every branch done well by bin j)
		noFail := make([]float64, m.n) // P(no branch failed by bin j)
		for j := range m.n {
			okAll[j], noFail[j] = 1, 1
		}
		for k := range branches {
			o := m.eval(&branches[k], point)
			var ok, fail float64
			for j := range m.n {
				ok += o.ok[j]
				fail += o.fail[j]
				okAll[j] *= ok
				noFail[j] *= 1 - fail
			}
		}
		var prevOK, prevFail float64
		for j := i; j < m.n; j++ {
			out.ok[j] += mass * (okAll[j] - prevOK)
			out.fail[j] += mass * ((1 - noFail[j]) - prevFail)
			prevOK, prevFail = okAll[j], 1-noFail[j]
		}
	}
	return out
}

// cdf is c's CDF at each bin's upper edge, (j + ½)·step, computed once.
func (m *model) cdf(c *Call) []float64 {
	if v, ok := m.cdfs[c]; ok {
		return v
	}
	v := make([]float64, m.n)
	for j := range v {
		v[j] = c.cdf(time.Duration(j)*m.step + m.step/2)
	}
	m.cdfs[c] = v
	return v
}

// cdf is the probability c takes at most d.
func (c *Call) cdf(d time.Duration) float64 {
	switch {
	case c.Measured != nil:
		return histogramCDF(c.Measured, d)
	case c.P50 > 0:
		return faults.LogNormalCDF(c.P50, c.P99, d)
	case d >= c.P99:
		return 1
	default:
		return 0
	}
}

// histogramCDF reads a hop histogram of seconds as Quantile does: linear
// within each bucket, from 0 in the first, and everything past the
// highest finite bound at that bound.
func histogramCDF(h *dto.Histogram, d time.Duration) float64 {
	total := float64(h.GetSampleCount())
	if total == 0 {
		return 1
	}
	x := d.Seconds()
	lower, below := 0.0, 0.0
	for _, b := range h.Bucket {
		upper, count := b.GetUpperBound(), float64(b.GetCumulativeCount())
		if math.IsInf(upper, +1) {
			break
		}
		if x < upper {
			return (below + (count-below)*(x-lower)/(upper-lower)) / total
		}
		lower, below = upper, count
	}
	return 1
}

// WriteTable prints the prediction: the plan's arithmetic, then one row
// per mode, then the assumptions.
func (p Prediction) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "target %d ms; the plan's arithmetic (edge + the sum of p99s along seq, the max across par + own): %d ms\n\n", p.TargetMs, p.PlanP99Ms)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mode\tp50 ms\tp99 ms\tp99.9 ms\tmiss the target\tof which failed")
	for _, m := range p.Modes {
		past := ""
		if m.Past {
			past = "≥ "
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%s%.0f\t%.2f%%\t%.2f%%\n", m.Mode, m.P50Ms, m.P99Ms, past, m.P999Ms, 100*m.MissShare, 100*m.FailedShare)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for i, a := range p.Assumptions {
		if i == 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "- %s\n", a)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
