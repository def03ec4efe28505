package lab

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/mercado-lab/mercado/internal/budget"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/lab/driver"
	"github.com/mercado-lab/mercado/lab/shop"
	"github.com/mercado-lab/mercado/loadtest"
)

// stageRun is what one stage measured: its run (one ModeResult, named
// after the stage), and its calls' hop histograms at the start and at the
// end of its healthy warm-up, for the suggest step.
type stageRun struct {
	results            loadtest.Results
	warmStart, warmEnd budget.Hops
}

// runStage runs one stage on a shop of its own, with the fault proxies
// between its services when the fault stalls a link. A stage without
// read caps cannot promise its calls end (a call waits as long as the
// dependency takes, and on a stalled link for ever), so its shop is
// stopped once the fault's schedule is over and the clients' deadline has
// passed: what it still held then is cut off, and the command never waits
// on a hung call.
func runStage(ctx context.Context, cfg CapstoneConfig, st capstoneStage, sugg budget.Suggestion, log *slog.Logger, progress func(string, time.Duration, time.Duration)) (stageRun, error) {
	sc, err := cfg.scenario(st)
	if err != nil {
		return stageRun{}, err
	}
	mech, err := st.mechanisms()
	if err != nil {
		return stageRun{}, err
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
			return stageRun{}, err
		}
	}
	s, err := shop.Start(ctx, shopCfg, log)
	if err != nil {
		return stageRun{}, err
	}
	defer s.Stop()
	ss := &stageShop{Shop: drive(s), admin: "http://" + s.Gateway.AdminAddr}
	// A fresh shop opens its connections on its first calls: the warm-up
	// the suggest step reads starts once those are behind it.
	settled := time.AfterFunc(min(time.Second, cfg.WarmUp/3), func() { ss.warmStart(ctx) })
	defer settled.Stop()
	if !mech.Caps {
		// Timed from the fault's start, not the stage's: the steps before
		// the schedule (switching the mode, setting a link's faults) take
		// longer on a busy machine, and must not eat into the fault.
		ss.stopAfter = func() *time.Timer {
			return time.AfterFunc(cfg.Fault+cfg.Deadline, func() { ss.stop(ctx, s) })
		}
		defer ss.cancelStop()
	}
	var bar func(string, time.Duration, time.Duration)
	if progress != nil {
		bar = func(_ string, done, total time.Duration) { progress(st.name, done, total) }
	}
	res, err := loadtest.RunScenario(ctx, sc, ss, loadtest.RunOptions{Progress: bar, CPU: processCPU})
	if err != nil {
		return stageRun{}, err
	}
	for i := range res.Modes {
		res.Modes[i].Mode = st.name
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return stageRun{results: res, warmStart: ss.hopsStart, warmEnd: ss.hopsEnd}, nil
}

// stageShop is a stage's shop as the scenario runner drives it. It keeps
// the calls' hop histograms as they stood at the start of the warm-up and
// when the fault went on (its end), and once the shop has been stopped it
// answers with the last counters read before the stop.
type stageShop struct {
	*driver.Shop
	// admin is the gateway's admin URL, where the hops are read.
	admin string

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

var _ loadtest.Shop = (*stageShop)(nil)

// Counters reads the services' counters; after the stop, those read last.
func (s *stageShop) Counters(ctx context.Context) (loadtest.Counters, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped && s.last != nil {
		return *s.last, nil
	}
	c, err := s.Shop.Counters(ctx)
	if err != nil {
		return c, err
	}
	s.last = &c
	return c, nil
}

// SetFaults puts the faults in force; the first time any go on, it first
// reads the counters that end the healthy warm-up, and arms the stop.
// After the stop it does nothing.
func (s *stageShop) SetFaults(ctx context.Context, specs map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	if len(specs) > 0 && !s.warmed {
		h, err := budget.ObserveHops(ctx, s.admin, "")
		if err != nil && !errors.Is(err, budget.ErrNoTraffic) {
			return err
		}
		s.hopsEnd, s.warmed = h, true
		if s.stopAfter != nil {
			s.end = s.stopAfter()
		}
	}
	return s.Shop.SetFaults(ctx, specs)
}

// SetNetwork puts the links' faults in force; after the stop it does
// nothing.
func (s *stageShop) SetNetwork(ctx context.Context, specs map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	return s.Shop.SetNetwork(ctx, specs)
}

// cancelStop disarms the stop, if it has not fired.
func (s *stageShop) cancelStop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.end != nil {
		s.end.Stop()
	}
}

// Settle does nothing once the shop is stopped.
func (s *stageShop) Settle(ctx context.Context, limit time.Duration) {
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	if !stopped {
		s.Shop.Settle(ctx, limit)
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
func (s *stageShop) stop(ctx context.Context, sh *shop.Shop) {
	s.mu.Lock()
	if c, err := s.Shop.Counters(ctx); err == nil {
		s.last = &c
	}
	s.stopped = true
	s.mu.Unlock()
	_ = sh.Stop()
}
