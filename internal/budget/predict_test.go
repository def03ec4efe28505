package budget

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/mercado-lab/mercado/internal/faults"
)

// simulate draws n checkouts of f's graph as Predict models them, each
// call from the log-normal faults draw from (Spec.Duration), and returns
// the naive answers' latencies in ms, sorted. Only seq, par and critical
// calls without caps in the way: what is compared is the composition.
func simulate(f File, n int) []float64 {
	var walk func(nd *Node) time.Duration
	walk = func(nd *Node) time.Duration {
		switch {
		case nd.Call != nil:
			if nd.Call.P50 == 0 {
				return nd.Call.P99
			}
			return faults.Spec{P50: nd.Call.P50, P99: nd.Call.P99}.Duration()
		case nd.Par != nil:
			var m time.Duration
			for i := range nd.Par {
				m = max(m, walk(&nd.Par[i]))
			}
			return m
		default:
			var s time.Duration
			for i := range nd.Seq {
				s += walk(&nd.Seq[i])
			}
			return s
		}
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(f.Edge+walk(&f.Graph)+f.Own) / float64(time.Millisecond)
	}
	slices.Sort(out)
	return out
}

func percentile(sorted []float64, q float64) float64 {
	return sorted[int(math.Ceil(q*float64(len(sorted))))-1]
}

// A chain's p99 is below the sum of its calls' p99s, and a fan-out's is
// above the larger of its branches': Predict's composition matches a
// simulation of the same calls within 2%.
func TestPredictComposesLikeASimulation(t *testing.T) {
	tests := []struct {
		name, yaml string
		// beside is how the prediction compares with the plan's
		// arithmetic: -1 below it, +1 above.
		beside int
	}{
		{"chain", `
target: 1200ms
edge: 10ms
own: 5ms
graph:
  seq:
    - call: {name: catalog, p50: 180ms, p99: 290ms, cap: 10s}
    - call: {name: payments, p50: 500ms, p99: 760ms, cap: 10s}
    - call: {name: shipping, p50: 100ms, p99: 250ms, cap: 10s}
`, -1},
		{"fan-out", `
target: 900ms
graph:
  seq:
    - par:
        - call: {name: catalog, p50: 240ms, p99: 300ms, cap: 10s}
        - call: {name: fraud, p50: 240ms, p99: 300ms, cap: 10s}
    - call: {name: payments, p99: 500ms, cap: 10s}
`, +1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := parse(t, tt.yaml)
			p := Predict(f)
			naive := p.Modes[0]
			sim := simulate(f, 200_000)
			for _, q := range []struct {
				name      string
				got, want float64
			}{{"p50", naive.P50Ms, percentile(sim, 0.5)}, {"p99", naive.P99Ms, percentile(sim, 0.99)}} {
				if math.Abs(q.got-q.want) > 0.02*q.want {
					t.Errorf("%s: predicted %.1f ms, simulated %.1f ms", q.name, q.got, q.want)
				}
			}
			if d := naive.P99Ms - float64(p.PlanP99Ms); float64(tt.beside)*d <= 0 {
				t.Errorf("predicted p99 %.1f ms beside the plan's %d ms: want it on the other side", naive.P99Ms, p.PlanP99Ms)
			}
			late := float64(len(sim)-sortSearch(sim, float64(f.Target.Milliseconds()))) / float64(len(sim))
			if math.Abs(naive.MissShare-late) > 0.003 {
				t.Errorf("share past the target: predicted %.4f, simulated %.4f", naive.MissShare, late)
			}
		})
	}
}

func sortSearch(sorted []float64, x float64) int {
	i, _ := slices.BinarySearch(sorted, x)
	for i < len(sorted) && sorted[i] <= x {
		i++
	}
	return i
}

// Calls without a p50 last their p99 every time: the prediction is the
// plan's arithmetic, and says so.
func TestPredictWithP99sAloneIsThePlan(t *testing.T) {
	f := parse(t, `
target: 1s
edge: 20ms
own: 10ms
graph:
  seq:
    - call: {name: auth, p99: 70ms}
    - par:
        - call: {name: catalog, p99: 220ms}
        - call: {name: fraud, p99: 300ms}
    - call: {name: audit, p99: 500ms, criticality: fire-forward}
`)
	p := Predict(f)
	if p.PlanP99Ms != 400 {
		t.Fatalf("plan's arithmetic %d ms, want 20 + 70 + 300 + 10 = 400", p.PlanP99Ms)
	}
	for _, m := range p.Modes {
		if math.Abs(m.P99Ms-400) > 1 || math.Abs(m.P50Ms-400) > 1 || m.MissShare != 0 {
			t.Errorf("%s: p50 %.1f, p99 %.1f, miss %.3f; want 400, 400 and none", m.Mode, m.P50Ms, m.P99Ms, m.MissShare)
		}
	}
	if len(p.Assumptions) != 3 || !strings.Contains(p.Assumptions[0], "auth has no p50") {
		t.Errorf("assumptions %q, want one for each call on the request's path", p.Assumptions)
	}
}

