package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/lab"
	"github.com/mercado-lab/mercado/lab/driver"
	"github.com/mercado-lab/mercado/loadtest"
	"github.com/mercado-lab/mercado/loadtest/report"
)

// defaultScenario is what `mercado lab` runs with no lab named: chosen for
// teaching, and short enough for a 2-core laptop.
const defaultScenario = "drill76"

// runScenarioLab runs a scenario on an in-process shop.
func runScenarioLab(ctx context.Context, name string, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return scenarioLab(ctx, name, args, getenv, stdout, stderr, nil)
}

// scenarioLab is runScenarioLab with the runs held to validity (nil: the
// default rule), so that a test can make a run INVALID on purpose.
func scenarioLab(ctx context.Context, name string, args []string, getenv func(string) string, stdout, stderr io.Writer, validity *loadtest.Validity) error {
	fs := flag.NewFlagSet("mercado lab "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { printOneLab(stderr, name); fs.PrintDefaults() }
	o := scenarioFlags(fs)
	var store storeFlags
	store.bind(fs)
	if help, err := parseCommand(fs, args, getenv); help || err != nil {
		return err
	}
	if err := store.check(); err != nil {
		return usageError{fmt.Errorf("lab %s: %w", name, err)}
	}
	sc, err := o.load(name)
	if err != nil {
		return usageError{fmt.Errorf("lab: %w", err)}
	}
	fmt.Fprintf(stderr, "scenario %s: %s per mode, modes %v, %s%s\n", sc.Name, sc.Length(), sc.Modes, store, scaleNote(sc))
	bar := newProgress(stderr)
	res, err := lab.ScenarioApart(ctx, sc, slog.New(slog.DiscardHandler), lab.ScenarioRun{Progress: bar.update,
		Generator: generatorApart(stderr, bar.update, validity), DatabaseURL: store.url, DBMaxConns: store.conns})
	bar.finish()
	if err != nil {
		return fmt.Errorf("lab %s: %w", name, err)
	}
	if err := o.report(res, stdout, stderr); err != nil {
		return err
	}
	return scenarioVerdict("lab "+name, res)
}

const loadUsage = `Usage: mercado load --gateway URL --admin URL [flags] [SCENARIO]

Runs a load-test scenario against a running shop (docker compose, Kubernetes,
or mercado serve all): switches the whole shop between the scenario's modes
through the gateway's admin API, applies each phase's faults, sends open-loop
load, and writes the comparison: a table, results.json and report.html.
SCENARIO, a built-in scenario's name or a scenario file, may also be given
as --scenario.

Built-in scenarios: ` + "%s" + `

` + exitStatuses + `
Flags:
`

func runLoad(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mercado load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintf(stderr, loadUsage, strings.Join(loadtest.Builtin(), ", ")); fs.PrintDefaults() }
	gateway := fs.String("gateway", "http://localhost:8080", "the shop's public URL")
	adminURL := fs.String("admin", "http://localhost:9080", "the gateway's admin URL (the other services are found through it)")
	token := fs.String("admin-token", "", "admin bearer token, when the shop requires one")
	networkAdmin := fs.String("network-admin", networkAdminURL,
		"the wire's admin URL (a shop served with --network-proxy), used by a scenario with network faults")
	scenario := fs.String("scenario", defaultScenario, "a built-in scenario's name, or a scenario file")
	o := scenarioFlags(fs)
	named, help, err := parseCommandArg(fs, args, getenv)
	if help || err != nil {
		return err
	}
	if named != "" {
		if set := flagSet(fs, "scenario"); set && *scenario != named {
			return usagef("load: the scenario is named twice, %s and --scenario %s; give it once", named, *scenario)
		}
		*scenario = named
	}
	if share, ok := cpuShare(); ok && share.value != share.unset {
		fmt.Fprintf(stderr, "the load generator runs with %s %d (%d unless set): it keeps its schedule while the shop shares the cores\n",
			share.name, share.value, share.unset)
	}
	sc, err := o.load(*scenario)
	if err != nil {
		return usageError{fmt.Errorf("load: %w", err)}
	}
	shop, err := driver.Discover(ctx, *gateway, strings.TrimSuffix(*adminURL, "/"), *token)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	if sc.UsesNetwork() {
		shop.UseNetwork(*networkAdmin)
	}
	fmt.Fprintf(stderr, "scenario %s against %s: %s per mode, modes %v%s\n", sc.Name, shop.URL(), sc.Length(), sc.Modes, scaleNote(sc))
	bar := newProgress(stderr)
	res, err := loadtest.RunScenario(ctx, sc, shop, loadtest.RunOptions{Progress: bar.update})
	bar.finish()
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	if err := o.report(res, stdout, stderr); err != nil {
		return err
	}
	return scenarioVerdict("load "+sc.Name, res)
}

