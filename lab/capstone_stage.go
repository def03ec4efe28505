package lab

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/mercado-lab/mercado/internal/budget"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/lab/driver"
	"github.com/mercado-lab/mercado/lab/shop"
	"github.com/mercado-lab/mercado/loadtest"
)

// StageLoad is what one capstone stage's load measured: its run (one
// ModeResult), and its calls' hop histograms at the start and at the end
// of its healthy warm-up, for the suggest step.
type StageLoad struct {
	Results   loadtest.Results `json:"results"`
	WarmStart budget.Hops      `json:"warm_start"`
	WarmEnd   budget.Hops      `json:"warm_end"`
}

// StageHooks say when a stage's load reads the warm-up and stops the shop.
type StageHooks struct {
	// WarmStart is how long after the load begins the warm-up the suggest
	// step reads starts: a fresh shop opens its connections on its first
	// calls, and those must be behind it.
	WarmStart time.Duration `json:"warm_start"`
	// StopAfter, when not zero, is how long after the fault goes on the
	// shop is stopped: a stage without read caps cannot promise its calls
	// end (a call waits as long as the dependency takes, and on a stalled
	// link for ever), so once the fault's schedule is over and the
	// clients' deadline has passed, what the shop still holds is cut off.
	StopAfter time.Duration `json:"stop_after,omitempty"`
}

// StageGenerator runs one stage's load against its shop, as RunStageLoad
// does: mercado lab capstone runs it in a process of its own, so that the
// shop, busy on purpose, cannot delay the requests the generator is due to
// send. It calls stopShop when the hooks say the shop must stop, and tells
// progress how far the load has got.
type StageGenerator func(ctx context.Context, sc loadtest.Scenario, shop Target, hooks StageHooks, stopShop func(), progress func(mode string, done, total time.Duration)) (StageLoad, error)

// stageInProcess is the StageGenerator that sends the load from this
// process.
func stageInProcess(ctx context.Context, sc loadtest.Scenario, shop Target, hooks StageHooks, stopShop func(), progress func(string, time.Duration, time.Duration)) (StageLoad, error) {
	return RunStageLoad(ctx, sc, shop, hooks, stopShop, loadtest.RunOptions{Progress: progress, CPU: processCPU})
}

// runStage runs one stage on a shop of its own, with the fault proxies
// between its services when the fault stalls a link, and its load sent
// by gen (nil: from this process). A stage without read caps has its
// shop stopped once the fault's schedule is over and the clients'
// deadline has passed (StageHooks.StopAfter): the command never waits on
// a hung call.
func runStage(ctx context.Context, cfg CapstoneConfig, st capstoneStage, sugg budget.Suggestion, log *slog.Logger, progress func(string, time.Duration, time.Duration), gen StageGenerator) (StageLoad, error) {
	sc, err := cfg.scenario(st)
	if err != nil {
		return StageLoad{}, err
	}
	mech, err := st.mechanisms()
	if err != nil {
		return StageLoad{}, err
	}
	shopCfg := shop.EphemeralConfig()
	shopCfg.Shared.Mode = st.mode
	shopCfg.Shared.DrainTimeout = 200 * time.Millisecond
	r := serve.DefaultResilience()
	r.Workers, r.BreakerOpen = cfg.Workers, cfg.BreakerOpen
	shopCfg.Shared.Resilience = r
	shopCfg.Network = sc.UsesNetwork()
	if st.suggested {
		if err := applySuggestion(sugg, &shopCfg); err != nil {
			return StageLoad{}, err
		}
	}
	s, err := shop.Start(ctx, shopCfg, log)
	if err != nil {
		return StageLoad{}, err
	}
	defer s.Stop()
	hooks := StageHooks{WarmStart: min(time.Second, cfg.WarmUp/3)}
	if !mech.Caps {
		hooks.StopAfter = cfg.Fault + cfg.Deadline
	}
	var bar func(string, time.Duration, time.Duration)
	if progress != nil {
		bar = func(_ string, done, total time.Duration) { progress(st.name, done, total) }
	}
	if gen == nil {
		gen = stageInProcess
	}
	out, err := gen(ctx, sc, target(s), hooks, func() { _ = s.Stop() }, bar)
	if err != nil {
		return StageLoad{}, err
	}
	for i := range out.Results.Modes {
		out.Results.Modes[i].Mode = st.name
	}
	return out, nil
}

