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
	return CapstoneConfig{
		CheckoutRate: 100, BrowseRate: 20,
		WarmUp: 5 * time.Second, Fault: 20 * time.Second,
		Deadline: time.Second, Patience: 10 * time.Second,
		Carrier: sim.ShippingCreateShipment + ":hang=10s",
		Stall:   netfault.OrdersCatalog, StallFor: 5 * time.Second,
		Margin:  DefaultSuggestMargin,
		Workers: 200, BreakerOpen: 5 * time.Second,
	}
}

// Validate reports every setting the lab cannot run, by flag name.
func (c CapstoneConfig) Validate() error {
	var errs []error
	if c.CheckoutRate <= 0 || c.CheckoutRate > 2000 || c.BrowseRate <= 0 || c.BrowseRate > 2000 {
		errs = append(errs, errors.New("checkout-rate and browse-rate: must be within (0, 2000] per second"))
	}
	if c.WarmUp < time.Second || c.WarmUp > 10*time.Minute {
		errs = append(errs, fmt.Errorf("warm-up: %v is outside 1s to 10m", c.WarmUp))
	}
	if c.Fault < time.Second || c.Fault > 10*time.Minute {
		errs = append(errs, fmt.Errorf("fault: %v is outside 1s to 10m", c.Fault))
	}
	if c.Deadline < 10*time.Millisecond || c.Deadline > time.Minute {
		errs = append(errs, fmt.Errorf("deadline: %v is outside 10ms to 1m", c.Deadline))
	}
	if c.Patience < 0 || c.Patience > 10*time.Minute {
		errs = append(errs, fmt.Errorf("patience: %v is outside 0 to 10m", c.Patience))
	}
	if set, err := faults.Parse(c.Carrier); err != nil {
		errs = append(errs, fmt.Errorf("carrier: %w", err))
	} else if len(set) == 0 {
		errs = append(errs, errors.New("carrier: name a fault for shipping, such as CreateShipment:hang=10s"))
	} else if err := set.CheckMethods(sim.ServiceShipping); err != nil {
		errs = append(errs, fmt.Errorf("carrier: %w", err))
	}
	if c.Stall != "" {
		if err := netfault.CheckLink(c.Stall); err != nil {
			errs = append(errs, fmt.Errorf("stall: %w", err))
		}
	}
	if c.StallFor < 0 || c.StallFor >= c.Fault {
		// The carrier alone must follow the stall: clearing a stall closes
		// its connections, and every call held on them is let go at once.
		// Let go into a shop that is still broken, they show the fault;
		// let go into a healthy one, they would count as served.
		errs = append(errs, fmt.Errorf("stall-for: %v is outside 0 to the fault (%v), exclusive", c.StallFor, c.Fault))
	}
	if c.Margin.Fixed < 0 || c.Margin.Fixed > c.Deadline || c.Margin.Share < 0 || c.Margin.Share > 10 {
		errs = append(errs, fmt.Errorf("margin: %v is outside 0 to the deadline (%v), or 0%% to 1000%%", c.Margin, c.Deadline))
	}
	if c.Workers < 1 || c.Workers > 10_000 {
		errs = append(errs, fmt.Errorf("workers: %d is outside 1 to 10000", c.Workers))
	}
	if c.BreakerOpen <= 0 || c.BreakerOpen > time.Hour {
		errs = append(errs, fmt.Errorf("breaker-open: %v is outside (0, 1h]", c.BreakerOpen))
	}
	return errors.Join(errs...)
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