// flagSet reports whether the flag name was set on the command line or
// from the environment.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// cgroupShare is this process's share of the CPU as its cgroup states
// it: cgroup v2's cpu.weight, or v1's cpu.shares (compose's cpu_shares).
type cgroupShare struct {
	name         string
	value, unset int
}

// cpuShare reads this process's cgroup CPU share; false where there is
// none to read (not Linux, or no cgroup CPU controller).
func cpuShare() (cgroupShare, bool) {
	for _, f := range []struct {
		path  string
		share cgroupShare
	}{
		{"/sys/fs/cgroup/cpu.weight", cgroupShare{name: "CPU weight", unset: 100}},
		{"/sys/fs/cgroup/cpu/cpu.shares", cgroupShare{name: "CPU shares", unset: 1024}},
		{"/sys/fs/cgroup/cpu,cpuacct/cpu.shares", cgroupShare{name: "CPU shares", unset: 1024}},
	} {
		b, err := os.ReadFile(f.path)
		if err != nil {
			continue
		}
		v, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			continue
		}
		f.share.value = v
		return f.share, true
	}
	return cgroupShare{}, false
}

// storeFlags choose where a scenario lab's shop keeps its state.
type storeFlags struct {
	url   string
	conns int
}

func (f *storeFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "database-url", "", "keep the shop's state on this PostgreSQL server (default: in memory): each mode's shop in a database of its own, created and dropped by the lab")
	fs.IntVar(&f.conns, "db-max-conns", serve.DefaultDBMaxConns, "each service's database pool, with --database-url")
}

func (f storeFlags) check() error {
	if f.conns < 1 || f.conns > 1000 {
		return fmt.Errorf("db-max-conns: %d is outside 1 to 1000", f.conns)
	}
	if f.url == "" {
		return nil
	}
	if err := serve.CheckDatabaseURL(f.url); err != nil {
		return fmt.Errorf("database-url: %w", err)
	}
	return nil
}

// String is the store in words, its password left out.
func (f storeFlags) String() string {
	if f.url == "" {
		return "memory store"
	}
	return "PostgreSQL at " + redactURL(f.url) + ", a database of its own for each mode"
}

// scenarioOptions are the flags every scenario run shares.
type scenarioOptions struct {
	quick  *bool
	asJSON *bool
	out    *string
	scale  *float64
}

func scenarioFlags(fs *flag.FlagSet) scenarioOptions {
	return scenarioOptions{
		quick:  fs.Bool("quick", false, "shorten each phase to its quick: length, else to a fifth (see docs/loadtest.md)"),
		asJSON: fs.Bool("json", false, "print the results JSON instead of the table"),
		out:    fs.String("out", "lab-report", "folder for results.json and report.html"),
		scale:  fs.Float64("scale", 1, fmt.Sprintf("multiply every rate of the scenario by this, %v to %v: its lesson on a machine that cannot hold its rates", loadtest.MinScale, loadtest.MaxScale)),
	}
}

func (o scenarioOptions) load(name string) (loadtest.Scenario, error) {
	sc, err := loadtest.LoadScenario(name)
	if err != nil {
		return sc, err
	}
	if *o.quick {
		sc = sc.Quick()
	}
	if *o.scale != 1 {
		return sc.Scaled(*o.scale)
	}
	return sc, nil
}

// scaleNote says, after a run's first line, what its rates were scaled
// by; nothing for the scenario's own rates.
func scaleNote(sc loadtest.Scenario) string {
	if sc.Scale == 0 {
		return ""
	}
	return fmt.Sprintf(", every rate × %g (--scale)", sc.Scale)
}

// report writes the results: the folder's files, then the table or JSON.
func (o scenarioOptions) report(res loadtest.Results, stdout, stderr io.Writer) error {
	if err := writeRunFiles(*o.out, res); err != nil {
		return err
	}
	if *o.asJSON {
		js, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		_, err = stdout.Write(append(js, '\n'))
		return err
	}
	report.WriteTable(stdout, res)
	fmt.Fprintf(stderr, "\nwrote %s and %s\n", filepath.Join(*o.out, "results.json"), filepath.Join(*o.out, "report.html"))
	return nil
}

// writeRunFiles writes a run's results.json and report.html to dir.
func writeRunFiles(dir string, res loadtest.Results) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "report.html"))
	if err != nil {
		return err
	}
	if err := report.WriteHTML(f, res); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
