package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/budget"
	"github.com/mercado-lab/mercado/internal/flagenv"
)

const budgetSuggestUsage = `Usage: mercado budget suggest --from URL [flags]

Reads each call's latency as a running shop measured it (every service's
hop histograms, through the gateway's admin API) and proposes a read cap
per dependency: the observed p99 plus the margin, rounded up (to 5 ms
below 100 ms, to 10 ms below a second), never under the caller's floor;
and a connect timeout: a quarter of the edge budget, at most the lessons'
2 s. Each with the line that justifies it, then the flags and environment
variables that set them. Warns when a p99 stands on too few calls, when a
call ran into the cap in force, and when the suggested caps along the
critical path do not fit the edge budget (mercado budget plan divides it).

Flags:
`

func runBudgetSuggest(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mercado budget suggest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), budgetSuggestUsage); fs.PrintDefaults() }
	from := fs.String("from", "", "a running shop's gateway admin URL, such as http://localhost:9080")
	token := fs.String("admin-token", "", "admin bearer token, when the shop requires one")
	margin := fs.String("margin", budget.DefaultMargin.String(), "added to each p99: a share such as 20%, or a duration such as 30ms")
	minSamples := fs.Uint64("min-samples", budget.DefaultMinSamples, "fewest calls a p99 is trusted over")
	asJSON := fs.Bool("json", false, "print the suggestion as JSON")
	// MERCADO_MARGIN is the services' own --margin (kept back for the way
	// back), not this one: the shop's environment must not set it here.
	env := func(k string) string {
		if k == flagenv.EnvName("margin") {
			return ""
		}
		return getenv(k)
	}
	if help, err := parseCommand(fs, args, env); help || err != nil {
		return err
	}
	if *from == "" {
		return usagef("budget suggest: --from: give a running shop's gateway admin URL, such as http://localhost:9080")
	}
	m, err := budget.ParseMargin(*margin)
	if err != nil {
		return usagef("budget suggest: --margin %w", err)
	}
	if *minSamples == 0 {
		return usagef("budget suggest: --min-samples: must be at least 1")
	}
	hops, err := budget.ObserveHops(ctx, *from, *token)
	switch {
	case errors.Is(err, admin.ErrNoAnswer):
		return fmt.Errorf("budget suggest: nothing answers at %s: start a shop (mercado serve all, or docker compose up) and give its gateway's admin URL: %w", *from, err)
	case errors.Is(err, budget.ErrNoTraffic):
		return fmt.Errorf("budget suggest: %w: send it some checkouts first (for instance mercado load --scenario lesson7 --quick), then ask again", err)
	case err != nil:
		return fmt.Errorf("budget suggest: %w", err)
	}
	s := budget.Suggest(hops.Calls, budget.SuggestOptions{Margin: m, Budget: hops.Budget, MinSamples: *minSamples})
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	writeSuggestion(stdout, *from, m, hops, s)
	return nil
}

func writeSuggestion(w io.Writer, from string, m budget.Margin, hops budget.Hops, s budget.Suggestion) {
	fmt.Fprintf(w, "budget suggest from %s: margin %s over each p99, edge budget %d ms\n", from, m, hops.Budget.Milliseconds())
	fmt.Fprintln(w, "\nread caps:")
	for _, h := range s.Hops {
		fmt.Fprintf(w, "  %s\n", h.Why)
	}
	if s.ConnectWhy != "" {
		fmt.Fprintf(w, "\nconnect timeout:\n  %s\n", s.ConnectWhy)
	}
	if len(s.Paths) > 0 {
		fmt.Fprintln(w, "\ncritical paths with these caps:")
		for _, p := range s.Paths {
			verdict := "fits"
			if !p.Fits {
				verdict = "does not fit"
			}
			fmt.Fprintf(w, "  %s: %d ms of the %d ms budget, %s: %s\n", p.Route, p.Worst.Milliseconds(), p.Budget.Milliseconds(), verdict, p.Caps)
		}
	}
	if len(s.Warnings) > 0 {
		fmt.Fprintln(w, "\nwarnings:")
		for _, x := range s.Warnings {
			fmt.Fprintf(w, "  - %s\n", x)
		}
	}
	if len(s.Flags) > 0 {
		fmt.Fprintln(w, "\nflags:")
		for _, f := range s.Flags {
			fmt.Fprintf(w, "  %s\n", f)
		}
		fmt.Fprintln(w, "\nenvironment (each service reads its own; serve all reads them all):")
		fmt.Fprintf(w, "  %s\n", strings.Join(s.Env, "\n  "))
	}
}
