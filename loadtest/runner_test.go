package loadtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
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
	before.Methods = map[string]float64{"payments/CreateCharge": 10, "payments/ScreenOrder": 10}
	after.Methods = map[string]float64{"payments/CreateCharge": 37, "payments/ScreenOrder": 10, "payments/GetCharge": 2}
	got := serverFigures(before, after, 50)
	want := ServerFigures{
		LateCompletions: 3, LateWorkSeconds: 1.5, BreakerOpens: 1, PoolRejections: 0, Retries: 10, DuplicateCharges: 2,
		Skipped:       map[string]float64{"breaker_open": 20, "budget_floor": 2},
		Calls:         map[string]float64{"orders": 50, "shipping": 100},
		Amplification: map[string]float64{"orders": 1, "shipping": 2},
		MethodCalls:   map[string]float64{"payments/CreateCharge": 27, "payments/GetCharge": 2},
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
	runs, _, err := runPhases(context.Background(), sc, countingShop{quietShop{srv.URL}, &received}, time.Now(), mode.Naive, "k", oneProduct, DefaultValidity().MinAchieved, nil)
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

// A 202 processing is no final answer: it counts as good only when its
// order is confirmed later, and the summary counts 202s apart.
func TestSummarizeCountsProcessingApart(t *testing.T) {
	fast, late := 100*time.Millisecond, 2*time.Second
	samples := []Sample{
		{Code: http.StatusCreated, Latency: fast},
		{Code: http.StatusAccepted, Latency: fast, OrderID: "a", Confirmed: true},
		{Code: http.StatusAccepted, Latency: fast, OrderID: "b"},
		{Code: http.StatusAccepted, Latency: late, OrderID: "c", Confirmed: true},
		{Code: http.StatusServiceUnavailable, Latency: fast, Failure: FailUnavail},
	}
	s := Summarize("checkout", samples, time.Second, time.Second)
	if s.OK != 4 || s.Accepted != 3 || s.Confirmed != 2 || s.Good != 2 || s.Goodput != 2 {
		t.Errorf("summary %+v: want 4 ok, 3 accepted of which 2 confirmed, 2 good (the 201 and the confirmed 202 in time)", s)
	}
	if got := Figures["accepted"](s); got != 0.6 {
		t.Errorf("accepted figure = %v, want 3 of 5", got)
	}
	secs := perSecond(samples, time.Time{}, time.Second)
	if len(secs) != 1 || secs[0].Good != 2 {
		t.Errorf("per second %+v: want the same 2 good", secs)
	}
}

// The generator takes a 202's order from its Location (or its body), and
// after the run the runner reads each accepted order through the public
// API: confirmed ones become good, the rest do not.
func TestAcceptedCheckoutsAreConfirmedThroughTheAPI(t *testing.T) {
	var reads atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/checkout":
			seq := r.Header.Get("Idempotency-Key")
			id := "ord_" + seq[len(seq)-1:]
			if seq[len(seq)-1]%2 == 0 {
				w.Header().Set("Location", "/api/orders/"+id)
			}
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(`{"status":"processing","order_id":"` + id + `"}`))
		default:
			reads.Add(1)
			id := r.URL.Path[len("/api/orders/"):]
			status := "payment_pending"
			if id[len(id)-1]%2 == 0 {
				status = "confirmed"
			}
			_, _ = w.Write([]byte(`{"order_id":"` + id + `","status":"` + status + `"}`))
		}
	}))
	defer srv.Close()
	got, err := Run(context.Background(), Options{Base: srv.URL, Duration: 400 * time.Millisecond},
		Class{Name: "checkout", Rate: 10, Deadline: time.Second, Request: CheckoutRequest("k", oneProduct.cat, Basket{})})
	if err != nil {
		t.Fatal(err)
	}
	phased := []phaseRun{{samples: got}}
	confirmAccepted(context.Background(), srv.URL, 10*time.Millisecond, phased)
	samples := phased[0].samples["checkout"]
	if len(samples) < 2 || reads.Load() != int64(len(samples)) {
		t.Fatalf("%d samples, %d orders read: want one read per accepted checkout", len(samples), reads.Load())
	}
	for _, s := range samples {
		want := s.OrderID[len(s.OrderID)-1]%2 == 0
		if s.Code != http.StatusAccepted || s.OrderID != "ord_"+string(rune('0'+s.Seq)) || s.Confirmed != want {
			t.Errorf("sample %+v: want 202 for ord_%d, confirmed %v", s, s.Seq, want)
		}
	}
}

