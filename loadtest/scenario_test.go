package loadtest

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
)

// A phase's faults name methods the service simulates, spelt as the
// service spells them; anything else is refused with the valid names.
func TestScenarioFaultMethodsAreValidated(t *testing.T) {
	base := `name: x
deadline: 1s
classes: {checkout: {rate: 10}}
phases:
  - name: slow
    duration: 1s
    faults: {%s}
`
	for faults, want := range map[string]string{
		`shipping: "CreateShipment:hang=5s"`: "",
		`catalog: "latency=5ms"`:             "",
		`shipping: "NoSuchMethod:hang=5s"`:   `phase slow: shipping: unknown method "NoSuchMethod" for shipping (want CreateShipment, EstimateDelivery or *)`,
		`catalog: "reservestock:latency=1s"`: `did you mean ReserveStock?`,
		`payments: "CreateShipment:hang"`:    `unknown method "CreateShipment" for payments (want CreateCharge, ScreenOrder, RecordAudit or *)`,
		`inventory: "latency=1s"`:            `phase slow: unknown service "inventory"`,
	} {
		_, err := ParseScenario([]byte(strings.Replace(base, "%s", faults, 1)))
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", faults, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: got %v, want an error containing %q", faults, err, want)
		}
	}
}

// A mode may have clients of its own: clients.<mode> replaces client in
// that mode, and each is validated.
func TestScenarioClientsByMode(t *testing.T) {
	sc, err := ParseScenario([]byte(`name: x
deadline: 1s
client: {retries: 2, backoff: 50ms}
clients:
  budgeted: {retries: 2, backoff: 50ms, budget_aware: true}
classes: {checkout: {rate: 10}}
phases: [{name: calm, duration: 1s}]
`))
	if err != nil {
		t.Fatal(err)
	}
	p := sc.Phases[0]
	naive, budgeted := sc.phaseClasses(p, mode.Naive, "k", oneProduct)[0], sc.phaseClasses(p, mode.Budgeted, "k", oneProduct)[0]
	if naive.Retries != 2 || naive.BudgetAware || budgeted.Retries != 2 || !budgeted.BudgetAware || budgeted.RetryBackoff != 50*time.Millisecond {
		t.Errorf("naive client %+v, budgeted %+v; want both 2 retries, budgeted's budget-aware", naive, budgeted)
	}

	base := "name: x\ndeadline: 1s\nclasses: {checkout: {rate: 10}}\nphases: [{name: calm, duration: 1s}]\n"
	for extra, want := range map[string]string{
		"clients: {turbo: {retries: 1}}":            `clients: mode "turbo" is not one the scenario runs`,
		"clients: {budgeted: {budget_aware: true}}": "clients.budgeted.budget_aware needs retries",
		"clients: {naive: {retries: 11}}":           "clients.naive.retries 11 is outside 0 to 10",
		"client: {retries: -1}":                     "client.retries -1 is outside 0 to 10",
		"client: {attempt_timeout: 1s}":             "client.attempt_timeout needs retries",
	} {
		_, err := ParseScenario([]byte(base + extra))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error containing %q", extra, err, want)
		}
	}
}

