package loadtest

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
)

func ptr(v float64) *float64 { return &v }

// phasedResults is two modes' runs with per-phase summaries: a calm phase
// and a faulty one, and the whole run's browse figures.
func phasedResults() Results {
	phases := func(slow []Summary) []PhaseSpan {
		return []PhaseSpan{
			{Name: "steady", StartS: 0, EndS: 4, Classes: []Summary{{Class: "checkout", Goodput: 20, P999MS: 200}, {Class: "browse", Goodput: 20}}},
			{Name: "payments slow", StartS: 4, EndS: 10, Faulty: true, Classes: slow},
		}
	}
	r := Results{Scenario: "slow-payments", Modes: []ModeResult{
		{Mode: "naive", Valid: true,
			Classes: []Summary{{Class: "checkout", SuccessRatio: 0.6}, {Class: "browse", SuccessRatio: 0.95}},
			Phases:  phases([]Summary{{Class: "checkout", Requests: 100, Goodput: 7, P999MS: 2950}, {Class: "browse", Requests: 50, Goodput: 18}})},
		{Mode: "budgeted", Valid: true,
			Classes: []Summary{{Class: "checkout", Requests: 400, SuccessRatio: 0.95}, {Class: "browse", SuccessRatio: 1}},
			Server:  ServerFigures{Calls: map[string]float64{"payments": 200}},
			Phases:  phases([]Summary{{Class: "checkout", Requests: 100, Goodput: 18, P999MS: 900}, {Class: "browse", Requests: 50, Goodput: 19.5}})},
	}}
	// What payments counted in the faulty phase: per checkout, 27 calls
	// naive, 2 budgeted (the browse requests are not in the divisor).
	r.Modes[0].Phases[1].Server = ServerFigures{Calls: map[string]float64{"payments": 2700}, DuplicateCharges: 12,
		LockWaitP99MS: 2400, LockWaits: 300, LateWorkSeconds: 150}
	r.Modes[1].Phases[1].Server = ServerFigures{Calls: map[string]float64{"payments": 200},
		MethodCalls:   map[string]float64{"payments/CreateCharge": 110, "payments/ScreenOrder": 90},
		LockWaitP99MS: 150, LockWaits: 300}
	return r
}

func TestEvaluateChecks(t *testing.T) {
	r := phasedResults()
	for _, tc := range []struct {
		name  string
		check Check
		pass  bool
		value float64
		bound float64
	}{
		{"absolute bound in a phase", Check{Mode: "budgeted", Phase: "payments slow", Class: "checkout", Figure: "p999_ms", AtMost: ptr(1010)}, true, 900, 1010},
		{"absolute bound broken", Check{Mode: "naive", Phase: "payments slow", Class: "checkout", Figure: "p999_ms", AtMost: ptr(1010)}, false, 2950, 1010},
		{"times another mode", Check{Mode: "budgeted", Phase: "payments slow", Class: "checkout", Figure: "goodput", AtLeast: ptr(2), Of: &CheckOf{Mode: "naive"}}, true, 18, 14},
		{"times another mode, not reached", Check{Mode: "budgeted", Phase: "payments slow", Class: "checkout", Figure: "goodput", AtLeast: ptr(3), Of: &CheckOf{Mode: "naive"}}, false, 18, 21},
		{"share of another phase", Check{Mode: "budgeted", Phase: "payments slow", Class: "browse", Figure: "goodput", AtLeast: ptr(0.95), Of: &CheckOf{Phase: "steady"}}, true, 19.5, 19},
		{"share of another phase, not kept", Check{Mode: "naive", Phase: "payments slow", Class: "browse", Figure: "goodput", AtLeast: ptr(0.95), Of: &CheckOf{Phase: "steady"}}, false, 18, 19},
		{"whole run", Check{Mode: "budgeted", Class: "browse", Figure: "success", AtLeast: ptr(0.99)}, true, 1, 0.99},
		{"a service's calls per request of the class, in a phase", Check{Mode: "naive", Phase: "payments slow", Class: "checkout", Figure: "calls_per_request", Service: "payments", AtLeast: ptr(20)}, true, 27, 20},
		{"a service's calls per request, over the bound", Check{Mode: "budgeted", Phase: "payments slow", Class: "checkout", Figure: "calls_per_request", Service: "payments", AtMost: ptr(1.5)}, false, 2, 1.5},
		{"the p99 lock wait, not divided by requests", Check{Mode: "budgeted", Phase: "payments slow", Class: "checkout", Figure: "lock_wait_p99_ms", Service: "catalog", AtMost: ptr(0.5), Of: &CheckOf{Mode: "naive"}}, true, 150, 1200},
		{"the shop's late work, not divided by requests", Check{Mode: "budgeted", Phase: "payments slow", Class: "checkout", Figure: "late_work_s", AtMost: ptr(0.1), Of: &CheckOf{Mode: "naive"}}, true, 0, 15},
		{"duplicate charges per checkout", Check{Mode: "naive", Phase: "payments slow", Class: "checkout", Figure: "duplicate_charges_per_request", Service: "payments", AtLeast: ptr(0.1)}, true, 0.12, 0.1},
		{"no duplicate charges, broken", Check{Mode: "naive", Phase: "payments slow", Class: "checkout", Figure: "duplicate_charges_per_request", Service: "payments", AtMost: ptr(0)}, false, 0.12, 0},
		{"no duplicate charges, kept", Check{Mode: "budgeted", Phase: "payments slow", Class: "checkout", Figure: "duplicate_charges_per_request", Service: "payments", AtMost: ptr(0)}, true, 0, 0},
		{"a service's calls per request, whole run", Check{Mode: "budgeted", Class: "checkout", Figure: "calls_per_request", Service: "payments", AtMost: ptr(1.5)}, true, 0.5, 1.5},
		{"one method's calls per request", Check{Mode: "budgeted", Phase: "payments slow", Class: "checkout", Figure: "calls_per_request", Service: "payments", Method: "CreateCharge", AtMost: ptr(1.5)}, true, 1.1, 1.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check.Name = tc.name
			got := Evaluate([]Check{tc.check}, r)[0]
			sameValue := got.Value == tc.value || (math.IsNaN(got.Value) && math.IsNaN(tc.value))
			if got.Pass != tc.pass || !sameValue || got.Bound != tc.bound || got.Error != "" {
				t.Errorf("got pass=%v value=%v bound=%v err=%q; want pass=%v value=%v bound=%v",
					got.Pass, got.Value, got.Bound, got.Error, tc.pass, tc.value, tc.bound)
			}
		})
	}
}

