package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/slowtest"
	"github.com/mercado-lab/mercado/loadtest"
)

// TestIsolation runs Drill 76 scaled down — a pool of 20 instead of 200,
// a few seconds instead of 25 — and checks the lesson's shape: the
// naive shared pool fills and browsing suffers, while budgeted bulkheads
// keep browsing green, bound checkouts by the deadline, and open a breaker.
func TestIsolation(t *testing.T) {
	slowtest.Require(t, "both modes under load, about 12 s")
	cfg := IsolationConfig{
		CheckoutRate: 30, BrowseRate: 10, Duration: 4 * time.Second, WarmUp: time.Second, Recovery: time.Second,
		Deadline: 500 * time.Millisecond, Hang: 2 * time.Second, BreakerOpen: 2 * time.Second, Workers: 20,
	}
	var modes []string
	res, err := Isolation(context.Background(), cfg, slog.New(slog.DiscardHandler), func(m string, _, _ time.Duration) {
		if len(modes) == 0 || modes[len(modes)-1] != m {
			modes = append(modes, m)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	n, b := res.Naive, res.Budgeted
	if strings.Join(modes, ",") != "naive,budgeted" {
		t.Errorf("progress reported modes %v", modes)
	}
	if b.BrowseSuccessRatio < 0.95 {
		t.Errorf("budgeted browse success %.2f, want >= 0.95", b.BrowseSuccessRatio)
	}
	if n.BrowseSuccessRatio >= b.BrowseSuccessRatio {
		t.Errorf("naive browse success %.2f is not below budgeted %.2f", n.BrowseSuccessRatio, b.BrowseSuccessRatio)
	}
	if n.PeakPoolInFlight["gateway/shared"] < cfg.Workers {
		t.Errorf("naive gateway pool peaked at %d, want it full (%d)", n.PeakPoolInFlight["gateway/shared"], cfg.Workers)
	}
	// The client hangs up at the deadline plus its patience; budgeted
	// checkouts end by the deadline, with generous room for a busy machine.
	if limit := float64(cfg.Deadline.Milliseconds()) + 400; b.CheckoutMaxMS > limit {
		t.Errorf("budgeted checkout max %.0f ms, want <= %.0f", b.CheckoutMaxMS, limit)
	}
	if n.CheckoutP99MS <= float64(cfg.Deadline.Milliseconds()) {
		t.Errorf("naive checkout p99 %.0f ms, want above the %v deadline", n.CheckoutP99MS, cfg.Deadline)
	}
	if b.BreakerOpens < 1 {
		t.Error("no breaker opened in budgeted mode")
	}
	if b.Skipped["breaker_open"] == 0 {
		t.Errorf("skipped = %v, want breaker_open counted", b.Skipped)
	}
	if n.Amplification <= b.Amplification {
		t.Errorf("naive amplification %.2f is not above budgeted %.2f", n.Amplification, b.Amplification)
	}

	var table, js bytes.Buffer
	res.WriteTable(&table)
	if !strings.Contains(table.String(), "browse p99") {
		t.Errorf("table:\n%s", table.String())
	}
	if err := res.WriteJSON(&js); err != nil || !strings.Contains(js.String(), `"browse_success_ratio"`) {
		t.Errorf("JSON: %v\n%s", err, js.String())
	}
}

// TestIsolationIsDrill76: with its default knobs the isolation lab runs
// the drill76 scenario itself — one drill, one engine — and each knob
// turns the scenario's own setting.
func TestIsolationIsDrill76(t *testing.T) {
	cfg, err := DefaultIsolation()
	if err != nil {
		t.Fatal(err)
	}
	got, err := cfg.Scenario()
	if err != nil {
		t.Fatal(err)
	}
	want, err := loadtest.LoadScenario("drill76")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the isolation lab's scenario\n%+v\nis not drill76\n%+v", got, want)
	}

	cfg.CheckoutRate, cfg.Duration, cfg.Hang, cfg.Workers = 50, 9*time.Second, 2*time.Second, 400
	turned, err := cfg.Scenario()
	if err != nil {
		t.Fatal(err)
	}
	if r := turned.Classes["checkout"].Rate; r != 50 {
		t.Errorf("checkout rate %v, want 50", r)
	}
	if d, f := time.Duration(turned.Phases[1].Duration), turned.Phases[1].Faults["shipping"]; d != 9*time.Second || f != "CreateShipment:hang=2s" {
		t.Errorf("the hang phase lasts %v with shipping's fault %q, want 9s and a 2 s hang", d, f)
	}
	if turned.Shop.Workers != 400 {
		t.Errorf("workers %d, want 400", turned.Shop.Workers)
	}
	if want.Classes["checkout"].Rate != 100 || want.Phases[1].Duration != loadtest.Duration(15*time.Second) {
		t.Error("turning a knob changed the built-in scenario")
	}
}

// TestIsolationView: the lab's figures are the scenario run's — the
// clients' from the phase in which the carrier hangs, the servers' from
// the whole run — under the lab's JSON keys.
func TestIsolationView(t *testing.T) {
	phase := func(name string, checkout, browse loadtest.Summary, shippingCalls float64) loadtest.PhaseSpan {
		checkout.Class, browse.Class = "checkout", "browse"
		return loadtest.PhaseSpan{Name: name, Classes: []loadtest.Summary{checkout, browse},
			Server: loadtest.ServerFigures{Calls: map[string]float64{"shipping": 2 * shippingCalls},
				MethodCalls: map[string]float64{"shipping/CreateShipment": shippingCalls, "shipping/EstimateDelivery": shippingCalls}}}
	}
	calm := phase("calm", loadtest.Summary{Requests: 300, Good: 300, SuccessRatio: 1}, loadtest.Summary{Requests: 60, SuccessRatio: 1}, 300)
	run := loadtest.Results{Scenario: "drill76", Modes: []loadtest.ModeResult{
		{Mode: "budgeted", Valid: true, Classes: []loadtest.Summary{{Class: "checkout", Requests: 2000}},
			Phases: []loadtest.PhaseSpan{calm, phase("carrier hangs",
				loadtest.Summary{Requests: 1500, Good: 1490, P50MS: 3, P99MS: 300, MaxMS: 600, Failures: map[string]int{"bulkhead": 10}},
				loadtest.Summary{Requests: 300, SuccessRatio: 1, P99MS: 9}, 45), calm},
			Server: loadtest.ServerFigures{BreakerOpens: 3, Skipped: map[string]float64{"breaker_open": 6000},
				Calls: map[string]float64{"shipping": 2500}},
			PoolInFlight: map[string][]float64{"gateway/checkout": {2, 25, 3}}},
		{Mode: "naive", Invalid: "schedule lag p99 23ms (more than 10ms)", Classes: []loadtest.Summary{{Class: "checkout", Requests: 2000}},
			Phases: []loadtest.PhaseSpan{calm, phase("carrier hangs",
				loadtest.Summary{Requests: 1500, P99MS: 5000},
				loadtest.Summary{Requests: 300, SuccessRatio: 0.25}, 12750), calm},
			Server:       loadtest.ServerFigures{LateWorkSeconds: 14000, Calls: map[string]float64{"shipping": 14000}},
			PoolInFlight: map[string][]float64{"gateway/shared": {10, 200, 200, 180}}},
	}}
	run.Conclude([]loadtest.Check{{Name: "budgeted browses", Mode: "budgeted", Phase: "carrier hangs", Class: "browse", Figure: "success", AtLeast: new(0.99)}})
	cfg, err := DefaultIsolation()
	if err != nil {
		t.Fatal(err)
	}
	res, err := isolationView(cfg, run)
	if err != nil {
		t.Fatal(err)
	}
	n, b := res.Naive, res.Budgeted
	if n.BrowseSuccessRatio != 0.25 || n.CheckoutP99MS != 5000 || n.PeakPoolInFlight["gateway/shared"] != 200 || n.Amplification != 8.5 || n.LateWorkSeconds != 14000 {
		t.Errorf("naive = %+v", n)
	}
	if b.CheckoutRequests != 1500 || b.CheckoutGood != 1490 || b.CheckoutMaxMS != 600 || b.BrowseP99MS != 9 ||
		b.PeakPoolInFlight["gateway/checkout"] != 25 || b.BreakerOpens != 3 || b.Skipped["breaker_open"] != 6000 || b.Amplification != 0.03 {
		t.Errorf("budgeted = %+v", b)
	}
	if res.Config.DurationS != 15 || res.Config.CheckoutRate != 100 || res.Config.DeadlineMS != 1000 {
		t.Errorf("config = %+v", res.Config)
	}

	var js bytes.Buffer
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(js.Bytes(), &top); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"config": {"browse_rate", "checkout_rate", "deadline_ms", "duration_s"},
		"naive": {"advice", "amplification", "breaker_opens", "browse_failures", "browse_p99_ms", "browse_requests", "browse_success_ratio",
			"checkout_failures", "checkout_good", "checkout_max_ms", "checkout_p50_ms", "checkout_p99_ms", "checkout_requests",
			"invalid", "late_work_seconds", "peak_pool_in_flight", "skipped", "valid"},
		"budgeted": {"amplification", "breaker_opens", "browse_failures", "browse_p99_ms", "browse_requests", "browse_success_ratio",
			"checkout_failures", "checkout_good", "checkout_max_ms", "checkout_p50_ms", "checkout_p99_ms", "checkout_requests",
			"late_work_seconds", "peak_pool_in_flight", "skipped", "valid"},
	}
	for name, ks := range want {
		var keys map[string]any
		if err := json.Unmarshal(top[name], &keys); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := slices.Sorted(maps.Keys(keys)); !slices.Equal(got, ks) {
			t.Errorf("%s keys = %v, want %v", name, got, ks)
		}
	}
	if got := slices.Sorted(maps.Keys(top)); !slices.Equal(got, []string{"budgeted", "checks", "config", "naive", "verdict"}) {
		t.Errorf("top-level keys: %v", got)
	}
	if string(top["verdict"]) != `"INVALID"` {
		t.Errorf("verdict %s, want INVALID: the naive run was", top["verdict"])
	}

	// The table says which run was INVALID, why and what to do, and
	// ends with the checks and the verdict.
	if n.Valid || !strings.Contains(n.Advice, "schedule lag p99 23ms") || !strings.Contains(n.Advice, "Close other programs") {
		t.Errorf("naive valid=%v advice=%q: want INVALID, why and what to do", n.Valid, n.Advice)
	}
	var table bytes.Buffer
	res.WriteTable(&table)
	for _, want := range []string{"!!! naive run INVALID: " + n.Advice, "naive (INVALID)", "PASS  budgeted browses", "Verdict: INVALID"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if _, err := isolationView(cfg, loadtest.Results{Modes: run.Modes[:1]}); err == nil {
		t.Error("a run without naive was read")
	}
}

// TestIsolationConfigValidate: every problem is reported, each by its
// flag's name (the calm phases, which have no flag, by theirs).
func TestIsolationConfigValidate(t *testing.T) {
	cfg, err := DefaultIsolation()
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	cfg.BrowseRate, cfg.Workers, cfg.Recovery = 3000, 0, 0
	want := "browse-rate: 3000 is outside (0, 2000]\nworkers: 0 is outside 1 to 10000\nrecovery: 0s is outside 1s to 10m"
	if err := cfg.Validate(); err == nil || err.Error() != want {
		t.Errorf("Validate() = %v, want\n%s", err, want)
	}
}