// A mode's results carry the spread of its schedule lag, the figure its
// validity is judged by.
func TestModeResultReportsScheduleLag(t *testing.T) {
	srv := httptest.NewServer(withListing(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	sc := Scenario{
		Name: "lag", Modes: []mode.Mode{mode.Budgeted}, Deadline: Duration(time.Second),
		Classes: map[string]ClassSpec{"browse": {Rate: 50}},
		Phases:  []Phase{{Name: "only", Duration: Duration(time.Second)}},
	}
	res, err := RunScenario(context.Background(), sc, quietShop{srv.URL}, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Modes[0]
	l := m.ScheduleLag
	if l.MaxMS <= 0 || l.P50MS > l.P99MS || l.P99MS > l.MaxMS {
		t.Errorf("schedule lag %+v: want 0 < max and p50 ≤ p99 ≤ max", l)
	}
	if l.P99MS > float64(DefaultValidity().MaxLagP99/time.Millisecond) && m.Valid {
		t.Errorf("a run with schedule lag p99 %.1f ms is marked valid", l.P99MS)
	}
}

// A run is held to the validity it is given: one that allows no lag at
// all is INVALID, says why and what to do, and its verdict is INVALID
// although its check passed; under a rule any lag meets the same run is
// valid and passes.
func TestRunIsHeldToItsValidity(t *testing.T) {
	srv := httptest.NewServer(withListing(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	sc := Scenario{
		Name: "strict", Modes: []mode.Mode{mode.Budgeted}, Deadline: Duration(time.Second),
		Classes: map[string]ClassSpec{"browse": {Rate: 20}},
		Phases:  []Phase{{Name: "only", Duration: Duration(time.Second)}},
		Checks:  []Check{{Name: "browsing answers", Mode: "budgeted", Class: "browse", Figure: "success", AtLeast: ptr(0.5)}},
	}
	anyLag := Validity{MinAchieved: DefaultValidity().MinAchieved, MaxLagP99: time.Hour, MaxStall: time.Hour}
	noLag := Validity{MinAchieved: DefaultValidity().MinAchieved, MaxLagP99: -time.Hour, MaxStall: time.Hour}
	noStall := Validity{MinAchieved: DefaultValidity().MinAchieved, MaxLagP99: time.Hour, MaxStall: -time.Hour}
	for _, tc := range []struct {
		name     string
		validity *Validity
		want     Verdict
		why      string // in the INVALID run's reason
	}{
		{"any lag allowed", &anyLag, VerdictPass, ""},
		{"no lag allowed", &noLag, VerdictInvalid, "schedule lag p99"},
		{"no stall allowed", &noStall, VerdictInvalid, "kept from running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := RunScenario(context.Background(), sc, quietShop{srv.URL}, RunOptions{Validity: tc.validity})
			if err != nil {
				t.Fatal(err)
			}
			m := res.Modes[0]
			if res.Verdict != tc.want || len(res.Checks) != 1 || !res.Checks[0].Pass {
				t.Fatalf("verdict %s with checks %+v, want %s with the check passed (lag %+v, invalid %q)", res.Verdict, res.Checks, tc.want, m.ScheduleLag, m.Invalid)
			}
			if tc.want != VerdictInvalid {
				return
			}
			if m.Valid || !strings.Contains(m.Invalid, tc.why) || !strings.Contains(m.Advice, m.Invalid) || !strings.Contains(m.Advice, "Close other programs") {
				t.Errorf("valid=%v invalid=%q advice=%q: want INVALID, %q named, and what to do", m.Valid, m.Invalid, m.Advice, tc.why)
			}
		})
	}
}

// Two equal readings of the late-work counter, summed in different
// orders, differ by rounding residue; the run reports no late work.
func TestLateWorkIgnoresRoundingResidue(t *testing.T) {
	tenth, fifth := 0.1, 0.2 // variables: constants would add exactly
	before, after := Counters{LateWorkSeconds: tenth + fifth}, Counters{LateWorkSeconds: 0.3}
	if d := after.LateWorkSeconds - before.LateWorkSeconds; d == 0 {
		t.Fatal("the readings differ by nothing: the test shows no residue")
	}
	if got := serverFigures(before, after, 1).LateWorkSeconds; got != 0 {
		t.Errorf("late work = %g s between equal readings, want 0", got)
	}
	if got := serverFigures(Counters{}, Counters{LateWorkSeconds: 1.25}, 1).LateWorkSeconds; got != 1.25 {
		t.Errorf("late work = %g s, want 1.25", got)
	}
}
