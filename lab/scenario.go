package lab

import (
	"context"
	"log/slog"
	"syscall"
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
// nobody waits for) cannot count against the next.
func Scenario(ctx context.Context, sc loadtest.Scenario, log *slog.Logger, progress func(string, time.Duration, time.Duration)) (loadtest.Results, error) {
	var all loadtest.Results
	for _, m := range sc.Modes {
		one := sc
		one.Modes = []mode.Mode{m}
		res, err := scenarioOnce(ctx, one, log, progress)
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
	all.Checks = loadtest.Evaluate(sc.Checks, all)
	return all, nil
}

func scenarioOnce(ctx context.Context, sc loadtest.Scenario, log *slog.Logger, progress func(string, time.Duration, time.Duration)) (loadtest.Results, error) {
	cfg := shop.EphemeralConfig()
	cfg.Shared.DrainTimeout = 200 * time.Millisecond
	r := serve.DefaultResilience()
	if sc.Shop.Workers > 0 {
		r.Workers = sc.Shop.Workers
	}
	if sc.Shop.BreakerOpen > 0 {
		r.BreakerOpen = time.Duration(sc.Shop.BreakerOpen)
	}
	cfg.Shared.Resilience = r
	// A scenario with network faults runs with the fault proxies between
	// the services; any other, with none in the way.
	cfg.Network = sc.UsesNetwork()
	s, err := shop.Start(ctx, cfg, log)
	if err != nil {
		return loadtest.Results{}, err
	}
	defer s.Stop()
	return loadtest.RunScenario(ctx, sc, drive(s), loadtest.RunOptions{Progress: progress, CPU: processCPU})
}

// drive is a driver for the in-process shop s.
func drive(s *shop.Shop) *driver.Shop {
	admin := map[string]string{}
	for _, p := range s.Processes() {
		admin[p.Name] = "http://" + p.AdminAddr
	}
	d := driver.New(s.GatewayURL(), admin, "")
	if s.Netproxy != nil {
		d.UseNetwork("http://" + s.Netproxy.AdminAddr)
	}
	return d
}

// processCPU is this process's CPU time, user and system: the in-process
// shop's cost, with the load generator's own share in it.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
