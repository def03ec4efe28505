package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/problem"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/lab"
	"github.com/mercado-lab/mercado/loadtest"
)

// Preset sets the whole shop up for a lesson in one step: the mode, the
// faults and network faults of one phase of a built-in scenario, and that
// scenario's traffic and deadline, sent by the console. Where a lesson
// has a scenario, its setup is the scenario's, and the preset only says
// which scenario and phase, the mode to start in, and what to watch; a
// lesson without one says its faults and traffic here. (A mode is a
// preset of the mechanisms; a lesson preset starts from one.)
type Preset struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	// Watch says in one sentence what the preset shows and what to do
	// next.
	Watch string    `json:"watch"`
	Mode  mode.Mode `json:"mode"`
	// Scenario and Phase are where the faults, the traffic and the
	// deadline come from. A preset with no scenario says them itself:
	// Mechanisms (switches on top of the mode, as --mechanisms takes
	// them), Faults (by service, as --fault takes them) and Traffic;
	// with none of them, it is a healthy shop at the console's own
	// traffic.
	Scenario   string            `json:"scenario,omitempty"`
	Phase      string            `json:"phase,omitempty"`
	Mechanisms string            `json:"mechanisms,omitempty"`
	Faults     map[string]string `json:"faults,omitempty"`
	Traffic    *Rates            `json:"traffic,omitempty"`
}

// Presets are the lesson presets, in the course's order; the last one
// resets the shop.
var Presets = append(append(lessonPresets, capstonePresets()...), Preset{Name: "healthy", Title: "Reset",
	Watch: "A healthy shop: budgeted, no faults, the console's own traffic."})

// lessonPresets are the presets of the lessons before the capstone.
var lessonPresets = []Preset{
	{Name: "lesson7", Title: "Lesson 7", Mode: mode.Budgeted, Scenario: "lesson7", Phase: "shipping degraded",
		Watch: "The chain: the budget shrinks hop by hop (catalog 280 ms, payments 760 ms) and shipping, degraded, is clipped to what is left; switch to naive and the checkouts end past the deadline."},
	{Name: "drill76", Title: "Drill 76", Mode: mode.Naive, Scenario: "drill76", Phase: "carrier hangs",
		Watch: "Browsing: the carrier hangs under 100 checkouts/s, and in naive mode the shared pool fills and browsing goes dark; switch to budgeted and it turns green within seconds."},
	{Name: "classes", Title: "Traffic classes", Mode: mode.Naive, Scenario: "classes", Phase: "export burst",
		Watch: "Checkout goodput: 60 catalogue exports a second (batch, each six 200 ms pages) fill naive's shared pools of 50 and the shoppers wait behind them; switch to budgeted and batch holds at most half of any pool, and checkouts come back."},
	{Name: "flash-sale", Title: "Flash sale", Mode: mode.Naive, Scenario: "flash-sale", Phase: "the sale",
		Watch: "Checkouts and browsing: 100 checkouts a second of one product, each holding its lock for a 20 ms commit, and naive's line grows until every checkout waits past its deadline and browsing waits with them; switch to budgeted and it sells the 50 a second the lock serves, answering the rest 409 at once."},
	{Name: "retry-storm", Title: "Retry storm", Mode: mode.Naive, Scenario: "retry-storm", Phase: "payments refuses",
		Watch: "Retries a second: payments refuses every charge, and naive retries at the gateway and at orders; switch to budgeted and orders alone retries, within its retry budget."},
	{Name: "hedge", Title: "Hedging", Mode: mode.Budgeted, Scenario: "hedge", Phase: "heavy tail",
		Watch: "Checkout p99 against the deadline: the fraud screen answers in 20 ms half the time and past 400 ms once in a hundred, and every checkout waits for it; tick hedging under Mechanism switches and apply, and the p99 falls, for a few more screens a second."},
	// Exercise 2's fan-out with the shop's own caps: the fraud screen
	// takes 250 ms, under its 300 ms cap (the lab's replay gives it 300
	// under a cap of 400).
	{Name: "fanout", Title: "Fan-out", Mode: mode.Budgeted, Mechanisms: "fanout=sequential",
		Faults:  map[string]string{"catalog": "ReserveStock:latency=250ms", "payments": "ScreenOrder:latency=250ms;CreateCharge:latency=500ms"},
		Traffic: &Rates{Checkout: 2, DeadlineMS: 900},
		Watch:   "The chain: reserving the stock (250 ms) and the fraud screen (250 ms) run one after the other, so the charge (500 ms) starts with too little of the 900 ms left; switch fanout to parallel under Mechanism switches and both start at once, leaving the charge enough."},
}

// capstonePresets are the capstone's stages, fragile to armoured, each
// under the capstone's load and carrier, as the lab runs them. The
// shop's caps are its own: the lab's stage 1 and later run with caps
// suggested from a healthy warm-up instead.
func capstonePresets() []Preset {
	cfg := lab.DefaultCapstone()
	var out []Preset
	for _, st := range lab.CapstoneSteps() {
		out = append(out, Preset{Name: "capstone-" + strings.Fields(st.Name)[0], Title: "Capstone " + st.Name, Mode: st.Mode, Mechanisms: st.Mechanisms,
			Faults:  map[string]string{sim.ServiceShipping: cfg.Carrier},
			Traffic: &Rates{Checkout: cfg.CheckoutRate, Browse: cfg.BrowseRate, DeadlineMS: cfg.Deadline.Milliseconds()},
			Watch:   "The carrier hangs under " + fmt.Sprint(cfg.CheckoutRate) + " checkouts/s; this stage adds " + st.Adds + ". Watch browsing, the pools and the late work, then take the next stage."})
	}
	return out
}