// A figure the span cannot give — no lock waited for, no prediction —
// holds no bound: the check fails and says why, with nothing (JSON has no
// NaN) for a value.
func TestEvaluateCheckOnAFigureTheSpanLacksFails(t *testing.T) {
	r := phasedResults()
	for _, figure := range []string{"lock_wait_p99_ms", "p99_over_predicted"} {
		got := Evaluate([]Check{{Name: "x", Mode: "budgeted", Class: "checkout", Figure: figure, Service: "catalog", AtMost: ptr(1000)}}, r)[0]
		if got.Pass || got.Error != "budgeted mode gave no "+figure+" over the span" || got.Value != 0 {
			t.Errorf("%s: got %+v, want a failed check saying the span gave no such figure", figure, got)
		}
		if _, err := json.Marshal(got); err != nil {
			t.Errorf("%s: %v", figure, err)
		}
	}
}

func TestEvaluateCheckWithoutItsFigureFails(t *testing.T) {
	r := phasedResults()
	r.Modes = r.Modes[:1] // budgeted did not run
	got := Evaluate([]Check{{Name: "x", Mode: "budgeted", Class: "checkout", Figure: "goodput", AtLeast: ptr(1)}}, r)[0]
	if got.Pass || !strings.Contains(got.Error, "budgeted did not run") {
		t.Errorf("got %+v, want a failed check saying the mode did not run", got)
	}
	if r.Conclude([]Check{{Name: "x", Mode: "budgeted", Class: "checkout", Figure: "goodput", AtLeast: ptr(1)}}); r.Verdict != VerdictFail {
		t.Errorf("verdict %s with a failed check on valid runs, want FAIL", r.Verdict)
	}
}

