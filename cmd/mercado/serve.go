package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strings"
	"syscall"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/lab/console"
	"github.com/mercado-lab/mercado/lab/shop"
	"github.com/mercado-lab/mercado/services/catalog"
	"github.com/mercado-lab/mercado/services/gateway"
	"github.com/mercado-lab/mercado/services/orders"
	"github.com/mercado-lab/mercado/services/payments"
	"github.com/mercado-lab/mercado/services/shipping"
)

const serveUsage = `Usage: mercado serve <gateway|orders|catalog|payments|shipping|all|netproxy> [flags]

Serves one service, or all five in one process on loopback ports (the
embedded default: in-memory stores, no Docker, no database). With
--database-url (or MERCADO_DATABASE_URL) the services keep their state in
PostgreSQL instead, one schema each. A service served alone answers its
admin API on loopback; on any other address it needs --admin-token (or
--admin-insecure). serve all --network-proxy puts a fault proxy on every
link between the services, set through the wire's admin API on
127.0.0.1:9085 (mercado fault --network); serve netproxy runs those
proxies alone, for services served apart (--link). Stops gracefully on
SIGINT or SIGTERM.

Flags:
`

// service is what runServe needs of one service, or of all five: its
// flags, its validation, the settings each service will run with (for
// the log) and its start.
type service struct {
	register func(*flag.FlagSet)
	validate func() error
	settings func() []settings
	start    func(context.Context, *slog.Logger) (waiter, error)
}

// settings are one service's settings as flag values.
type settings struct {
	service string
	flags   map[string]string
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
		return usagef("serve %s: %w", name, err)
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	for _, s := range svc.settings() {
		// serve all's five configurations are behind --log-level debug:
		// at start it says where the shop and its console are.
		if name == "all" {
			log.Debug("configuration", "service", s.service, "flags", s.flags)
		} else {
			log.Info("configuration", "service", s.service, "flags", s.flags)
		}
	}
	w, err := svc.start(ctx, log)
	if err != nil {
		hint := "another program holds the port: stop it, or choose others with --addr and --admin-addr (serve all: --ephemeral-ports)"
		if name == "all" {
			hint = portTakenHint
		}
		return fmt.Errorf("serve %s: %w", name, portTaken(err, hint))
	}
	if s, ok := w.(*shop.Shop); ok && level <= slog.LevelInfo {
		fmt.Fprintf(stderr, "Mercado's shop:  %s\nIts console:     http://%s/console/\n", s.GatewayURL(), s.Gateway.AdminAddr)
		if s.Netproxy != nil {
			fmt.Fprintf(stderr, "The wire's admin: http://%s (mercado fault --network)\n", s.Netproxy.AdminAddr)
		}
		fmt.Fprintln(stderr, "Ctrl-C stops it; --log-level debug shows each service's configuration.")
	}
	return w.Wait()
}

// portTakenHint is what to do when one of the shop's usual ports is
// taken.
const portTakenHint = "another program holds the port: stop it, or run with --ephemeral-ports for free ones"

// portTaken adds hint to err when err is a port already in use.
func portTaken(err error, hint string) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%w (%s)", err, hint)
	}
	return err
}

func lookupService(name string) (service, error) {
	switch name {
	case "gateway":
		cfg := gateway.DefaultConfig()
		return one(name, cfg.RegisterFlags, func() error { return errors.Join(cfg.Validate(), checkFaults("fault", name, cfg.Faults)) },
			func(ctx context.Context, log *slog.Logger) (waiter, error) {
				cfg.Console = console.Gateway(log)
				return gateway.Start(ctx, cfg, log)
			}), nil
	case "orders":
		cfg := orders.DefaultConfig()
		return one(name, cfg.RegisterFlags, func() error { return errors.Join(cfg.Validate(), checkFaults("fault", name, cfg.Faults)) },
			func(ctx context.Context, log *slog.Logger) (waiter, error) { return orders.Start(ctx, cfg, log) }), nil
	case "catalog":
		return leaf(name, catalog.DefaultConfig(), catalog.Start), nil
	case "payments":
		return leaf(name, payments.DefaultConfig(), payments.Start), nil
	case "shipping":
		return leaf(name, shipping.DefaultConfig(), shipping.Start), nil
	case "all":
		return allServices(), nil
	case "netproxy":
		return netproxyService(), nil
	}
	return service{}, usagef("serve: unknown service %q", name)
}

// one is a service served alone: its flags are those of its
// configuration, bound by register.
func one(name string, register func(*flag.FlagSet), validate func() error,
	start func(context.Context, *slog.Logger) (waiter, error)) service {
	return service{register, validate,
		func() []settings { return []settings{{name, flagValues(register, nil)}} }, start}
}

// leaf is a service configured by the common settings alone.
func leaf(name string, cfg serve.Common, start func(context.Context, serve.Common, *slog.Logger) (*serve.Process, error)) service {
	return one(name, cfg.RegisterFlags, func() error { return errors.Join(cfg.Validate(), checkFaults("fault", name, cfg.Faults)) },
		func(ctx context.Context, log *slog.Logger) (waiter, error) { return start(ctx, cfg, log) })
}

