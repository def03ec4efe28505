package loadtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
)

// TestServerFiguresAreTheCountersGrowth: a run reports what the services
// counted during it — the growth between two readings — and the calls
// behind the gateway per request sent.
func TestServerFiguresAreTheCountersGrowth(t *testing.T) {
	before := Counters{
		LateCompletions: 1, LateWorkSeconds: 0.5, BreakerOpens: 2, PoolRejections: 3, Retries: 4, DuplicateCharges: 1,
		Skipped:  map[string]float64{"breaker_open": 10, "expired": 5},
		Requests: map[string]float64{"gateway": 100, "orders": 100, "shipping": 300},
	}
	after := Counters{
		LateCompletions: 4, LateWorkSeconds: 2, BreakerOpens: 3, PoolRejections: 3, Retries: 14, DuplicateCharges: 3,
		Skipped:  map[string]float64{"breaker_open": 30, "expired": 5, "budget_floor": 2},
		Requests: map[string]float64{"gateway": 150, "orders": 150, "shipping": 400},
	}
	got := serverFigures(before, after, 50)
	want := ServerFigures{
		LateCompletions: 3, LateWorkSeconds: 1.5, BreakerOpens: 1, PoolRejections: 0, Retries: 10, DuplicateCharges: 2,
		Skipped:       map[string]float64{"breaker_open": 20, "budget_floor": 2},
		Calls:         map[string]float64{"orders": 50, "shipping": 100},
		Amplification: map[string]float64{"orders": 1, "shipping": 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("serverFigures =\n%+v\nwant\n%+v", got, want)
	}
}

// countingShop counts the requests its server received as the orders
// service's, for a runner to read as the services' counters.
type countingShop struct {
	quietShop
	received *atomic.Int64
}

func (c countingShop) Counters(context.Context) (Counters, error) {
	return Counters{Requests: map[string]float64{"orders": float64(c.received.Load())}}, nil
}

// TestEachPhaseCountsItsOwn: the services' counters are read at each
// phase's start and at the schedule's end, so each phase's figures are
// what arrived while it ran.
func TestEachPhaseCountsItsOwn(t *testing.T) {
	var received atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { received.Add(1) }))
	defer srv.Close()
	sc := Scenario{
		Name: "count", Modes: []mode.Mode{mode.Budgeted}, Deadline: Duration(time.Second),
		Classes: map[string]ClassSpec{"browse": {Rate: 20}},
		Phases: []Phase{
			{Name: "slow", Duration: Duration(time.Second), Rates: map[string]float64{"browse": 10}},
			{Name: "fast", Duration: Duration(time.Second), Rates: map[string]float64{"browse": 40}},
		},
	}
	runs, _, err := runPhases(context.Background(), sc, countingShop{quietShop{srv.URL}, &received}, time.Now(), "k", "none")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{10, 40} {
		got := runs[i].to.Requests["orders"] - runs[i].from.Requests["orders"]
		// A request or two may land on the far side of a boundary.
		if got < want-3 || got > want+3 {
			t.Errorf("phase %d counted %v requests, want about %v", i, got, want)
		}
	}
}
