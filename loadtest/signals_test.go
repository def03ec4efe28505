package loadtest

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/mercado-lab/mercado/internal/mode"
)

// signalResults is a game day as the services counted it: payments'
// vendor is slow in the second phase. Budgeted counts its timeouts at
// orders → payments, opens that hop's breaker twice and skips shipping
// when too little is left; naive pins payments' shared pool.
func signalResults() Results {
	phases := func(slow ServerFigures) []PhaseSpan {
		return []PhaseSpan{
			{Name: "steady", StartS: 0, EndS: 4, Classes: []Summary{{Class: "checkout", Requests: 80}}},
			{Name: "vendor slow", StartS: 4, EndS: 10, Faulty: true, Classes: []Summary{{Class: "checkout", Requests: 120}}, Server: slow},
		}
	}
	return Results{Modes: []ModeResult{
		{Mode: "naive", Valid: true,
			Phases: phases(ServerFigures{
				HopCalls:    map[string]float64{"gateway/orders": 120, "orders/payments": 360},
				HopTimeouts: map[string]float64{"orders/payments": 300},
			}),
			PoolInFlight: map[string][]float64{
				"payments/shared": {2, 3, 2, 2, 40, 120, 200, 200, 200, 200},
				"orders/outbound": {2, 3, 2, 2, 30, 30, 30, 30, 30, 30},
			},
			PoolCapacity: map[string]float64{"payments/shared": 200, "orders/outbound": 200}},
		{Mode: "budgeted", Valid: true,
			Phases: phases(ServerFigures{
				HopCalls:           map[string]float64{"gateway/orders": 120, "orders/payments": 100},
				HopTimeouts:        map[string]float64{"orders/payments": 60},
				HopBreakerOpens:    map[string]float64{"orders/payments": 2},
				InsufficientBudget: map[string]float64{"orders": 6},
			}),
			PoolInFlight: map[string][]float64{
				// Full in the steady phase's seconds only: not this span's.
				"orders/to.payments": {25, 25, 25, 3, 18, 18, 4, 1, 1, 17},
				"orders/workers":     {3, 3, 3, 3, 20, 20, 20, 20, 20, 20},
			},
			PoolCapacity: map[string]float64{"orders/to.payments": 25, "orders/workers": 200}},
	}}
}

func TestSignalFigures(t *testing.T) {
	r := signalResults()
	for _, tc := range []struct {
		name  string
		check Check
		value float64
	}{
		{"calls skipped for lack of budget, per checkout", Check{Mode: "budgeted", Figure: "insufficient_budget_per_request", Service: "orders"}, 0.05},
		{"none skipped in naive", Check{Mode: "naive", Figure: "insufficient_budget_per_request", Service: "orders"}, 0},
		{"timeouts counted at the hop that overran, per checkout", Check{Mode: "budgeted", Figure: "timeouts_per_request", Service: "orders", Dep: "payments"}, 0.5},
		{"no timeouts counted at the edge's hop", Check{Mode: "budgeted", Figure: "timeouts_per_request", Service: "gateway", Dep: "orders"}, 0},
		{"breaker opens of a hop", Check{Mode: "budgeted", Figure: "breaker_opens", Service: "orders", Dep: "payments"}, 2},
		{"a hop without a breaker opens none", Check{Mode: "naive", Figure: "breaker_opens", Service: "orders", Dep: "payments"}, 0},
		{"the fullest pool of a service, within the phase", Check{Mode: "budgeted", Figure: "pool_peak_use", Service: "orders"}, 18.0 / 25},
		{"one pool named", Check{Mode: "budgeted", Figure: "pool_peak_use", Service: "orders", Pool: "workers"}, 0.1},
		{"a pinned pool", Check{Mode: "naive", Figure: "pool_peak_use", Service: "payments"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check.Name, tc.check.Phase, tc.check.Class, tc.check.AtLeast = tc.name, "vendor slow", "checkout", ptr(0)
			got := Evaluate([]Check{tc.check}, r)[0]
			if got.Error != "" || math.Abs(got.Value-tc.value) > 1e-9 {
				t.Errorf("value %v (error %q), want %v", got.Value, got.Error, tc.value)
			}
		})
	}
}

