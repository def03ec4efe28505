package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/netfault"
	"github.com/mercado-lab/mercado/internal/sim"
)

// adminPorts are each service's default admin port.
var adminPorts = map[string]string{
	sim.ServiceGateway: "9080", sim.ServiceOrders: "9081", sim.ServiceCatalog: "9082",
	sim.ServicePayments: "9083", sim.ServiceShipping: "9084",
}

const faultUsage = `Usage: mercado fault <gateway|orders|catalog|payments|shipping> [flags]
       mercado fault --network [LINK] [SPEC | --clear] [flags]

Shows or changes a running service's simulated faults through its admin
API. With no change flag it prints the faults in force. With --network it
shows or changes the network faults between the services instead
(mercado fault --network --help), on a shop served with --network-proxy:
links %s;
kinds latency=200ms[,jitter=50ms], bandwidth=64 (KB/s), stall, reset, down.

  mercado fault shipping --method CreateShipment --hang 10s
  mercado fault payments --method CreateCharge --p50 100ms --p99 400ms --error-rate 0.1
  mercado fault catalog --clear

The methods each service simulates (--method; names are case-sensitive):
%s
Flags:
`

// printFaultUsage prints the fault command's usage, with each service's
// methods.
func printFaultUsage(fs *flag.FlagSet) {
	var methods strings.Builder
	for _, svc := range faults.Services() {
		fmt.Fprintf(&methods, "  %-9s %s\n", svc, strings.Join(faults.Methods(svc), ", "))
	}
	fmt.Fprintf(fs.Output(), faultUsage, netfault.LinkList(), methods.String())
	fs.PrintDefaults()
}

func runFault(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "--network" || args[0] == "-network") {
		return runNetworkFault(ctx, args[1:], getenv, stdout, stderr)
	}
	service := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		service, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet(strings.TrimSpace("mercado fault "+service), flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { printFaultUsage(fs) }
	adminURL := fs.String("admin", "", "the service's admin URL (default http://localhost:<its admin port>, 9080 for the gateway to 9084 for shipping)")
	token := fs.String("admin-token", "", "admin bearer token, when the service requires one")
	method := fs.String("method", faults.AllMethods, `the method to change (see above), or "*" for all`)
	var spec faults.Spec
	fs.DurationVar(&spec.Latency, "latency", 0, "fixed work time")
	fs.DurationVar(&spec.P50, "p50", 0, "median work time (with --p99: a log-normal distribution)")
	fs.DurationVar(&spec.P99, "p99", 0, "99th percentile work time (with --p50)")
	fs.DurationVar(&spec.Delay, "delay", 0, "time added to every call")
	fs.Float64Var(&spec.ErrorRate, "error-rate", 0, "share of calls that fail Unavailable after their work, 0 to 1")
	fs.Float64Var(&spec.RefuseRate, "refuse-rate", 0, "share of calls refused Unavailable before any work (nothing done), 0 to 1")
	fs.DurationVar(&spec.Hang, "hang", 0, "a long stall: slow, not down")
	fs.IntVar(&spec.Slots, "slots", 0, "calls worked on at once; the rest wait in line (a dependency of bounded capacity)")
	clear := fs.Bool("clear", false, "clear the method's faults (all faults without --method)")
	if help, err := parseCommand(fs, args, getenv); help || err != nil {
		return err
	}
	port, ok := adminPorts[service]
	switch {
	case service == "":
		return usagef("fault: name a service: %s (--help lists the flags)", faults.ServiceList())
	case !ok:
		return usagef("fault: unknown service %q (want %s)", service, faults.ServiceList())
	}
	if err := faults.CheckMethod(service, *method); err != nil {
		return usagef("fault %s: --method: %w", service, err)
	}
	if *adminURL == "" {
		*adminURL = "http://localhost:" + port
	}
	changing := false
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "latency", "p50", "p99", "delay", "error-rate", "refuse-rate", "hang", "slots", "clear":
			changing = true
		}
	})
	if err := spec.Validate(); err != nil {
		return usageError{fmt.Errorf("fault: %w", err)}
	}
	c := admin.Client{URL: strings.TrimSuffix(*adminURL, "/"), Token: *token}
	var view admin.FaultsView
	var err error
	switch {
	case *clear:
		view, err = c.ClearFaults(ctx, *method)
	case changing:
		view, err = c.SetFault(ctx, *method, spec)
	default:
		view, err = c.Faults(ctx)
	}
	if errors.Is(err, admin.ErrNoAnswer) {
		return fmt.Errorf("fault %s: nothing answers at %s: start the shop with `go run ./cmd/mercado serve all`, or this service with `go run ./cmd/mercado serve %s`", service, c.URL, service)
	}
	if err != nil {
		return fmt.Errorf("fault %s: %w", service, err)
	}
	if len(view.Faults) == 0 {
		fmt.Fprintf(stdout, "%s: no faults\n", view.Service)
		return nil
	}
	fmt.Fprintf(stdout, "%s: %s\n", view.Service, view.Faults.String())
	return nil
}

