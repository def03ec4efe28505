package lab

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/mercado-lab/mercado/internal/budget"
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
	if len(s.Checks) != 8 {
		t.Fatalf("%d checks, want 8: two p99 bounds per mode in series, one at once, and each mode's misses in series", len(s.Checks))
	}
	for _, c := range s.Checks {
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
			want, got = math.Round(1.1*math.Round(m.P99Ms)), *c.AtMost
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