// The whole run's pool figure reads every second of it: the steady
// phase's full bulkhead counts.
func TestPoolPeakUseOverTheWholeRun(t *testing.T) {
	r := signalResults()
	r.Modes[1].Classes = []Summary{{Class: "checkout", Requests: 200}}
	got := Evaluate([]Check{{Name: "x", Mode: "budgeted", Class: "checkout", Figure: "pool_peak_use", Service: "orders", Pool: "to.payments", AtMost: ptr(0.9)}}, r)[0]
	if got.Pass || got.Value != 1 {
		t.Errorf("got %+v, want 1 (full at the start) and a failed check", got)
	}
}

// A figure the run cannot give fails its check with the reason, rather
// than reading as 0.
func TestSignalFiguresWithoutTheirSeriesFail(t *testing.T) {
	r := signalResults()
	for _, tc := range []struct {
		check Check
		want  string
	}{
		{Check{Figure: "pool_peak_use", Service: "orders", Pool: "to.nowhere"}, `no pool "to.nowhere"`},
		{Check{Figure: "pool_peak_use", Service: "shipping"}, "no pool"},
		{Check{Figure: "timeouts_per_request", Service: "orders", Dep: "fraud"}, "made no calls"},
		{Check{Figure: "breaker_opens", Service: "orders", Dep: "fraud"}, "made no calls"},
	} {
		c := tc.check
		c.Name, c.Mode, c.Phase, c.Class, c.AtMost = "x", "budgeted", "vendor slow", "checkout", ptr(1)
		got := Evaluate([]Check{c}, r)[0]
		if got.Pass || !strings.Contains(got.Error, tc.want) {
			t.Errorf("%s %s/%s: got %+v, want a failed check saying %q", c.Figure, c.Service, c.Dep+c.Pool, got, tc.want)
		}
	}
}

