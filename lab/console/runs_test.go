package console_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/slowtest"
	"github.com/mercado-lab/mercado/lab/console"
	"github.com/mercado-lab/mercado/lab/shop"
	"github.com/mercado-lab/mercado/loadtest"
)

// state reads the console's state.
func state(t *testing.T, base string) console.State {
	t.Helper()
	status, _, body := call(t, http.MethodGet, base+"api/state", "", "", "")
	var st console.State
	if status != http.StatusOK || json.Unmarshal(body, &st) != nil {
		t.Fatalf("GET api/state = %d %s", status, body)
	}
	return st
}

// A scenario run from the console goes through its modes and phases,
// with the fault-on phase said as such, and ends with its checks and a
// report the console serves.
func TestScenarioRunEndsWithAReport(t *testing.T) {
	slowtest.Require(t, "a scenario run from the console, about 16 s")
	_, base := startShop(t, shop.EphemeralConfig())
	status, _, body := call(t, http.MethodPost, base+"api/scenario", "", "application/json", `{"name":"lesson7","quick":true}`)
	if status != http.StatusAccepted {
		t.Fatalf("POST api/scenario = %d %s, want 202", status, body)
	}
	if status, _, body := call(t, http.MethodPut, base+"api/traffic", "", "application/json", `{"checkout":1,"deadline_ms":1000}`); status != http.StatusConflict {
		t.Errorf("PUT api/traffic during a run = %d %s, want 409", status, body)
	}
	if status, _, _ := call(t, http.MethodPost, base+"api/scenario", "", "application/json", `{"name":"lesson7","quick":true}`); status != http.StatusConflict {
		t.Errorf("a second POST api/scenario during a run = %d, want 409", status)
	}
	seen := map[string]bool{} // "mode/phase/fault_on"
	var run *console.RunState
	for end := time.Now().Add(3 * time.Minute); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		run = state(t, base).Run
		if run == nil {
			t.Fatal("the state shows no run")
		}
		if run.State != "running" {
			break
		}
		if run.Phase != "" {
			seen[string(run.Mode)+"/"+run.Phase+"/"+map[bool]string{true: "fault", false: "calm"}[run.FaultOn]] = true
		}
	}
	if run.State != "done" {
		t.Fatalf("the run ended %q (%s), want done", run.State, run.Error)
	}
	if !seen["budgeted/shipping degraded/fault"] || !seen["naive/baseline/fault"] && !seen["naive/shipping degraded/fault"] {
		t.Errorf("the run showed %v, want each mode's phases, shipping degraded with its fault on", seen)
	}
	if run.DoneS != run.TotalS || run.TotalS != 10 {
		t.Errorf("progress %v of %v s, want 10 of 10 (two modes of 5 s)", run.DoneS, run.TotalS)
	}
	if len(run.Checks) == 0 || run.Report == "" {
		t.Fatalf("run = %+v, want its checks and a report", run)
	}
	if run.Verdict == "" || !strings.HasPrefix(run.Checks[0], "PASS  ") && !strings.HasPrefix(run.Checks[0], "FAIL  ") {
		t.Errorf("verdict %q, checks %q: want a verdict, and each check PASS or FAIL", run.Verdict, run.Checks)
	}
	if (run.Verdict == loadtest.VerdictInvalid) != (len(run.Invalid) > 0) {
		t.Errorf("verdict %s with invalid runs %q: INVALID exactly when a run was", run.Verdict, run.Invalid)
	}
	// The run's phases are bands on the charts' clock, each mode's in
	// order, and its answers are the charts' points.
	var bands []string
	for i, b := range run.Bands {
		bands = append(bands, fmt.Sprintf("%s/%s/%v", b.Mode, b.Phase, b.FaultOn))
		if b.ToMS <= b.FromMS || i > 0 && b.FromMS < run.Bands[i-1].FromMS {
			t.Errorf("band %d %+v: want it to end after it began, and after the band before began", i, b)
		}
	}
	if got, want := strings.Join(bands, " "), "naive/baseline/true naive/shipping degraded/true budgeted/baseline/true budgeted/shipping degraded/true"; got != want {
		t.Errorf("bands %s, want %s", got, want)
	}
	tick := firstTick(t, base)
	var sent int
	for _, p := range tick.Classes["checkout"] {
		sent += p.Sent
	}
	if sent < 50 {
		t.Errorf("the charts' minute holds %d of the run's checkouts (points %+v), want its ~100", sent, tick.Classes["checkout"])
	}
	if tick.DeadlineMS["checkout"] != 1200 {
		t.Errorf("the latency chart's deadline is %d ms, want the scenario's 1200", tick.DeadlineMS["checkout"])
	}
	status, ctype, page := call(t, http.MethodGet, strings.TrimSuffix(base, "/console/")+run.Report, "", "", "")
	if status != http.StatusOK || !strings.HasPrefix(ctype, "text/html") || !strings.Contains(string(page), "lesson7") {
		t.Errorf("GET %s = %d %s (%d bytes), want the run's HTML report", run.Report, status, ctype, len(page))
	}
}

// With the fault proxies on, a network fault set through the console is
// on the wire: the next checkout's shipping hop takes it.
func TestNetworkFaultsReachTheWire(t *testing.T) {
	cfg := shop.EphemeralConfig()
	cfg.Network = true
	_, base := startShop(t, cfg)
	if st := state(t, base); len(st.Network) != 5 {
		t.Fatalf("the state shows links %v, want the shop's five", st.Network)
	}
	status, _, body := call(t, http.MethodPut, base+"api/network/orders-shipping", "", "application/json", `{"spec":"latency=150ms"}`)
	if status != http.StatusOK {
		t.Fatalf("PUT api/network/orders-shipping = %d %s", status, body)
	}
	_, _, body = call(t, http.MethodPost, base+"api/checkout", "", "application/json", `{"deadline_ms":2000}`)
	var co console.Checkout
	if err := json.Unmarshal(body, &co); err != nil {
		t.Fatal(err)
	}
	took := -1.0
	for _, h := range co.Hops {
		if h.Name == "shipping" {
			took = h.TookMS
		}
	}
	if took < 150 {
		t.Errorf("the shipping hop took %.1f ms with 150 ms on its link, want at least 150: %+v", took, co.Hops)
	}
	for _, tc := range []struct {
		path, body string
		status     int
	}{
		{"api/network/orders-nowhere", `{"spec":"stall"}`, 404},
		{"api/network/orders-shipping", `{"spec":"slowly"}`, 400},
		{"api/network/orders-shipping", `{"spec":""}`, 400},
	} {
		if status, _, body := call(t, http.MethodPut, base+tc.path, "", "application/json", tc.body); status != tc.status {
			t.Errorf("PUT %s %s = %d %s, want %d", tc.path, tc.body, status, body, tc.status)
		}
	}
	if status, _, body := call(t, http.MethodDelete, base+"api/network", "", "", ""); status != http.StatusOK {
		t.Fatalf("DELETE api/network = %d %s", status, body)
	}
	for _, l := range state(t, base).Network {
		if l.Faults.String() != "none" {
			t.Errorf("link %s keeps %s after the clear", l.Name, l.Faults)
		}
	}
}

// firstTick reads the first tick of the console's event stream.
func firstTick(t *testing.T, base string) console.TickEvent {
	t.Helper()
	_, r := events(t, base, 30*time.Second)
	for {
		if name, data := readEvent(t, r); name == "tick" {
			var tick console.TickEvent
			if err := json.Unmarshal([]byte(data), &tick); err != nil {
				t.Fatal(err)
			}
			return tick
		}
	}
}
