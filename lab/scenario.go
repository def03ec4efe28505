package lab

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/lab/driver"
	"github.com/mercado-lab/mercado/lab/shop"
	"github.com/mercado-lab/mercado/loadtest"
)

// Scenario runs a load-test scenario against an in-process shop sized by
// the scenario, comparing its modes. Each mode gets a freshly started shop,
// so work one mode left running (a naive server still serving a hung call
// nobody waits for) cannot count against the next. The load generator
// runs in this process too; ScenarioApart runs it in another.
func Scenario(ctx context.Context, sc loadtest.Scenario, log *slog.Logger, progress func(string, time.Duration, time.Duration)) (loadtest.Results, error) {
	return ScenarioApart(ctx, sc, log, ScenarioRun{Progress: progress})
}

// ScenarioRun is how a scenario lab runs, beside the scenario itself.
type ScenarioRun struct {
	// Progress is told each mode's progress (nil: nobody).
	Progress func(mode string, done, total time.Duration)
	// Generator sends each mode's load (nil: this process).
	Generator Generator
	// DatabaseURL keeps the shop's state in PostgreSQL (empty: in
	// memory), DBMaxConns connections a service: each mode's shop in a
	// database of its own, created on that server for the run and dropped
	// after (modeDatabase).
	DatabaseURL string
	DBMaxConns  int
}

// Generator runs one mode of a scenario against a running shop and
// measures it, as loadtest.RunScenario does: mercado lab runs it in a
// process of its own, so that the shop, busy on purpose, cannot delay the
// requests the generator is due to send (docs/performance.md).
type Generator func(ctx context.Context, sc loadtest.Scenario, shop Target) (loadtest.Results, error)

// Target is where a Generator finds the in-process shop.
type Target struct {
	Gateway string `json:"gateway"`
	// Admin are the services' admin URLs, by service name.
	Admin map[string]string `json:"admin"`
	// Network is the wire's admin URL, when the shop runs with its fault
	// proxies.
	Network string `json:"network,omitempty"`
	// PID is the shop's process, whose CPU time the run reads.
	PID int `json:"pid"`
}

// ScenarioApart is Scenario run as run says.
func ScenarioApart(ctx context.Context, sc loadtest.Scenario, log *slog.Logger, run ScenarioRun) (loadtest.Results, error) {
	var all loadtest.Results
	for _, m := range sc.Modes {
		one := sc
		one.Modes = []mode.Mode{m}
		res, err := scenarioOnce(ctx, one, log, run)
		if err != nil {
			return loadtest.Results{}, err
		}
		if all.Scenario == "" {
			all = res
		} else {
			all.Modes = append(all.Modes, res.Modes...)
		}
	}
	// The checks compare the modes, so they are measured once all ran.
	all.Conclude(sc.Checks)
	return all, nil
}

func scenarioOnce(ctx context.Context, sc loadtest.Scenario, log *slog.Logger, run ScenarioRun) (loadtest.Results, error) {
	cfg := shop.EphemeralConfig()
	cfg.Shared.DrainTimeout = 200 * time.Millisecond
	if run.DatabaseURL != "" {
		u, drop, err := modeDatabase(ctx, run.DatabaseURL, sc.Modes[0])
		if err != nil {
			return loadtest.Results{}, err
		}
		defer drop()
		cfg.Shared.DatabaseURL, cfg.Shared.DBMaxConns = u, run.DBMaxConns
	}
	if err := applyShopSpec(sc.Shop, &cfg); err != nil {
		return loadtest.Results{}, err
	}
	// A scenario with network faults runs with the fault proxies between
	// the services; any other, with none in the way.
	cfg.Network = sc.UsesNetwork()
	s, err := shop.Start(ctx, cfg, log)
	if err != nil {
		return loadtest.Results{}, err
	}
	defer s.Stop()
	var res loadtest.Results
	if run.Generator != nil {
		res, err = run.Generator(ctx, sc, target(s))
	} else {
		res, err = loadtest.RunScenario(ctx, sc, drive(s), loadtest.RunOptions{Progress: run.Progress, CPU: processCPU})
	}
	if err != nil {
		return res, err
	}
	// A run without its predictions is still a measurement: say why and
	// keep it.
	if err := predictCheckouts(ctx, "http://"+s.Gateway.AdminAddr, sc, cfg.Shared.Margin, &res); err != nil {
		log.Warn("no checkout predictions from the hops", "err", err)
	}
	return res, nil
}

// applyShopSpec sizes the in-process shop as the scenario asks; what it
// leaves zero keeps the default.
func applyShopSpec(sp loadtest.ShopSpec, cfg *shop.Config) error {
	r := serve.DefaultResilience()
	setIf(&r.Workers, sp.Workers)
	setIf(&r.Bulkhead, sp.Bulkhead)
	setIf(&r.BreakerMinCalls, sp.BreakerMinCalls)
	setIf(&r.BreakerRatio, sp.BreakerRatio)
	setIf(&r.BreakerWindow, time.Duration(sp.BreakerWindow))
	setIf(&r.BreakerOpen, time.Duration(sp.BreakerOpen))
	cfg.Shared.Resilience = r
	setIf(&cfg.Shared.Margin, time.Duration(sp.Margin))
	setIf(&cfg.Shared.Floor, time.Duration(sp.Floor))
	setIf(&cfg.Shared.ConnectTimeout, time.Duration(sp.ConnectTimeout))
	for name, d := range sp.Caps {
		i := slices.IndexFunc(capList, func(c capSetting) bool { return c.flag == "--"+name })
		if i < 0 {
			return fmt.Errorf("shop.caps: the in-process shop has no cap %s", name)
		}
		capList[i].set(cfg, time.Duration(d))
	}
	return nil
}

// setIf sets *dst to v unless v is zero.
func setIf[T comparable](dst *T, v T) {
	var zero T
	if v != zero {
		*dst = v
	}
}

// target is where a generator in another process finds the shop s.
func target(s *shop.Shop) Target {
	t := Target{Gateway: s.GatewayURL(), Admin: map[string]string{}, PID: os.Getpid()}
	for _, p := range s.Processes() {
		t.Admin[p.Name] = "http://" + p.AdminAddr
	}
	if s.Netproxy != nil {
		t.Network = "http://" + s.Netproxy.AdminAddr
	}
	return t
}

// drive is a driver for the in-process shop s.
func drive(s *shop.Shop) *driver.Driver { return target(s).Drive() }

// Drive is a driver for the shop at t.
func (t Target) Drive() *driver.Driver {
	d := driver.New(t.Gateway, t.Admin, "")
	if t.Network != "" {
		d.UseNetwork(t.Network)
	}
	return d
}
