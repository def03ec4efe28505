package telemetry

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/mercado-lab/mercado/pkg/resilience/breaker"
)

// TestCountersAtZeroBeforeTheFirstEvent: a fresh service's /metrics has
// every counter whose label values are known, at zero, so that rate() and
// absence alerts work before anything has happened.
func TestCountersAtZeroBeforeTheFirstEvent(t *testing.T) {
	m := newMetrics(t, "orders")
	m.Serving(checkout)
	if err := m.ObservePool("to.payments", func() (int, int, int) { return 0, 0, 25 }); err != nil {
		t.Fatal(err)
	}
	if err := m.ObserveBreaker("payments", func() int { return BreakerClosed }); err != nil {
		t.Fatal(err)
	}
	families := scrape(t, m)

	type want struct {
		family string
		labels map[string]string
	}
	var wants []want
	for _, r := range reasons {
		wants = append(wants, want{NameSkipped, map[string]string{"reason": r}})
	}
	for _, md := range []string{"naive", "budgeted"} {
		wants = append(wants, want{NameModeChanges, map[string]string{"mode": md}})
	}
	for _, f := range []string{NameRequests, NameLateCompletions, NameLateWork} {
		wants = append(wants, want{f, map[string]string{"method": checkout}})
	}
	wants = append(wants, want{NamePoolRejections, map[string]string{"pool": "to.payments"}})
	for _, f := range []string{NameAttempts, NameRetries} {
		wants = append(wants, want{f, map[string]string{"dep": "payments"}})
	}
	for _, tr := range [][2]string{{"closed", "open"}, {"open", "half_open"}, {"half_open", "closed"}, {"half_open", "open"}, {"open", "closed"}} {
		wants = append(wants, want{NameBreakerTransitions, map[string]string{"dep": "payments", "from": tr[0], "to": tr[1]}})
	}
	for _, w := range wants {
		t.Run(w.family+fmt.Sprint(w.labels), func(t *testing.T) {
			s := series(families, w.family, w.labels)
			if s == nil {
				t.Fatalf("no series %s%v on a fresh /metrics", w.family, w.labels)
			}
			if s.GetCounter() == nil || value(s) != 0 {
				t.Errorf("%s%v = %v; want a counter at 0", w.family, w.labels, s)
			}
		})
	}
	// Every counter family is there.
	for _, f := range []string{NameSkipped, NameModeChanges, NameRequests, NameLateCompletions, NameLateWork,
		NamePoolRejections, NameAttempts, NameRetries, NameBreakerTransitions} {
		if mf := families[f]; mf == nil || mf.GetType() != dto.MetricType_COUNTER {
			t.Errorf("counter family %s missing", f)
		}
	}
}

// The reasons exported at zero are every Reason constant of names.go.
func TestReasonsListsEveryReason(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "names.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || len(vs.Values) != 1 || len(vs.Names[0].Name) < 7 || vs.Names[0].Name[:6] != "Reason" {
			return true
		}
		if lit, ok := vs.Values[0].(*ast.BasicLit); ok {
			v, _ := strconv.Unquote(lit.Value)
			declared = append(declared, v)
		}
		return true
	})
	if !slices.Equal(slices.Sorted(slices.Values(declared)), slices.Sorted(slices.Values(reasons))) {
		t.Errorf("reasons = %v; names.go declares %v", reasons, declared)
	}
}

// The transitions exported at zero are named as the breaker names its
// states, in the order of the state gauge's values.
func TestBreakerTransitionsUseTheBreakersNames(t *testing.T) {
	names := map[string]bool{}
	for _, s := range []breaker.State{breaker.Closed, breaker.HalfOpen, breaker.Open} {
		names[s.String()] = true
	}
	if int(breaker.Closed) != BreakerClosed || int(breaker.HalfOpen) != BreakerHalfOpen || int(breaker.Open) != BreakerOpen {
		t.Error("the breaker's state values differ from mercado_breaker_state's")
	}
	for _, tr := range breakerTransitions {
		if !names[tr[0]] || !names[tr[1]] {
			t.Errorf("transition %s→%s: the breaker's states are %v", tr[0], tr[1], names)
		}
	}
}
