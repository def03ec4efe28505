package lab

import (
	"context"
	"log/slog"
	"testing"

	"github.com/mercado-lab/mercado/loadtest"
)

// TestScenarioRunsEveryModeAndPhase runs a small scenario end to end: the
// shop is switched per mode through the admin API, each phase's faults are
// applied, and the results carry summaries, series, phases and the
// services' own figures.
func TestScenarioRunsEveryModeAndPhase(t *testing.T) {
	t.Parallel()
	sc, err := loadtest.ParseScenario([]byte(`
name: tiny
description: a test
deadline: 1s
patience: 1s
classes:
  checkout: {rate: 20}
  browse: {rate: 10}
  status: {rate: 5}
phases:
  - name: calm
    duration: 2s
  - name: shipping hangs
    duration: 2s
    faults:
      shipping: "CreateShipment:hang=2s"
shop:
  workers: 50
  breaker_open: 1s
checks:
  - name: budgeted checkout goodput while shipping hangs, against naive's
    mode: budgeted
    phase: shipping hangs
    class: checkout
    figure: goodput
    at_least: 1
    of: {mode: naive}
`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Scenario(context.Background(), sc, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Modes) != 2 || res.Modes[0].Mode != "naive" || res.Modes[1].Mode != "budgeted" {
		t.Fatalf("modes = %+v", res.Modes)
	}
	for _, m := range res.Modes {
		if len(m.Phases) != 2 || m.Phases[0].Faulty || !m.Phases[1].Faulty {
			t.Errorf("%s phases = %+v", m.Mode, m.Phases)
		}
		if len(m.Classes) != 3 {
			t.Errorf("%s classes = %+v", m.Mode, m.Classes)
		}
		for _, c := range m.Classes {
			if c.Requests == 0 {
				t.Errorf("%s %s: no requests", m.Mode, c.Class)
			}
		}
		for _, p := range m.Phases {
			if len(p.Classes) != 3 {
				t.Errorf("%s phase %s summarises %d classes, want 3", m.Mode, p.Name, len(p.Classes))
			}
		}
		if len(m.Series["checkout"]) < 3 {
			t.Errorf("%s checkout series has %d seconds", m.Mode, len(m.Series["checkout"]))
		}
		if m.Server.Amplification["shipping"] == 0 {
			t.Errorf("%s: shipping saw no calls: %+v", m.Mode, m.Server)
		}
	}
	// The checks compare the modes once both ran, on the phase's figures.
	if len(res.Checks) != 1 || res.Checks[0].Error != "" {
		t.Fatalf("checks = %+v, want one, evaluated", res.Checks)
	}
	var want float64
	for _, c := range res.Modes[1].Phases[1].Classes {
		if c.Class == "checkout" {
			want = c.Goodput
		}
	}
	if got := res.Checks[0].Value; got != want || want == 0 {
		t.Errorf("check measured %v, want the budgeted phase's checkout goodput %v", got, want)
	}
	// The shop really switched: only budgeted has breakers to open, and
	// naive works on past the client's deadline while budgeted stops at it.
	// A budgeted call can still end a few milliseconds late when the
	// machine is busy (it is descheduled between its last check and its
	// answer), so the two are compared as a ratio, not against zero.
	b, n := res.Modes[1], res.Modes[0]
	if b.Server.BreakerOpens < 1 {
		t.Errorf("budgeted server figures %+v, want a breaker open", b.Server)
	}
	if n.Server.LateWorkSeconds == 0 {
		t.Errorf("naive server figures %+v, want late work", n.Server)
	}
	t.Logf("late work: naive %.3fs, budgeted %.3fs", n.Server.LateWorkSeconds, b.Server.LateWorkSeconds)
	if b.Server.LateWorkSeconds > n.Server.LateWorkSeconds/10 {
		t.Errorf("budgeted late work %.3fs, naive's %.3fs: want budgeted's under a tenth of naive's",
			b.Server.LateWorkSeconds, n.Server.LateWorkSeconds)
	}
	var browse loadtest.Summary
	for _, c := range b.Classes {
		if c.Class == "browse" {
			browse = c
		}
	}
	if browse.SuccessRatio < 0.9 {
		t.Errorf("budgeted browse success %.2f", browse.SuccessRatio)
	}
}

func TestBuiltinScenariosParse(t *testing.T) {
	names := loadtest.Builtin()
	if len(names) < 5 {
		t.Fatalf("built-in scenarios: %v", names)
	}
	for _, n := range names {
		sc, err := loadtest.LoadScenario(n)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		if q := sc.Quick(); q.Length() >= sc.Length() && sc.Length() > 5e9 {
			t.Errorf("%s: --quick did not shorten it", n)
		}
	}
}

// TestNetworkScenario runs the built-in network-stall scenario, shortened:
// the lab starts the shop with its fault proxies because the scenario
// sets network faults, stalls the orders-shipping link for the middle
// phase only, and the results say so. Budgeted checkouts keep answering
// within the deadline through the stall; naive ones, waiting for
// shipping's own timeout at every retry, do not.
func TestNetworkScenario(t *testing.T) {
	t.Parallel()
	sc, err := loadtest.LoadScenario("network-stall")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Scenario(context.Background(), sc.Quick(), slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	stalled := map[string]loadtest.Summary{}
	for _, m := range res.Modes {
		if len(m.Phases) != 3 {
			t.Fatalf("%s: %d phases, want 3", m.Mode, len(m.Phases))
		}
		for i, p := range m.Phases {
			if want := i == 1; p.Faulty != want || (p.Network["orders-shipping"] == "stall") != want {
				t.Errorf("%s: phase %q faulty %t, network %v; want the stall in the middle phase only", m.Mode, p.Name, p.Faulty, p.Network)
			}
		}
		for _, c := range m.Phases[1].Classes {
			if c.Class == "checkout" {
				stalled[m.Mode] = c
			}
		}
	}
	naive, budgeted := stalled["naive"], stalled["budgeted"]
	t.Logf("checkout goodput while the link stalls: naive %.1f/s, budgeted %.1f/s", naive.Goodput, budgeted.Goodput)
	if budgeted.SuccessRatio < 0.9 {
		t.Errorf("budgeted checkouts while the link stalls: success %.2f, want at least 0.9", budgeted.SuccessRatio)
	}
	if naive.Goodput >= budgeted.Goodput {
		t.Errorf("naive checkout goodput %.1f/s while the link stalls, budgeted %.1f/s: want naive's lower", naive.Goodput, budgeted.Goodput)
	}
}
