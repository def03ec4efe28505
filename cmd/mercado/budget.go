package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mercado-lab/mercado/internal/budget"
)

const budgetUsage = `Usage: mercado budget <plan|predict|check|suggest> [flags]

Timeout budgets, planned and checked (docs/budgets.md):

  plan FILE    divide a target along a call graph in proportion to p99
  predict FILE the checkout's latency and deadline misses from its calls'
               distributions, per mode
  check        the guardrails over the shop's configuration
  suggest      caps and a connect timeout from a running shop's p99s

Run a subcommand with --help to see its flags.
`

func runBudget(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, budgetUsage)
		return usagef("budget: name a subcommand: plan, predict, check or suggest")
	}
	switch sub, rest := args[0], args[1:]; sub {
	case "plan":
		return runBudgetPlan(ctx, rest, getenv, stdout, stderr)
	case "predict":
		return runBudgetPredict(ctx, rest, getenv, stdout, stderr)
	case "check":
		return runBudgetCheck(ctx, rest, getenv, stdout, stderr)
	case "suggest":
		return runBudgetSuggest(ctx, rest, getenv, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, budgetUsage)
		return nil
	default:
		return usagef("budget: unknown subcommand %q (want plan, predict, check or suggest)", sub)
	}
}

const budgetPlanUsage = `Usage: mercado budget plan FILE [flags]

Reads a call graph in YAML and prints the allocation: available = target −
edge − own − reserve, divided in proportion to p99 along the critical path
(the sum along seq, the max across par). Exits 1 when the critical path
does not fit, with the redesigns that would. With --from, the p99s of the
calls a running shop has measured come from it (a call named "catalog", or
"orders/catalog" when more than one service calls catalog); the file's
p99s stand for the rest.

  target: 800ms        # what the caller will wait
  edge: 20ms           # edge overhead (TLS, auth, parsing)
  own: 0ms             # this service's own work and response assembly
  reserve: 130ms       # cleanup after a timeout, jitter, margin
  margin: 0ms          # optional per-hop margin
  graph:               # seq: in series; par: in parallel; call: a dependency
    seq:
      - call: {name: auth, p99: 70ms}
      - par:
          - call: {name: catalog, p99: 220ms}
          - call: {name: fraud, p99: 300ms, criticality: critical}
      - call: {name: recommendations, p99: 60ms, criticality: optional}

Criticality: critical (the default), optional, deferred or fire-forward.

Flags:
`

func runBudgetPlan(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mercado budget plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), budgetPlanUsage); fs.PrintDefaults() }
	asJSON := fs.Bool("json", false, "print the plan as JSON")
	from := fs.String("from", "", "a running shop's gateway admin URL, such as http://localhost:9080: the p99s of the calls it has measured come from every service's hop histograms")
	token := fs.String("admin-token", "", "admin bearer token, when the shop requires one")
	file, f, help, err := readCallGraph("budget plan", fs, args, getenv, from)
	if help || err != nil {
		return err
	}
	if *from != "" {
		obs, err := budget.Observe(ctx, *from, *token)
		if err != nil {
			return fmt.Errorf("budget plan: %w", err)
		}
		filled, err := obs.Apply(&f)
		if err != nil {
			return usagef("budget plan: %s: %w", file, err)
		}
		if len(filled) == 0 {
			fmt.Fprintf(stderr, "p99 from %s: none of the file's calls (the shop has measured %s)\n", *from, obs.Names())
		} else {
			fmt.Fprintf(stderr, "p99 from %s: %s\n", *from, strings.Join(filled, ", "))
		}
		if err := budget.Validate(file, f); err != nil {
			return usagef("budget plan: %w", err)
		}
	}
	p := budget.Make(f)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(p); err != nil {
			return err
		}
	} else if err := p.WriteTable(stdout); err != nil {
		return err
	}
	if !p.Fits {
		return fmt.Errorf("budget plan: %s: the critical path does not fit (%d ms p99, %d ms available)", file, p.CriticalPathP99Ms, p.AvailableMs)
	}
	return nil
}

// readCallGraph parses cmd's flags and reads the call graph file that
// comes first in args (flags may follow it): its calls may leave out
// their p99 when --from (from) names a shop to read them from.
func readCallGraph(cmd string, fs *flag.FlagSet, args []string, getenv func(string) string, from *string) (string, budget.File, bool, error) {
	file := ""
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		file, args = args[0], args[1:]
	}
	if help, err := parseCommand(fs, args, getenv); help || err != nil {
		return "", budget.File{}, help, err
	}
	if file == "" {
		return "", budget.File{}, false, usagef("%s: name a call graph file (--help shows its shape)", cmd)
	}
	r, err := os.Open(file)
	if err != nil {
		return "", budget.File{}, false, usagef("%s: %w", cmd, err)
	}
	defer r.Close()
	f, err := budget.Parse(file, r, *from != "")
	if err != nil {
		return "", budget.File{}, false, usagef("%s: %w", cmd, err)
	}
	return file, f, false, nil
}

const budgetPredictUsage = `Usage: mercado budget predict FILE [flags]

Reads the call graph of ` + "`budget plan`" + ` and composes its calls' latency
distributions into the request's, for naive and budgeted mode: a seq's
calls add up as distributions (not as p99s), a par costs its slowest
branch. Prints each mode's p50, p99 and p99.9 and the share of requests
that would miss the target, beside the plan's arithmetic.

A call's distribution is log-normal when it gives p50 and p99 (as the
lab's faults draw it), or always its p99 when it gives only that; with
--from, the calls a running shop has measured take its hop histograms,
and their caps and the floor where the file gives none. A call's timeout
is its cap (cap: 300ms), or the plan's allocation; budgeted mode clips it
to what is left of the target less the margin, and starts no call with
less than the floor (floor: 20ms).

  target: 1200ms
  edge: 15ms
  margin: 15ms
  floor: 20ms
  graph:
    seq:
      - call: {name: catalog, p50: 180ms, p99: 290ms, cap: 300ms}
      - call: {name: payments, p50: 500ms, p99: 760ms, cap: 800ms}

Flags:
`

func runBudgetPredict(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mercado budget predict", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), budgetPredictUsage); fs.PrintDefaults() }
	asJSON := fs.Bool("json", false, "print the prediction as JSON")
	from := fs.String("from", "", "a running shop's gateway admin URL, such as http://localhost:9080: the calls it has measured take their hop histograms from it")
	token := fs.String("admin-token", "", "admin bearer token, when the shop requires one")
	file, f, help, err := readCallGraph("budget predict", fs, args, getenv, from)
	if help || err != nil {
		return err
	}
	if *from != "" {
		hops, err := budget.ObserveHops(ctx, *from, *token)
		if err != nil {
			return fmt.Errorf("budget predict: %w", err)
		}
		filled, err := hops.Apply(&f)
		if err != nil {
			return usagef("budget predict: %s: %w", file, err)
		}
		if len(filled) == 0 {
			fmt.Fprintf(stderr, "measured at %s: none of the file's calls\n", *from)
		} else {
			fmt.Fprintf(stderr, "measured at %s: %s\n", *from, strings.Join(filled, ", "))
		}
		if err := budget.Validate(file, f); err != nil {
			return usagef("budget predict: %w", err)
		}
	}
	p := budget.Predict(f)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}
	return p.WriteTable(stdout)
}