// RunStageLoad runs a stage's scenario against its shop at t, in the
// process that calls it, and reads the warm-up's hop histograms as hooks
// say. When hooks.StopAfter is set it calls stopShop that long after the
// fault goes on (or as the run ends, if that comes first), having read the
// counters one last time: from then on the run is answered with those, and
// sets no more faults.
func RunStageLoad(ctx context.Context, sc loadtest.Scenario, t Target, hooks StageHooks, stopShop func(), o loadtest.RunOptions) (StageLoad, error) {
	ss := &stageShop{Driver: t.Drive(), admin: t.Admin[sim.ServiceGateway], stopShop: stopShop}
	settled := time.AfterFunc(hooks.WarmStart, func() { ss.warmStart(ctx) })
	defer settled.Stop()
	if hooks.StopAfter > 0 {
		// Timed from the fault's start, not the stage's: the steps before
		// the schedule (switching the mode, setting a link's faults) take
		// longer on a busy machine, and must not eat into the fault.
		ss.stopAfter = func() *time.Timer {
			return time.AfterFunc(hooks.StopAfter, func() { ss.stop(ctx) })
		}
		defer ss.stopIfArmed(ctx)
	}
	res, err := loadtest.RunScenario(ctx, sc, ss, o)
	if err != nil {
		return StageLoad{}, err
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return StageLoad{Results: res, WarmStart: ss.hopsStart, WarmEnd: ss.hopsEnd}, nil
}

// stageShop is a stage's shop as the scenario runner drives it. It keeps
// the calls' hop histograms as they stood at the start of the warm-up and
// when the fault went on (its end), and once the shop has been stopped it
// answers with the last counters read before the stop.
type stageShop struct {
	*driver.Driver
	// admin is the gateway's admin URL, where the hops are read.
	admin string
	// stopShop stops the shop, wherever it runs.
	stopShop func()

	mu sync.Mutex
	// hopsStart and hopsEnd are the calls' hop histograms at the start and
	// the end of the warm-up (warmed: the end has been read).
	hopsStart, hopsEnd budget.Hops
	warmed             bool
	last               *loadtest.Counters
	stopped            bool
	// stopAfter, when set, arms the stop of a shop whose calls may never
	// end, as the fault goes on; end is the armed timer.
	stopAfter func() *time.Timer
	end       *time.Timer
}

var _ loadtest.Target = (*stageShop)(nil)

// Counters reads the services' counters; after the stop, those read last.
func (s *stageShop) Counters(ctx context.Context) (loadtest.Counters, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped && s.last != nil {
		return *s.last, nil
	}
	c, err := s.Driver.Counters(ctx)
	if err != nil {
		return c, err
	}
	s.last = &c
	return c, nil
}

// SetFaults puts the faults in force; the first time any go on, it first
// reads the hop histograms that end the healthy warm-up, and arms the stop.
// After the stop it does nothing.
func (s *stageShop) SetFaults(ctx context.Context, specs map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	if len(specs) > 0 && !s.warmed {
		// Armed first: reading the hops takes longer on a busy machine,
		// and must not push the stop past the run's end.
		if s.stopAfter != nil {
			s.end = s.stopAfter()
		}
		h, err := budget.ObserveHops(ctx, s.admin, "")
		if err != nil && !errors.Is(err, budget.ErrNoTraffic) {
			return err
		}
		s.hopsEnd, s.warmed = h, true
	}
	return s.Driver.SetFaults(ctx, specs)
}

// SetNetwork puts the links' faults in force; after the stop it does
// nothing.
func (s *stageShop) SetNetwork(ctx context.Context, specs map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	return s.Driver.SetNetwork(ctx, specs)
}

// stopIfArmed stops the shop now if its stop is armed and has not fired:
// a run that ends first still leaves a shop without read caps stopped.
func (s *stageShop) stopIfArmed(ctx context.Context) {
	s.mu.Lock()
	armed := s.end != nil && s.end.Stop()
	s.mu.Unlock()
	if armed {
		s.stop(ctx)
	}
}

// Settle does nothing once the shop is stopped.
func (s *stageShop) Settle(ctx context.Context, limit time.Duration) {
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	if !stopped {
		s.Driver.Settle(ctx, limit)
	}
}

// warmStart reads the hop histograms that begin the warm-up.
func (s *stageShop) warmStart(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.warmed {
		return
	}
	if h, err := budget.ObserveHops(ctx, s.admin, ""); err == nil || errors.Is(err, budget.ErrNoTraffic) {
		s.hopsStart = h
	}
}

// stop reads the counters one last time and stops the shop.
func (s *stageShop) stop(ctx context.Context) {
	s.mu.Lock()
	if c, err := s.Driver.Counters(ctx); err == nil {
		s.last = &c
	}
	s.stopped = true
	s.mu.Unlock()
	if s.stopShop != nil {
		s.stopShop()
	}
}