func TestScenarioChecksAreValidated(t *testing.T) {
	base := `name: x
deadline: 1s
classes: {checkout: {rate: 10}}
phases: [{name: calm, duration: 1s}]
checks:
`
	for check, want := range map[string]string{
		`  - {name: a, mode: budgeted, class: checkout, figure: p999_ms, at_most: 1010}`:                                                    "",
		`  - {name: a, mode: budgeted, class: checkout, figure: p999_ms}`:                                                                   "exactly one of at_least and at_most",
		`  - {name: a, mode: fast, class: checkout, figure: p999_ms, at_most: 1}`:                                                           `mode "fast"`,
		`  - {name: a, mode: budgeted, class: browse, figure: p999_ms, at_most: 1}`:                                                         `class "browse"`,
		`  - {name: a, mode: budgeted, class: checkout, figure: p42, at_most: 1}`:                                                           `figure "p42"`,
		`  - {name: a, mode: budgeted, phase: storm, class: checkout, figure: goodput, at_least: 1}`:                                        `phase "storm"`,
		`  - {name: a, mode: budgeted, class: checkout, figure: goodput, at_least: 1, of: {}}`:                                              "name a mode or a phase",
		`  - {name: a, mode: budgeted, class: checkout, figure: goodput, at_least: 1, of: {mode: turbo}}`:                                   `mode "turbo"`,
		`  - {mode: budgeted, class: checkout, figure: goodput, at_least: 1}`:                                                               "name is required",
		`  - {name: a, mode: budgeted, class: checkout, figure: calls_per_request, service: payments, at_most: 1.5}`:                        "",
		`  - {name: a, mode: budgeted, class: checkout, figure: calls_per_request, at_most: 1.5}`:                                           "needs a service",
		`  - {name: a, mode: budgeted, class: checkout, figure: calls_per_request, service: bank, at_most: 1.5}`:                            "needs a service",
		`  - {name: a, mode: budgeted, class: checkout, figure: goodput, service: payments, at_least: 1}`:                                   "drop service",
		`  - {name: a, mode: budgeted, class: checkout, figure: calls_per_request, service: payments, method: CreateCharge, at_most: 1.5}`:  "",
		`  - {name: a, mode: budgeted, class: checkout, figure: calls_per_request, service: payments, method: /x/CreateCharge, at_most: 1}`: "short name",
		`  - {name: a, mode: budgeted, class: checkout, figure: duplicate_charges_per_request, service: payments, at_most: 0}`:              "",
		`  - {name: a, mode: budgeted, class: checkout, figure: duplicate_charges_per_request, service: orders, at_most: 0}`:                "give service payments",
		`  - {name: a, mode: budgeted, class: checkout, figure: lock_wait_p99_ms, service: catalog, at_most: 200}`:                          "",
		`  - {name: a, mode: budgeted, class: checkout, figure: lock_wait_p99_ms, service: orders, at_most: 200}`:                           "give service catalog",
		`  - {name: a, mode: budgeted, class: checkout, figure: late_work_s, at_most: 1}`:                                                   "",
		`  - {name: a, mode: budgeted, class: checkout, figure: late_work_s, service: orders, at_most: 1}`:                                  "whole shop's",
	} {
		_, err := ParseScenario([]byte(base + check))
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", check, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: got %v, want an error containing %q", check, err, want)
		}
	}
}

// quietShop is a Shop with nothing to switch, fault or count: a plain
// HTTP server under load.
type quietShop struct{ url string }

var _ Target = quietShop{}

func (q quietShop) URL() string                                                { return q.url }
func (quietShop) Switch(context.Context, mode.Mode, mode.Overrides, int) error { return nil }
func (quietShop) SetFaults(context.Context, map[string]string) error           { return nil }
func (quietShop) Settle(context.Context, time.Duration)                        {}
func (quietShop) Counters(context.Context) (Counters, error)                   { return Counters{}, nil }
func (quietShop) Gauges(context.Context) (Gauges, error)                       { return Gauges{}, nil }

// TestPhasesKeepTheirSchedule: a phase starts on time even when the one
// before it left requests waiting on a stalled server, so the arrivals
// never pause between phases.
func TestPhasesKeepTheirSchedule(t *testing.T) {
	stall := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/products" {
			select {
			case <-stall:
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()
	defer close(stall)
	sc := Scenario{
		Name: "schedule", Modes: []mode.Mode{mode.Budgeted}, Deadline: Duration(2500 * time.Millisecond),
		Classes: map[string]ClassSpec{"browse": {Rate: 20}},
		Phases: []Phase{
			{Name: "stalls", Duration: Duration(time.Second)},
			{Name: "after", Duration: Duration(time.Second)},
		},
	}
	start := time.Now()
	runs, invalid, err := runPhases(context.Background(), sc, quietShop{srv.URL}, start, mode.Naive, "k", oneProduct, DefaultValidity().MinAchieved, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(invalid) > 0 {
		t.Logf("generator behind schedule (a busy machine): %v", invalid)
	}
	// The first phase's requests wait up to 2.5 s; the second phase must
	// not wait for them. A generous bound for a busy machine.
	if got := runs[1].start; got < 900*time.Millisecond || got > 1500*time.Millisecond {
		t.Errorf("second phase began %v into the run, want about 1s", got)
	}
	if n := len(runs[1].samples["browse"]); n < 15 {
		t.Errorf("second phase sent %d requests, want about 20", n)
	}
}

// A server figure of a class that sent nothing cannot be divided: the
// check fails and says why, rather than passing on a NaN.
func TestServerFigureOfAnEmptyClassFails(t *testing.T) {
	r := phasedResults()
	r.Modes[1].Phases[1].Classes[0].Requests = 0
	got := Evaluate([]Check{{Name: "x", Mode: "budgeted", Phase: "payments slow", Class: "checkout", Figure: "calls_per_request", Service: "payments", AtMost: ptr(1.5)}}, r)[0]
	if got.Pass || !strings.Contains(got.Error, "sent nothing") {
		t.Errorf("got %+v, want a failed check saying the class sent nothing", got)
	}
}
