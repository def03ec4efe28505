package loadtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
)

// TestFaultClassesTakeTheFaultyPhasesTogether: a fault told in two
// phases is summarised whole, over the requests those phases sent and per
// second of their length, while the calm phase before them stays out
// (here the server fails once the calm phase is over).
func TestFaultClassesTakeTheFaultyPhasesTogether(t *testing.T) {
	start := time.Now()
	srv := httptest.NewServer(withListing(func(w http.ResponseWriter, r *http.Request) {
		if time.Since(start) > 1200*time.Millisecond { // past the calm phase, with room for the setup
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	sc := Scenario{
		Name: "fault", Modes: []mode.Mode{mode.Budgeted}, Deadline: Duration(time.Second),
		Classes: map[string]ClassSpec{"browse": {Rate: 20}},
		Phases: []Phase{
			{Name: "calm", Duration: Duration(time.Second)},
			{Name: "first", Duration: Duration(time.Second), Faults: map[string]string{"catalog": "ListProducts:error=unavailable"}},
			{Name: "second", Duration: Duration(time.Second), Faults: map[string]string{"catalog": "ListProducts:error=unavailable"}},
		},
	}
	res, err := RunScenario(context.Background(), sc, quietShop{srv.URL}, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Modes[0]
	if len(m.FaultClasses) != 1 || m.FaultClasses[0].Class != "browse" {
		t.Fatalf("fault classes %+v, want browse alone", m.FaultClasses)
	}
	f := m.FaultClasses[0]
	calm, first, second := m.Phases[0].Classes[0], m.Phases[1].Classes[0], m.Phases[2].Classes[0]
	if f.Requests != first.Requests+second.Requests || f.Requests == 0 {
		t.Errorf("the fault sent %d browses, its phases %d and %d", f.Requests, first.Requests, second.Requests)
	}
	if calm.Good == 0 {
		t.Errorf("the calm phase served no browse well: %+v", calm)
	}
	// The fault's good answers are its phases' own, per second of its 2 s.
	if f.Good != first.Good+second.Good || f.Goodput != float64(f.Good)/2 {
		t.Errorf("the fault served %d well at %.1f/s; its phases %d and %d over 2 s", f.Good, f.Goodput, first.Good, second.Good)
	}
}