func TestSignalChecksAreValidated(t *testing.T) {
	base := `name: x
deadline: 1s
classes: {checkout: {rate: 10}}
phases: [{name: calm, duration: 1s}]
checks:
`
	for check, want := range map[string]string{
		`  - {name: a, mode: budgeted, class: checkout, figure: insufficient_budget_per_request, service: orders, at_least: 0.01}`:                       "",
		`  - {name: a, mode: budgeted, class: checkout, figure: insufficient_budget_per_request, at_least: 0.01}`:                                        "needs a service",
		`  - {name: a, mode: budgeted, class: checkout, figure: insufficient_budget_per_request, service: orders, method: CreateCharge, at_least: 0.01}`: "drop method",
		`  - {name: a, mode: budgeted, class: checkout, figure: timeouts_per_request, service: orders, dep: payments, at_least: 0.1}`:                    "",
		`  - {name: a, mode: budgeted, class: checkout, figure: timeouts_per_request, service: orders, at_least: 0.1}`:                                   "is a hop's",
		`  - {name: a, mode: budgeted, class: checkout, figure: breaker_opens, service: orders, dep: payments, at_least: 1}`:                             "",
		`  - {name: a, mode: budgeted, class: checkout, figure: breaker_opens, dep: payments, at_least: 1}`:                                              "is a hop's",
		`  - {name: a, mode: budgeted, class: checkout, figure: pool_peak_use, service: payments, at_most: 0.9}`:                                         "",
		`  - {name: a, mode: budgeted, class: checkout, figure: pool_peak_use, service: orders, pool: to.payments, at_most: 0.9}`:                        "",
		`  - {name: a, mode: budgeted, class: checkout, figure: pool_peak_use, at_most: 0.9}`:                                                            "pools'",
		`  - {name: a, mode: budgeted, class: checkout, figure: pool_peak_use, service: orders, dep: payments, at_most: 0.9}`:                            "no dep or method",
		`  - {name: a, mode: budgeted, class: checkout, figure: pool_peak_use, service: orders, pool: orders/to.payments, at_most: 0.9}`:                 "pool's name",
		`  - {name: a, mode: budgeted, class: checkout, figure: goodput, pool: shared, at_least: 1}`:                                                     "drop pool",
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

// The signals' counters grow over a span as every other counter: each
// hop's timeouts, calls and breaker openings, and each service's calls
// skipped for lack of budget.
func TestSignalCountersGrowth(t *testing.T) {
	h := func(n float64) Histogram {
		return Histogram{Bounds: []float64{0.1, math.Inf(1)}, Counts: []float64{n / 2, n}}
	}
	before := Counters{
		InsufficientBudget: map[string]float64{"orders": 3, "gateway": 0},
		HopTimeouts:        map[string]float64{"orders/payments": 10},
		HopBreakerOpens:    map[string]float64{"orders/payments": 1},
		Hops:               map[string]Histogram{"orders/payments": h(100), "gateway/orders": h(50)},
	}
	after := Counters{
		InsufficientBudget: map[string]float64{"orders": 9, "gateway": 0},
		HopTimeouts:        map[string]float64{"orders/payments": 40, "gateway/orders": 0},
		HopBreakerOpens:    map[string]float64{"orders/payments": 3},
		Hops:               map[string]Histogram{"orders/payments": h(160), "gateway/orders": h(50), "orders/shipping": h(8)},
	}
	got := serverFigures(before, after, 60)
	if want := map[string]float64{"orders": 6}; !reflect.DeepEqual(got.InsufficientBudget, want) {
		t.Errorf("InsufficientBudget = %v, want %v", got.InsufficientBudget, want)
	}
	if want := map[string]float64{"orders/payments": 30}; !reflect.DeepEqual(got.HopTimeouts, want) {
		t.Errorf("HopTimeouts = %v, want %v", got.HopTimeouts, want)
	}
	if want := map[string]float64{"orders/payments": 2}; !reflect.DeepEqual(got.HopBreakerOpens, want) {
		t.Errorf("HopBreakerOpens = %v, want %v", got.HopBreakerOpens, want)
	}
	if want := map[string]float64{"orders/payments": 60, "orders/shipping": 8}; !reflect.DeepEqual(got.HopCalls, want) {
		t.Errorf("HopCalls = %v, want %v", got.HopCalls, want)
	}
}

// A hop's cap is the one published at the end of the span, for the hops
// that made calls in it; a hop with calls and no cap (the fragile preset)
// has a cap of 0, and cap_ms reads it, where headroom_ms has nothing to
// say. slice_ms, cap_ms's deprecated name, reads the same.
func TestCapFigure(t *testing.T) {
	h := func(n float64) Histogram {
		return Histogram{Bounds: []float64{0.1, math.Inf(1)}, Counts: []float64{n / 2, n}}
	}
	before := Counters{Hops: map[string]Histogram{"orders/catalog": h(10), "orders/payments": h(10)}}
	after := Counters{Hops: map[string]Histogram{"orders/catalog": h(30), "orders/payments": h(10), "orders/shipping": h(5)},
		Caps: map[string]float64{"orders/catalog": 0.3, "orders/payments": 0.8}}
	got := serverFigures(before, after, 20)
	if want := map[string]float64{"orders/catalog": 300, "orders/shipping": 0}; !reflect.DeepEqual(got.CapMS, want) {
		t.Errorf("CapMS = %v, want %v", got.CapMS, want)
	}
	r := Results{Modes: []ModeResult{{Mode: "fragile", Valid: true, Phases: []PhaseSpan{
		{Name: "slow", Classes: []Summary{{Class: "checkout", Requests: 20}}, Server: got}}}}}
	s := Scenario{Modes: []mode.Mode{"fragile"}, Classes: map[string]ClassSpec{"checkout": {}}, Phases: []Phase{{Name: "slow"}}}
	for _, figure := range []string{"cap_ms", "slice_ms"} {
		for _, tc := range []struct {
			dep     string
			value   float64
			problem string
		}{{"catalog", 300, ""}, {"shipping", 0, ""}, {"payments", 0, "no calls"}} {
			c := Check{Name: tc.dep, Mode: "fragile", Phase: "slow", Class: "checkout", Figure: figure, Service: "orders", Dep: tc.dep, AtMost: ptr(1000)}
			if err := c.validate(s); err != nil {
				t.Errorf("%s of %s: %v", figure, tc.dep, err)
			}
			res := Evaluate([]Check{c}, r)[0]
			if tc.problem != "" {
				if !strings.Contains(res.Error, tc.problem) || res.Pass {
					t.Errorf("%s of %s: pass %v, error %q; want a failed check saying %q", figure, tc.dep, res.Pass, res.Error, tc.problem)
				}
				continue
			}
			if res.Error != "" || res.Value != tc.value {
				t.Errorf("%s of %s: value %v (error %q), want %v", figure, tc.dep, res.Value, res.Error, tc.value)
			}
		}
	}
	hr := Evaluate([]Check{{Name: "h", Mode: "fragile", Phase: "slow", Class: "checkout", Figure: "headroom_ms", Service: "orders", Dep: "shipping", AtMost: ptr(0)}}, r)[0]
	if hr.Pass || hr.Error == "" {
		t.Errorf("headroom_ms of a hop without a cap: pass %v, error %q; want it unevaluated", hr.Pass, hr.Error)
	}
}