// notForAll are the flags of `serve <name>` that `serve all` cannot
// honour, each with the reason. `serve all` lists them too, so that
// setting one, as a flag or as its MERCADO_ variable, is refused with
// that reason (exit 2) rather than ignored.
var notForAll = []struct {
	name, reason string
	isBool       bool
}{
	{"addr", "serve all puts each service on its own loopback port (--ephemeral-ports: free ones); serve the services one by one to choose", false},
	{"admin-addr", "serve all puts each admin listener on its own loopback port (--ephemeral-ports: free ones); serve the services one by one to choose", false},
	{"admin-insecure", "serve all's admin listeners are on loopback, where no machine but this one reaches them", true},
	{"fault", "serve all takes one per service: --gateway-fault, --orders-fault, --catalog-fault, --payments-fault or --shipping-fault", false},
	{"orders-addr", "serve all connects its services to each other", false},
	{"catalog-addr", "serve all connects its services to each other", false},
	{"payments-addr", "serve all connects its services to each other", false},
	{"shipping-addr", "serve all connects its services to each other", false},
	{"admin-peers", "serve all's gateway fans a mode switch out to the shop's four other services", false},
	{"network-admin", "serve all's console uses the shop's own wire (--network-proxy)", false},
}

// refused is the flag.Value of a flag in notForAll: any value is an
// error that gives the reason.
type refused struct {
	reason string
	isBool bool
}

func (r refused) String() string   { return "" }
func (r refused) Set(string) error { return errors.New(r.reason) }
func (r refused) IsBoolFlag() bool { return r.isBool }

// allServices runs the five services in one process on loopback at their
// usual ports. The shared settings (mode, mechanisms, pools, breakers,
// admin token, database, drain) are registered once and given to every
// service; the gateway's edge flags, orders' caps and each service's
// faults are flags of their own; the rest is refused (notForAll).
func allServices() service {
	cfg := shop.DefaultConfig("127.0.0.1")
	var ephemeral bool
	register := func(fs *flag.FlagSet) {
		cfg.Shared.RegisterFlags(fs)
		cfg.Gateway.RegisterEdgeFlags(fs)
		cfg.Orders.RegisterCapFlags(fs)
		for _, name := range faults.Services() {
			fs.Var(cfg.Faults()[name], name+"-fault", "simulated work of "+name+`, "[Method:]latency=280ms[,hang[=10s]]"`)
		}
		fs.BoolVar(&ephemeral, "ephemeral-ports", false, "listen on free loopback ports instead (the serving log lines say which)")
		fs.BoolVar(&cfg.Network, "network-proxy", cfg.Network,
			"put a fault proxy on every link between the services, with the wire's admin API on 127.0.0.1:9085 (mercado fault --network)")
		for _, f := range notForAll {
			fs.Var(refused{f.reason, f.isBool}, f.name, "not for serve all: "+f.reason)
		}
	}
	validate := func() error {
		if ephemeral {
			cfg.UseEphemeralPorts()
		}
		errs := []error{cfg.Validate()}
		sets := cfg.Faults()
		for _, name := range slices.Sorted(maps.Keys(sets)) {
			errs = append(errs, checkFaults(name+"-fault", name, *sets[name]))
		}
		return errors.Join(errs...)
	}
	describe := func() []settings {
		c := cfg.Resolved()
		// The addresses are left out: Start sets them as the services bind.
		skip := func(name string) bool {
			return name == "addr" || strings.HasSuffix(name, "-addr") || name == "admin-peers"
		}
		return []settings{
			{sim.ServiceGateway, flagValues(c.Gateway.RegisterFlags, skip)},
			{sim.ServiceOrders, flagValues(c.Orders.RegisterFlags, skip)},
			{sim.ServiceCatalog, flagValues(c.Catalog.RegisterFlags, skip)},
			{sim.ServicePayments, flagValues(c.Payments.RegisterFlags, skip)},
			{sim.ServiceShipping, flagValues(c.Shipping.RegisterFlags, skip)},
		}
	}
	start := func(ctx context.Context, log *slog.Logger) (waiter, error) {
		cfg.Gateway.Console = console.Gateway(log)
		return shop.Start(ctx, cfg, log)
	}
	return service{register, validate, describe, start}
}

// flagValues are the values of the flags register binds, as they stand,
// leaving out those skip names (when skip is not nil) and the secrets:
// the admin token shows only whether it is set, the database URL only its
// host and database.
func flagValues(register func(*flag.FlagSet), skip func(string) bool) map[string]string {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	register(fs)
	values := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) {
		if skip != nil && skip(f.Name) {
			return
		}
		v := f.Value.String()
		switch {
		case v == "":
		case f.Name == "admin-token":
			v = "(set)"
		case f.Name == "database-url":
			v = redactURL(v)
		}
		values[f.Name] = v
	})
	return values
}

// redactURL is a database URL without its user, password and parameters.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "(set)"
	}
	return u.Scheme + "://" + u.Host + strings.TrimRight(u.Path, "/")
}

// checkFaults refuses a fault, given by the flag named flagName, on a
// method the service does not simulate.
func checkFaults(flagName, service string, s faults.Set) error {
	if err := s.CheckMethods(service); err != nil {
		return fmt.Errorf("--%s: %w", flagName, err)
	}
	return nil
}