// A critical call past its cap fails the checkout, at the cap; an
// optional one gives its default then. In budgeted mode a call gets at
// most what is left of the target less the margin, and none under the
// floor.
func TestPredictAppliesTheModesTimeouts(t *testing.T) {
	f := parse(t, `
target: 1s
margin: 10ms
floor: 50ms
graph:
  seq:
    - call: {name: catalog, p50: 100ms, p99: 400ms, cap: 300ms}
    - call: {name: estimate, p50: 20ms, p99: 200ms, cap: 50ms, criticality: optional}
    - call: {name: payments, p50: 600ms, p99: 601ms, cap: 900ms}
`)
	p := Predict(f)
	naive, budgeted := p.Modes[0], p.Modes[1]
	overCap := 1 - faults.LogNormalCDF(100*time.Millisecond, 400*time.Millisecond, 300*time.Millisecond)
	if math.Abs(naive.FailedShare-overCap) > 0.001 {
		t.Errorf("naive failed %.4f, want catalog's share past its cap, %.4f", naive.FailedShare, overCap)
	}
	// Budgeted: payments gets 1000 − 10 − elapsed, so it fails whenever
	// catalog + the estimate took more than about 390 ms (payments itself
	// takes 600); with catalog capped at 300 and the estimate at 50, that
	// never happens, so budgeted fails as naive does, and answers every
	// checkout within the target.
	if math.Abs(budgeted.FailedShare-overCap) > 0.001 {
		t.Errorf("budgeted failed %.4f, want %.4f", budgeted.FailedShare, overCap)
	}
	if budgeted.P999Ms > 1000 {
		t.Errorf("budgeted p99.9 %.1f ms, past the target", budgeted.P999Ms)
	}
	if naive.MissShare < naive.FailedShare {
		t.Errorf("naive misses %.4f, fewer than it fails", naive.MissShare)
	}

	// With a 700 ms target, payments (600 ms) is left less than it needs
	// whenever catalog and the estimate take over 90 ms: budgeted fails
	// those early, naive answers them late, past the target when they
	// took over 100 ms. The margin costs budgeted the ones between.
	f.Target = 700 * time.Millisecond
	p = Predict(f)
	naive, budgeted = p.Modes[0], p.Modes[1]
	if budgeted.P999Ms > 700 {
		t.Errorf("700 ms target: budgeted p99.9 %.1f ms, past it", budgeted.P999Ms)
	}
	if naive.P99Ms <= 700 {
		t.Errorf("700 ms target: naive p99 %.1f ms, want past it", naive.P99Ms)
	}
	if budgeted.MissShare < naive.MissShare || budgeted.MissShare > naive.MissShare+0.1 {
		t.Errorf("700 ms target: naive misses %.3f, budgeted %.3f: want budgeted's a little more (the margin)", naive.MissShare, budgeted.MissShare)
	}
	if naive.FailedShare > overCap+0.001 || budgeted.FailedShare < 0.5 {
		t.Errorf("700 ms target: naive failed %.3f, budgeted %.3f: want naive's the cap's alone, budgeted's most", naive.FailedShare, budgeted.FailedShare)
	}
}

// A measured call's distribution is its hop histogram read as Quantile
// reads it: linear within a bucket, from 0 in the first.
func TestHistogramCDFReadsLikeQuantile(t *testing.T) {
	h := &dto.Histogram{SampleCount: proto.Uint64(100), Bucket: []*dto.Bucket{
		{UpperBound: proto.Float64(0.1), CumulativeCount: proto.Uint64(50)},
		{UpperBound: proto.Float64(0.2), CumulativeCount: proto.Uint64(100)},
		{UpperBound: proto.Float64(math.Inf(1)), CumulativeCount: proto.Uint64(100)},
	}}
	for _, tt := range []struct {
		at   time.Duration
		want float64
	}{{50 * time.Millisecond, 0.25}, {100 * time.Millisecond, 0.5}, {150 * time.Millisecond, 0.75}, {time.Second, 1}} {
		if got := histogramCDF(h, tt.at); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("CDF at %v = %v, want %v", tt.at, got, tt.want)
		}
		if q := Quantile(tt.want, h); tt.want < 1 && q != tt.at {
			t.Errorf("Quantile(%v) = %v, want %v: the two readings differ", tt.want, q, tt.at)
		}
	}
}