// healthyRates is the console's own traffic: the page's defaults.
var healthyRates = Rates{Checkout: 20, Browse: 10, DeadlineMS: 1000}

// PresetNames lists the presets' names for a message.
func PresetNames() string {
	names := make([]string, len(Presets))
	for i, p := range Presets {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// LookupPreset is the preset named name.
func LookupPreset(name string) (Preset, error) {
	i := slices.IndexFunc(Presets, func(p Preset) bool { return p.Name == name })
	if i < 0 {
		return Preset{}, fmt.Errorf("no lesson preset %q: choose %s", name, PresetNames())
	}
	return Presets[i], nil
}

// setup is what applying p puts in force.
type setup struct {
	mode      mode.Mode
	overrides mode.Overrides
	faults    map[string]string
	network   map[string]string
	rates     Rates
	workers   int // the pools' size; zero: each service's own
}

// setup is what applying p puts in force: its scenario's phase, or what
// p says itself.
func (p Preset) setup() (setup, error) {
	if p.Scenario == "" {
		s := setup{mode: mode.Budgeted, faults: p.Faults, rates: healthyRates}
		if p.Mode != "" {
			s.mode = p.Mode
		}
		if p.Traffic != nil {
			s.rates = *p.Traffic
		}
		if p.Mechanisms != "" {
			if err := s.overrides.Set(p.Mechanisms); err != nil {
				return setup{}, fmt.Errorf("preset %s: %w", p.Name, err)
			}
		}
		return s, s.rates.validate()
	}
	sc, err := loadtest.LoadScenario(p.Scenario)
	if err != nil {
		return setup{}, err
	}
	i := slices.IndexFunc(sc.Phases, func(ph loadtest.Phase) bool { return ph.Name == p.Phase })
	if i < 0 {
		return setup{}, fmt.Errorf("preset %s: scenario %s has no phase %q", p.Name, p.Scenario, p.Phase)
	}
	ph := sc.Phases[i]
	m, o, err := sc.Setup(p.Mode)
	if err != nil {
		return setup{}, fmt.Errorf("preset %s: %w", p.Name, err)
	}
	s := setup{mode: m, overrides: o, faults: ph.Faults, network: ph.Network, rates: Rates{DeadlineMS: time.Duration(sc.Deadline).Milliseconds()},
		workers: sc.Shop.Workers}
	rate := func(class string) float64 {
		if r, ok := ph.Rates[class]; ok {
			return r
		}
		return sc.Classes[class].Rate
	}
	s.rates.Checkout, s.rates.Browse, s.rates.Export = rate("checkout"), rate("browse"), rate("export")
	s.rates.Buys = sc.Checkout
	if err := s.rates.validate(); err != nil {
		return setup{}, fmt.Errorf("preset %s: its traffic: %w", p.Name, err)
	}
	return s, nil
}

// PresetResult is the answer to applying a preset: the preset, and the
// state the shop is in now, read back from the admin APIs.
type PresetResult struct {
	Preset Preset `json:"preset"`
	State  State  `json:"state"`
}

// applyPreset puts p in force: the mode first (a switch resets breakers
// and pools), then the faults and the wire, then the traffic.
func (c *Console) applyPreset(ctx context.Context, p Preset) error {
	s, err := p.setup()
	if err != nil {
		return err
	}
	if len(s.network) > 0 && c.network == nil {
		return errNoProxies
	}
	if err := c.shop.Switch(ctx, s.mode, s.overrides, s.workers); err != nil {
		return err
	}
	if err := c.shop.SetFaults(ctx, s.faults); err != nil {
		return err
	}
	if c.network != nil {
		if err := c.shop.SetNetwork(ctx, s.network); err != nil {
			return err
		}
	}
	c.traffic.start(s.rates)
	c.mu.Lock()
	c.preset = p.Name
	c.mu.Unlock()
	return nil
}

func (c *Console) postPreset(w http.ResponseWriter, r *http.Request) {
	p, err := LookupPreset(r.PathValue("name"))
	if err != nil {
		problem.Write(w, r, http.StatusNotFound, err.Error())
		return
	}
	if c.runs.busy() {
		problem.Write(w, r, http.StatusConflict, "a scenario is running: stop it first (DELETE /console/api/scenario), then apply "+p.Name)
		return
	}
	switch err := c.applyPreset(r.Context(), p); {
	case errors.Is(err, errNoProxies):
		problem.Write(w, r, http.StatusConflict, p.Name+" sets network faults, and "+err.Error())
		return
	case err != nil:
		upstreamError(w, r, err)
		return
	}
	c.o.Log.Info("lesson preset applied from the console", "preset", p.Name)
	writeJSON(w, http.StatusOK, PresetResult{Preset: p, State: c.state(r.Context())})
}

// ApplyPreset applies the preset named name through the console at base
// (its URL, ending in /console/), as the page's button does, with the
// admin token when the shop needs one.
func ApplyPreset(ctx context.Context, base, token, name string) (PresetResult, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+"/api/presets/"+url.PathEscape(name), nil)
	if err != nil {
		return PresetResult{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: admin.DefaultTimeout}).Do(req)
	if err != nil {
		return PresetResult{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var p struct {
			Detail string `json:"detail"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&p)
		return PresetResult{}, fmt.Errorf("preset %s: %s: %s", name, resp.Status, p.Detail)
	}
	var res PresetResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return PresetResult{}, fmt.Errorf("preset %s: reading the answer: %w", name, err)
	}
	return res, nil
}
