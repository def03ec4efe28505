package lab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mercado-lab/mercado/internal/budget"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/netfault"
	"github.com/mercado-lab/mercado/internal/setting"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/loadtest"
)

// The capstone is lesson 8: Mercado's checkout with no timeouts at all,
// broken by one fault under one load, then armoured a step at a time,
// each step measured on a shop of its own under the same fault and load:
//
//	stage 0  fragile: no read caps, no connect timeout, nothing honours
//	         the client's deadline
//	stage 1  + connect and read timeouts, chosen from the p99 that stage
//	         0's healthy warm-up measured (the suggest step)
//	stage 2  + the budget in the chain: the deadline set at the edge and
//	         propagated, each call clipped to what is left less the
//	         margin, the floor, admission, cancellation honoured
//	stage 3  + isolation: the budgeted preset (bulkheads, breakers,
//	         retries in the budget, the outbox, idempotency), with stage
//	         1's values
//
// Each stage is the one before with more switched on, so the table shows
// what each step bought.

// CapstoneConfig is the capstone's knobs: the load, the fault, and the
// figures the lesson asks the learner to justify.
type CapstoneConfig struct {
	// CheckoutRate and BrowseRate are requests per second, open loop.
	CheckoutRate, BrowseRate float64
	// WarmUp is each stage's healthy phase (stage 0's is the warm-up the
	// suggest step reads); Fault is the phase in which the fault is on.
	WarmUp, Fault time.Duration
	// Deadline is every client's deadline; Patience is how long past it a
	// client still waits before it hangs up, so that fragile's latency is
	// measured rather than cut at the deadline.
	Deadline, Patience time.Duration
	// Carrier is shipping's fault during the fault phase, in the --fault
	// syntax: the carrier slow, not down.
	Carrier string
	// Stall is the link whose connection stalls for the first StallFor of
	// the fault: the data stops and the socket stays open (netfault's
	// stall, through the fault proxy on the link), so nothing but a
	// deadline ends a call on it. "" or a StallFor of 0: no stall.
	Stall    string
	StallFor time.Duration
	// Margin is what the suggest step adds to each hop's healthy p99 to
	// make its cap: a duration, or a share of the p99.
	Margin budget.Margin
	// Workers is each service's worker pool (shared by every route while
	// bulkheads are off); BreakerOpen is how long an open breaker stays
	// open.
	Workers     int
	BreakerOpen time.Duration
}

// DefaultCapstone is the capstone as the lesson measures it: Drill 76's
// load and pool on a 2-core machine, the carrier taking 10 s to answer
// (the game day's 10 s of vendor latency), 5 s of calm and 20 s of fault
// per stage, the first 5 s of the fault with the connection from orders
// to catalog stalled as well.
func DefaultCapstone() CapstoneConfig {
	var c CapstoneConfig
	setting.Default(c.Settings()...)
	return c
}

// Settings declares the capstone's settings, each once: its flag,
// default, range and help. The stall's length and the margin are bounded
// by the fault and the deadline: stall-for is checked in Validate, the
// margin by checkMargin.
func (c *CapstoneConfig) Settings() []setting.Setting {
	return []setting.Setting{
		setting.Float(&c.CheckoutRate, "checkout-rate", 100, setting.Above(0.0, 2000), "checkouts per second, open loop"),
		setting.Float(&c.BrowseRate, "browse-rate", 20, setting.Above(0.0, 2000), "browses per second, open loop"),
		setting.Duration(&c.WarmUp, "warm-up", 5*time.Second, setting.Within(time.Second, 10*time.Minute),
			"each stage's healthy phase (stage 0's is what the suggest step reads)"),
		setting.Duration(&c.Fault, "fault", 20*time.Second, setting.Within(time.Second, 10*time.Minute), "how long the fault is on in each stage"),
		setting.Duration(&c.Deadline, "deadline", time.Second, setting.Within(10*time.Millisecond, time.Minute), "every client's deadline"),
		setting.Duration(&c.Patience, "patience", 10*time.Second, setting.Within(0, 10*time.Minute),
			"how long past its deadline a client still waits before it hangs up"),
		setting.String(&c.Carrier, "carrier", sim.ShippingCreateShipment+":hang=10s",
			"shipping's fault while the fault is on, in the --fault syntax", checkCarrier),
		setting.String(&c.Stall, "stall", netfault.OrdersCatalog,
			"the link whose connection stalls as the fault begins ("+netfault.LinkList()+"; empty for none)", checkStall),
		setting.Duration(&c.StallFor, "stall-for", 5*time.Second, setting.Any[time.Duration](),
			"how long the link stays stalled, from the fault's start (0 for no stall; shorter than --fault)"),
		setting.Var(marginValue{&c.Margin}, "margin", DefaultSuggestMargin.String(),
			"what the suggest step adds to each hop's healthy p99 to make its cap: a duration such as 100ms, or a share such as 20%", c.checkMargin),
		setting.Int(&c.Workers, "workers", 200, setting.Within(1, 10_000), "each service's worker pool (shared by every route while bulkheads are off)"),
		setting.Duration(&c.BreakerOpen, "breaker-open", 5*time.Second, setting.Above(0, time.Hour), "how long an open breaker stays open"),
	}
}

