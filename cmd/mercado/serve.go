package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/lab/shop"
	"github.com/mercado-lab/mercado/services/catalog"
	"github.com/mercado-lab/mercado/services/gateway"
	"github.com/mercado-lab/mercado/services/orders"
	"github.com/mercado-lab/mercado/services/payments"
	"github.com/mercado-lab/mercado/services/shipping"
)

const serveUsage = `Usage: mercado serve <gateway|orders|catalog|payments|shipping|all> [flags]

Serves one service, or all five in one process on loopback ports (the
embedded default: in-memory stores, no Docker, no database). With
--database-url (or MERCADO_DATABASE_URL) the services keep their state in
PostgreSQL instead, one schema each. Stops gracefully on SIGINT or SIGTERM.

Flags:
`

// service is what runServe needs of one service: its flags, its
// validation and its start.
type service struct {
	register func(*flag.FlagSet)
	validate func() error
	start    func(context.Context, *slog.Logger) (waiter, error)
}

type waiter interface{ Wait() error }

func runServe(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, serveUsage)
		return usagef("serve: name a service, or all")
	}
	name := args[0]
	svc, err := lookupService(name)
	if err != nil {
		fmt.Fprint(stderr, serveUsage)
		return err
	}
	fs := flag.NewFlagSet("mercado serve "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, serveUsage)
		fs.PrintDefaults()
	}
	level := slog.LevelInfo
	fs.TextVar(&level, "log-level", level, "log level: debug, info, warn or error")
	svc.register(fs)
	if help, err := parseCommand(fs, args[1:], getenv); help || err != nil {
		return err
	}
	if err := svc.validate(); err != nil {
		return usageError{fmt.Errorf("serve %s: %w", name, err)}
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	w, err := svc.start(ctx, log)
	if err != nil {
		return fmt.Errorf("serve %s: %w", name, err)
	}
	return w.Wait()
}

func lookupService(name string) (service, error) {
	switch name {
	case "gateway":
		cfg := gateway.DefaultConfig()
		return service{cfg.RegisterFlags, func() error { return errors.Join(cfg.Validate(), checkFaults("fault", name, cfg.Faults)) },
			func(ctx context.Context, log *slog.Logger) (waiter, error) { return gateway.Start(ctx, cfg, log) }}, nil
	case "orders":
		cfg := orders.DefaultConfig()
		return service{cfg.RegisterFlags, func() error { return errors.Join(cfg.Validate(), checkFaults("fault", name, cfg.Faults)) },
			func(ctx context.Context, log *slog.Logger) (waiter, error) { return orders.Start(ctx, cfg, log) }}, nil
	case "catalog":
		return leaf(name, catalog.DefaultConfig(), catalog.Start), nil
	case "payments":
		return leaf(name, payments.DefaultConfig(), payments.Start), nil
	case "shipping":
		return leaf(name, shipping.DefaultConfig(), shipping.Start), nil
	case "all":
		return allServices(), nil
	}
	return service{}, usagef("serve: unknown service %q", name)
}

// leaf is a service configured by the common settings alone.
func leaf(name string, cfg serve.Common, start func(context.Context, serve.Common, *slog.Logger) (*serve.Process, error)) service {
	return service{cfg.RegisterFlags, func() error { return errors.Join(cfg.Validate(), checkFaults("fault", name, cfg.Faults)) },
		func(ctx context.Context, log *slog.Logger) (waiter, error) { return start(ctx, cfg, log) }}
}

// allServices runs the five services on loopback at their usual ports.
// Mode, margin, floor, drain and the database apply to every service; the
// gateway's edge flags, orders' caps and each service's faults have flags
// of their own.
func allServices() service {
	cfg := shop.DefaultConfig("127.0.0.1")
	shared := serve.Defaults("", "")
	register := func(fs *flag.FlagSet) {
		shared.RegisterModeFlags(fs)
		shared.RegisterDatabaseFlags(fs)
		cfg.Gateway.RegisterEdgeFlags(fs)
		cfg.Orders.RegisterCapFlags(fs)
		for _, name := range faults.Services() {
			fs.Var(cfg.Faults()[name], name+"-fault", "simulated work of "+name+`, "[Method:]latency=280ms[,hang[=10s]]"`)
		}
	}
	validate := func() error {
		cfg.SetMode(shared.Mode, shared.Margin, shared.Floor)
		cfg.SetDrainTimeout(shared.DrainTimeout)
		cfg.SetDatabase(shared.DatabaseURL, shared.DBMaxConns)
		errs := []error{cfg.Gateway.Validate(), cfg.Orders.Validate(),
			cfg.Catalog.Validate(), cfg.Payments.Validate(), cfg.Shipping.Validate()}
		sets := cfg.Faults()
		for _, name := range slices.Sorted(maps.Keys(sets)) {
			errs = append(errs, checkFaults(name+"-fault", name, *sets[name]))
		}
		return errors.Join(errs...)
	}
	start := func(ctx context.Context, log *slog.Logger) (waiter, error) { return shop.Start(ctx, cfg, log) }
	return service{register, validate, start}
}

// checkFaults refuses a fault, given by the flag named flagName, on a
// method the service does not simulate.
func checkFaults(flagName, service string, s faults.Set) error {
	if err := s.CheckMethods(service); err != nil {
		return fmt.Errorf("--%s: %w", flagName, err)
	}
	return nil
}
