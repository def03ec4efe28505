package loadtest

import (
	"reflect"
	"testing"
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