// A scenario may compare the fragile shop with the budgeted one, with a
// client of its own for the fragile phases.
func TestScenarioFragileMode(t *testing.T) {
	sc, err := ParseScenario([]byte(`name: x
deadline: 1s
modes: [fragile, budgeted]
clients:
  fragile: {retries: 1}
classes: {checkout: {rate: 10}}
phases: [{name: calm, duration: 1s}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sc.Modes, []mode.Mode{mode.Fragile, mode.Budgeted}) || sc.ClientFor(mode.Fragile).Retries != 1 {
		t.Errorf("modes %v, fragile's client %+v; want fragile then budgeted, with 1 retry", sc.Modes, sc.ClientFor(mode.Fragile))
	}
	if _, err := ParseScenario([]byte("name: x\ndeadline: 1s\nmodes: [reckless]\nclasses: {checkout: {rate: 10}}\nphases: [{name: calm, duration: 1s}]\n")); err == nil ||
		!strings.Contains(err.Error(), `"fragile", "naive" or "budgeted"`) {
		t.Errorf("modes: [reckless]: %v, want an error listing the modes", err)
	}
}

// A phase's network faults name links and specs of internal/netfault;
// anything else is refused, naming the phase, the link and the setting.
func TestScenarioNetworkIsValidated(t *testing.T) {
	base := `name: x
deadline: 1s
classes: {checkout: {rate: 10}}
phases:
  - name: calm
    duration: 1s
  - name: wire
    duration: 1s
    network: {%s}
`
	for network, want := range map[string]string{
		`orders-shipping: "stall"`:                    "",
		`gateway-orders: "latency=200ms,jitter=50ms"`: "",
		`orders-fraud: "stall"`:                       `phase wire: network: unknown link "orders-fraud" (want one of gateway-orders,`,
		`orders-shipping: "latency=soon"`:             `phase wire: network: orders-shipping: latency: "soon" is not a duration`,
		`orders-payments: "stall,direction=sideways"`: `phase wire: network: orders-payments: stall: direction:`,
	} {
		sc, err := ParseScenario([]byte(strings.Replace(base, "%s", network, 1)))
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", network, err)
		case want == "" && !sc.UsesNetwork():
			t.Errorf("%s: UsesNetwork is false", network)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: got %v, want an error containing %q", network, err, want)
		}
	}
	sc, err := ParseScenario([]byte(strings.Replace(base, "network: {%s}", `faults: {shipping: "latency=1ms"}`, 1)))
	if err != nil || sc.UsesNetwork() {
		t.Errorf("a scenario with no network faults: UsesNetwork %t (%v), want false", sc.UsesNetwork(), err)
	}
}

// A quick run shortens each phase to its own quick length where it
// declares one (the least that lets its fault's effect build), else to a
// fifth of it, at least a second; a quick length longer than the phase,
// or negative, is refused.
func TestScenarioQuickHonoursAPhasesOwnLength(t *testing.T) {
	sc, err := ParseScenario([]byte(`name: x
deadline: 1s
classes: {checkout: {rate: 10}}
phases:
  - {name: calm, duration: 10s}
  - {name: slow, duration: 30s, quick: 12s}
  - {name: short, duration: 3s}
`))
	if err != nil {
		t.Fatal(err)
	}
	q := sc.Quick()
	var got []time.Duration
	for _, p := range q.Phases {
		got = append(got, time.Duration(p.Duration))
	}
	if want := []time.Duration{2 * time.Second, 12 * time.Second, time.Second}; !slices.Equal(got, want) {
		t.Errorf("quick phases %v, want %v (a fifth, the phase's own quick, at least 1 s)", got, want)
	}
	if q.Length() != 15*time.Second || sc.Length() != 43*time.Second {
		t.Errorf("quick length %v of %v, want 15s of 43s", q.Length(), sc.Length())
	}

	base := "name: x\ndeadline: 1s\nclasses: {checkout: {rate: 10}}\nphases: [{name: slow, duration: 10s, quick: %s}]\n"
	for quick, want := range map[string]string{
		"11s": "phase 0 (slow): quick 11s is outside 0 to its duration 10s",
		"-1s": "phase 0 (slow): quick -1s is outside 0 to its duration 10s",
	} {
		_, err := ParseScenario([]byte(strings.Replace(base, "%s", quick, 1)))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("quick: %s: got %v, want an error containing %q", quick, err, want)
		}
	}
}

// Scaled multiplies every base and phase rate, leaves the scenario it
// came from as it was, says its factor in the run's settings, and refuses
// a factor outside its bounds.
func TestScaledMultipliesEveryRate(t *testing.T) {
	sc, err := LoadScenario("overload")
	if err != nil {
		t.Fatal(err)
	}
	half, err := sc.Scaled(0.5)
	if err != nil {
		t.Fatal(err)
	}
	if got := half.Classes["checkout"].Rate; got != 25 {
		t.Errorf("scaled base checkout rate = %v, want 25", got)
	}
	if got := half.Phases[2].Rates["checkout"]; got != 250 {
		t.Errorf("scaled checkout rate of phase %q = %v, want 250", half.Phases[2].Name, got)
	}
	if sc.Classes["checkout"].Rate != 50 || sc.Phases[2].Rates["checkout"] != 500 {
		t.Errorf("the scenario scaled from changed: %v, %v", sc.Classes["checkout"].Rate, sc.Phases[2].Rates)
	}
	if got := half.Settings().Scale; got != 0.5 {
		t.Errorf("settings' scale = %v, want 0.5", got)
	}
	if got := sc.Settings().Scale; got != 0 {
		t.Errorf("an unscaled run's settings' scale = %v, want none", got)
	}
	quarter, err := half.Scaled(0.5)
	if err != nil || quarter.Scale != 0.25 || quarter.Classes["checkout"].Rate != 12.5 {
		t.Errorf("scaled twice = scale %v, checkout %v, %v; want 0.25, 12.5", quarter.Scale, quarter.Classes["checkout"].Rate, err)
	}
	for _, f := range []float64{0, 0.01, 11, math.NaN()} {
		if _, err := sc.Scaled(f); err == nil {
			t.Errorf("Scaled(%v) succeeded, want an error", f)
		}
	}
}

// TestSetupOfAModeWithSwitches: a mode named with switches runs its preset
// with the shop's mechanisms and then its own switches on top, its own
// winning; a switch that is no mechanism is refused when the file is read.
func TestSetupOfAModeWithSwitches(t *testing.T) {
	sc := Scenario{Shop: ShopSpec{Mechanisms: "breakers=off,hedging=off"}}
	preset, o, err := sc.Setup("budgeted+hedging")
	if err != nil || preset != mode.Budgeted {
		t.Fatalf("Setup = %q, %v", preset, err)
	}
	if got := preset.Mechanisms().Apply(o); !got.Hedging || got.Breakers || !got.Bulkheads {
		t.Errorf("budgeted+hedging under breakers=off = %+v, want budgeted, hedging on, breakers off", got)
	}
	if preset, o, _ := sc.Setup(mode.Naive); preset != mode.Naive || preset.Mechanisms().Apply(o).Hedging {
		t.Errorf("naive: %q with hedging %v, want naive without", preset, preset.Mechanisms().Apply(o).Hedging)
	}
	bad := strings.Replace(mustRead(t, "scenarios/hedge.yaml"), "budgeted+hedging]", "budgeted+hedgeing]", 1)
	if _, err := ParseScenario([]byte(bad)); err == nil || !strings.Contains(err.Error(), `"hedgeing" is not a mechanism`) {
		t.Errorf("a mode with a misspelt switch: %v", err)
	}
}

func mustRead(t *testing.T, name string) string {
	t.Helper()
	b, err := builtin.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