const modeUsage = `Usage: mercado mode [fragile|naive|budgeted] [flags]

Shows or switches the running shop's mode through the gateway's admin API,
which switches every service in one call and reports each one's result. A
switch resets breakers, pools and retry budgets; its pools have the size
each service started with (--workers), or the size --workers names here.

  mercado mode                                  show every service's mode in force
  mercado mode fragile                          no timeouts at all
  mercado mode fragile --mechanisms caps=on,connect_timeout=on
  mercado mode naive
  mercado mode budgeted --mechanisms breakers=off
  mercado mode naive --workers 50               pools of 50, as lab classes runs

Flags:
`

func runMode(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	target := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		target, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("mercado mode", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, modeUsage); fs.PrintDefaults() }
	adminURL := fs.String("admin", "http://localhost:"+adminPorts["gateway"], "the gateway's admin URL")
	token := fs.String("admin-token", "", "admin bearer token, when the shop requires one")
	var overrides mode.Overrides
	fs.Var(&overrides, "mechanisms", `switch single mechanisms on top of the mode, e.g. "breakers=off,retries=naive"`)
	workers := fs.Int("workers", 0, "the worker pools' size the switch puts in force (0: each service's own, as it started)")
	if help, err := parseCommand(fs, args, getenv); help || err != nil {
		return err
	}
	m, err := mode.Parse(target)
	if target != "" && err != nil {
		return usageError{fmt.Errorf("mode: %w", err)}
	}
	c := admin.Client{URL: strings.TrimSuffix(*adminURL, "/"), Token: *token}
	if target == "" {
		return showModes(ctx, c, stdout)
	}
	if *workers < 0 || *workers > admin.MaxWorkers {
		return usageError{fmt.Errorf("--workers must be 1 to %d, or 0 for each service's own size", admin.MaxWorkers)}
	}
	results, err := c.Switch(ctx, admin.ModeChange{Mode: m, Mechanisms: overrides, Workers: *workers})
	for _, r := range results {
		if r.OK && r.Settings != nil {
			printMode(stdout, *r.Settings)
		} else {
			fmt.Fprintf(stdout, "%-9s FAILED: %s\n", r.Service, r.Error)
		}
	}
	if err != nil {
		return modeError(c, err)
	}
	return nil
}

// showModes prints the mode in force at the service c calls and at each
// of its peers: on the gateway, every service of the shop. A peer that
// does not answer from here (a compose network's name, say) is said so
// on its line.
func showModes(ctx context.Context, c admin.Client, stdout io.Writer) error {
	v, err := c.Mode(ctx)
	if err != nil {
		return modeError(c, err)
	}
	printMode(stdout, v)
	peers, err := c.Peers(ctx)
	if err != nil {
		return modeError(c, err)
	}
	for _, p := range peers {
		pc := admin.Client{URL: strings.TrimSuffix(p.URL, "/"), Token: c.Token, HTTP: c.HTTP}
		v, err := pc.Mode(ctx)
		if err != nil {
			fmt.Fprintf(stdout, "%-9s unknown: %s does not answer from here (%v)\n", p.Name, pc.URL, err)
			continue
		}
		printMode(stdout, v)
	}
	return nil
}

// modeError is a failed call to the gateway's admin API; when nothing
// answers, it says how to start a shop.
func modeError(c admin.Client, err error) error {
	if errors.Is(err, admin.ErrNoAnswer) {
		return fmt.Errorf("mode: no shop answers at %s: start one with `go run ./cmd/mercado serve all`", c.URL)
	}
	return fmt.Errorf("mode: %w", err)
}

func printMode(w io.Writer, v admin.ModeView) {
	m := v.Mechanisms
	fmt.Fprintf(w, "%-9s %-9s edge_deadline=%t clip_to_budget=%t admission=%t honour_cancel=%t bulkheads=%t breakers=%t retries=%s idempotency=%t outbox=%t fanout=%s caps=%t connect_timeout=%t classes=%t criticality=%t hedging=%t workers=%d\n",
		v.Service, v.Mode, m.EdgeDeadline, m.ClipToBudget, m.Admission, m.HonourCancel, m.Bulkheads, m.Breakers, m.Retries, m.Idempotency, m.Outbox, m.Fanout,
		m.Caps, m.ConnectTimeout, m.Classes, m.Criticality, m.Hedging, v.Workers)
}
