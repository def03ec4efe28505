package lab

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/budget"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/loadtest"
)

// The predict scenario's checks hold each run to what `mercado budget
// predict` says of the call graphs that describe its phases: every bound
// is recomputed here, so a change to a graph, a fault or the model that
// moves the prediction fails this test until the scenario says so.
func TestPredictScenarioHoldsRunsToThePrediction(t *testing.T) {
	s, err := loadtest.LoadScenario("predict")
	if err != nil {
		t.Fatal(err)
	}
	graphs := map[string]string{"chain": "../docs/budgets/predict-chain.yaml", "fan-out": "../docs/budgets/predict-fanout.yaml"}
	predictions := map[string]budget.Prediction{}
	for phase, path := range graphs {
		r, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := budget.Parse(path, r, false)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		predictions[phase] = budget.Predict(f)
	}
	if len(s.Checks) != 12 {
		t.Fatalf("%d checks, want 12: two p99 bounds per mode in series, one at once, each mode's misses in series, and two bounds on the prediction from the hops per phase", len(s.Checks))
	}
	// At once, both calls' tails share one hop bucket, and the
	// composition from the hops sits further above the run than the
	// report's agreement allows for (the scenario's comment says by how
	// much): its lower bound is this instead.
	const fanoutLow = 0.7
	for _, c := range s.Checks {
		if c.Figure == "p99_over_predicted" {
			low := loadtest.AgreeLow
			if c.Phase == "fan-out" {
				low = fanoutLow
			}
			if (c.AtLeast != nil && *c.AtLeast != low) || (c.AtMost != nil && *c.AtMost != loadtest.AgreeHigh) {
				t.Errorf("check %q: bounds other than %v to %v", c.Name, low, loadtest.AgreeHigh)
			}
			continue
		}
		p, ok := predictions[c.Phase]
		if !ok {
			t.Fatalf("check %q: phase %q has no call graph", c.Name, c.Phase)
		}
		var m budget.ModePrediction
		for _, x := range p.Modes {
			if x.Mode == c.Mode {
				m = x
			}
		}
		var want, got float64
		switch {
		case c.Figure == "p99_ms" && c.AtLeast != nil:
			want, got = math.Round(0.9*math.Round(m.P99Ms)), *c.AtLeast
		case c.Figure == "p99_ms" && c.AtMost != nil:
			want, got = math.Round(1.1*math.Round(m.P99Ms))+loadtest.OwnWorkMS, *c.AtMost
		case c.Figure == "success" && c.AtLeast != nil:
			want, got = 1-(math.Round(m.MissShare*1e4)/1e4+0.01), *c.AtLeast
		default:
			t.Fatalf("check %q: figure %s: want p99_ms or success", c.Name, c.Figure)
		}
		if math.Abs(want-got) > 1e-9 {
			t.Errorf("check %q: bound %v, the prediction gives %v", c.Name, got, want)
		}
		figure := fmt.Sprintf("predicted %.0f ms", m.P99Ms)
		if c.Figure == "success" {
			figure = fmt.Sprintf("predicted %.2f%%", 100*m.MissShare)
		}
		if !strings.Contains(c.Name, figure) {
			t.Errorf("check %q does not state the %s", c.Name, figure)
		}
	}
}

// The checkout's graph is orders' calls stage by stage, catalog and the
// fraud screen at once when orders runs them so; the booking is waited
// for and never fails the checkout, the estimate never waited for; each
// call's distribution is its hop histogram.
func TestCheckoutGraphIsOrdersCallsByStage(t *testing.T) {
	calls := []budget.HopObservation{
		{From: "gateway", To: "orders", Route: "Checkout", Stage: 1},
		{From: "orders", To: "catalog", Route: "Checkout", Stage: 1, Parallel: true, Criticality: "critical", Cap: 300 * time.Millisecond},
		{From: "orders", To: "fraud", Route: "Checkout", Stage: 1, Parallel: true, Criticality: "critical", Cap: 300 * time.Millisecond},
		{From: "orders", To: "payments", Route: "Checkout", Stage: 3, Criticality: "critical", Cap: 800 * time.Millisecond},
		{From: "orders", To: "shipping", Route: "Checkout", Stage: 4, Criticality: "deferred", Cap: 300 * time.Millisecond},
		{From: "orders", To: "estimate", Route: "Checkout", Stage: 5, Criticality: "optional", Cap: 150 * time.Millisecond},
	}
	hists := map[string]loadtest.Histogram{"orders/catalog": {Bounds: []float64{0.1, math.Inf(1)}, Counts: []float64{10, 10}}}
	g := checkoutGraph(calls, mode.Mechanisms{Caps: true}, hists)
	if len(g.Seq) != 4 || len(g.Seq[0].Par) != 2 || g.Seq[0].Par[1].Call.Name != "fraud" {
		t.Fatalf("graph %+v: want (catalog ∥ fraud), payments, shipping, estimate", g)
	}
	want := map[string]budget.Criticality{"catalog": budget.Critical, "payments": budget.Critical, "shipping": budget.Optional, "estimate": budget.FireForward}
	for _, c := range g.Calls() {
		if w, ok := want[c.Name]; ok && c.Criticality != w {
			t.Errorf("%s: %s, want %s", c.Name, c.Criticality, w)
		}
	}
	if h := g.Seq[0].Par[0].Call.Measured; h.GetSampleCount() != 10 || len(h.Bucket) != 2 {
		t.Errorf("catalog's histogram %v, want the span's 10 calls", h)
	}
	if h := g.Seq[1].Call.Measured; h.GetSampleCount() != 0 {
		t.Errorf("payments made no call in the span, yet its histogram counts %d", h.GetSampleCount())
	}
	if noCaps := checkoutGraph(calls, mode.Mechanisms{}, hists); noCaps.Seq[1].Call.Cap != time.Hour {
		t.Errorf("without caps, payments' cap %v, want none (an hour)", noCaps.Seq[1].Call.Cap)
	}
}