// Validate reports every setting the lab cannot run, by flag name.
func (c CapstoneConfig) Validate() error {
	errs := []error{setting.Check(c.Settings()...)}
	if c.StallFor < 0 || c.StallFor >= c.Fault {
		// The carrier alone must follow the stall: clearing a stall closes
		// its connections, and every call held on them is let go at once.
		// Let go into a shop that is still broken, they show the fault;
		// let go into a healthy one, they would count as served.
		errs = append(errs, fmt.Errorf("stall-for: %v is outside 0 to the fault (%v), exclusive", c.StallFor, c.Fault))
	}
	return errors.Join(errs...)
}

// checkCarrier says what is wrong with a carrier fault: it must parse,
// name one, and name shipping's methods only.
func checkCarrier(carrier string) error {
	set, err := faults.Parse(carrier)
	switch {
	case err != nil:
		return err
	case len(set) == 0:
		return errors.New("name a fault for shipping, such as CreateShipment:hang=10s")
	}
	return set.CheckMethods(sim.ServiceShipping)
}

// checkStall says what is wrong with a stalled link: "" (none) or a link.
func checkStall(link string) error {
	if link == "" {
		return nil
	}
	return netfault.CheckLink(link)
}

// checkMargin bounds the margin: a duration up to the deadline, or a
// share up to 1000%.
func (c *CapstoneConfig) checkMargin() error {
	if c.Margin.Fixed < 0 || c.Margin.Fixed > c.Deadline || c.Margin.Share < 0 || c.Margin.Share > 10 {
		return fmt.Errorf("%v is outside 0 to the deadline (%v), or 0%% to 1000%%", c.Margin, c.Deadline)
	}
	return nil
}

// marginValue is the margin as a flag: "100ms" or "20%".
type marginValue struct{ m *budget.Margin }

func (f marginValue) String() string {
	if f.m == nil {
		return ""
	}
	return f.m.String()
}

func (f marginValue) Set(s string) error {
	m, err := budget.ParseMargin(s)
	if err != nil {
		return err
	}
	*f.m = m
	return nil
}

// The capstone's phases, in every stage.
const (
	capstoneHealthy = "healthy"
	capstoneFault   = "carrier slow"
)

// stalls reports whether the fault begins with a stalled link.
func (c CapstoneConfig) stalls() bool { return c.Stall != "" && c.StallFor > 0 }

// scenario is one stage's run: the calm phase, then the fault — the
// carrier slow throughout, and for its first part a stalled link too.
func (c CapstoneConfig) scenario(st capstoneStage) (loadtest.Scenario, error) {
	carrier := map[string]string{sim.ServiceShipping: c.Carrier}
	phases := []loadtest.Phase{{Name: capstoneHealthy, Duration: loadtest.Duration(c.WarmUp)}}
	rest := c.Fault
	if c.stalls() {
		phases = append(phases, loadtest.Phase{Name: capstoneFault + ", " + c.Stall + " stalled", Duration: loadtest.Duration(c.StallFor),
			Faults: carrier, Network: map[string]string{c.Stall: string(netfault.Stall)}})
		rest -= c.StallFor
	}
	phases = append(phases, loadtest.Phase{Name: capstoneFault, Duration: loadtest.Duration(rest), Faults: carrier})
	sc := loadtest.Scenario{
		Name:        "capstone",
		Description: "Lesson 8: the fragile checkout armoured step by step, under the carrier slow (not down) and a stalled connection.",
		Modes:       []mode.Mode{st.mode},
		Deadline:    loadtest.Duration(c.Deadline), Patience: loadtest.Duration(c.Patience),
		Classes: map[string]loadtest.ClassSpec{"checkout": {Rate: c.CheckoutRate}, "browse": {Rate: c.BrowseRate}},
		Phases:  phases,
		Shop:    loadtest.ShopSpec{Workers: c.Workers, BreakerOpen: loadtest.Duration(c.BreakerOpen), Mechanisms: st.overrides},
	}
	return sc, sc.Validate()
}

// Length is how long the load runs, all stages together.
func (c CapstoneConfig) Length() time.Duration {
	return time.Duration(len(capstoneStages())) * (c.WarmUp + c.Fault)
}

// capstoneStage is one step of the armour.
type capstoneStage struct {
	// name is the stage's label in tables and charts; adds says what it
	// switches on over the stage before.
	name, adds string
	mode       mode.Mode
	// overrides switch mechanisms on top of the mode, in the
	// --mechanisms syntax.
	overrides string
	// suggested: the stage runs with the caps and the connect timeout the
	// suggest step chose (the stages before it have none).
	suggested bool
}

// capstoneStages are the four steps, each the one before with more on.
func capstoneStages() []capstoneStage {
	timeouts := "caps=on,connect_timeout=on"
	budget := timeouts + ",edge_deadline=on,clip_to_budget=on,admission=on,honour_cancel=on"
	return []capstoneStage{
		{name: "0 fragile", adds: "nothing: no read caps, no connect timeout, the deadline ignored", mode: mode.Fragile},
		{name: "1 +timeouts", adds: "connect and read timeouts from the healthy p99", mode: mode.Fragile, overrides: timeouts, suggested: true},
		{name: "2 +budget", adds: "the budget in the chain: edge deadline, clipping, floor, admission, cancellation", mode: mode.Fragile, overrides: budget, suggested: true},
		{name: "3 +isolation", adds: "bulkheads, breakers, budgeted retries, the outbox, idempotency (the budgeted preset)", mode: mode.Budgeted, suggested: true},
	}
}

// CapstoneStep is a capstone stage as switches of a running shop: the
// console's capstone presets apply them, stage by stage.
type CapstoneStep struct {
	Name, Adds string
	Mode       mode.Mode
	// Mechanisms are the switches on top of the mode, in the --mechanisms
	// syntax.
	Mechanisms string
}

// CapstoneSteps are the four stages as switches.
func CapstoneSteps() []CapstoneStep {
	var out []CapstoneStep
	for _, st := range capstoneStages() {
		out = append(out, CapstoneStep{Name: st.name, Adds: st.adds, Mode: st.mode, Mechanisms: st.overrides})
	}
	return out
}

// mechanisms are what a stage has switched on.
func (st capstoneStage) mechanisms() (mode.Mechanisms, error) {
	var o mode.Overrides
	if st.overrides != "" {
		if err := o.Set(st.overrides); err != nil {
			return mode.Mechanisms{}, err
		}
	}
	return st.mode.Mechanisms().Apply(o), nil
}

// Capstone runs the four stages, each on a fresh shop, and reads the
// lesson's figures from them. progress, if set, is told how far each
// stage's load has got. The load generator runs in this process too;
// CapstoneApart runs it in another.
func Capstone(ctx context.Context, cfg CapstoneConfig, log *slog.Logger, progress func(stage string, done, total time.Duration)) (CapstoneResult, error) {
	return CapstoneApart(ctx, cfg, log, progress, nil)
}

// CapstoneApart is Capstone with each stage's load sent by gen (nil: from
// this process).
func CapstoneApart(ctx context.Context, cfg CapstoneConfig, log *slog.Logger, progress func(stage string, done, total time.Duration), gen StageGenerator) (CapstoneResult, error) {
	if err := cfg.Validate(); err != nil {
		return CapstoneResult{}, err
	}
	var (
		run  loadtest.Results
		sugg budget.Suggestion
	)
	for i, st := range capstoneStages() {
		out, err := runStage(ctx, cfg, st, sugg, log, progress, gen)
		if err != nil {
			return CapstoneResult{}, fmt.Errorf("stage %s: %w", st.name, err)
		}
		if run.Scenario == "" {
			run = out.Results
			run.Modes = nil
		}
		run.Modes = append(run.Modes, out.Results.Modes...)
		if i == 0 {
			// The suggest step reads stage 0's healthy warm-up.
			if sugg, err = suggestFrom(out.WarmStart, out.WarmEnd, cfg.Margin, cfg.Deadline); err != nil {
				return CapstoneResult{}, fmt.Errorf("suggest: %w", err)
			}
		}
	}
	return capstoneView(cfg, sugg, run)
}
