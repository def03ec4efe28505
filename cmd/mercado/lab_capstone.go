package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/mercado-lab/mercado/internal/budget"
	"github.com/mercado-lab/mercado/internal/netfault"
	"github.com/mercado-lab/mercado/lab"
)

// Quick durations: a smoke test of the capstone's wiring, not a
// measurement (the stages' numbers need the default run's length).
const (
	quickWarmUp = 2 * time.Second
	quickFault  = 5 * time.Second
	quickStall  = 2 * time.Second
)

func runCapstone(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg := lab.DefaultCapstone()
	fs, asJSON := labFlags("capstone", stderr)
	fs.Float64Var(&cfg.CheckoutRate, "checkout-rate", cfg.CheckoutRate, "checkouts per second, open loop")
	fs.Float64Var(&cfg.BrowseRate, "browse-rate", cfg.BrowseRate, "browses per second, open loop")
	fs.DurationVar(&cfg.WarmUp, "warm-up", cfg.WarmUp, "each stage's healthy phase (stage 0's is what the suggest step reads)")
	fs.DurationVar(&cfg.Fault, "fault", cfg.Fault, "how long the fault is on in each stage")
	fs.DurationVar(&cfg.Deadline, "deadline", cfg.Deadline, "every client's deadline")
	fs.DurationVar(&cfg.Patience, "patience", cfg.Patience, "how long past its deadline a client still waits before it hangs up")
	fs.StringVar(&cfg.Carrier, "carrier", cfg.Carrier, "shipping's fault while the fault is on, in the --fault syntax")
	fs.StringVar(&cfg.Stall, "stall", cfg.Stall, "the link whose connection stalls as the fault begins ("+netfault.LinkList()+"; empty for none)")
	fs.DurationVar(&cfg.StallFor, "stall-for", cfg.StallFor, "how long the link stays stalled, from the fault's start (0 for no stall; shorter than --fault)")
	fs.Var(marginFlag{&cfg.Margin}, "margin", "what the suggest step adds to each hop's healthy p99 to make its cap: a duration such as 100ms, or a share such as 20%")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "each service's worker pool (shared by every route while bulkheads are off)")
	fs.DurationVar(&cfg.BreakerOpen, "breaker-open", cfg.BreakerOpen, "how long an open breaker stays open")
	reportFile := fs.String("report", "", "also write the HTML report, with charts across the stages, to this file")
	quick := fs.Bool("quick", false, fmt.Sprintf("%v healthy and %v of fault (%v of it stalled) per stage (for CI: a smoke test, not a measurement)", quickWarmUp, quickFault, quickStall))
	if help, err := parseCommand(fs, args, getenv); help || err != nil {
		return err
	}
	if *quick {
		cfg.WarmUp, cfg.Fault = quickWarmUp, quickFault
		if cfg.StallFor > 0 {
			cfg.StallFor = quickStall
		}
	}
	if err := cfg.Validate(); err != nil {
		return usageError{fmt.Errorf("lab capstone: %w", err)}
	}
	fmt.Fprintf(stderr, "capstone: four stages of %v each, on a fresh shop each\n", cfg.WarmUp+cfg.Fault)
	// The lab breaks the shop on purpose and stops it mid-flight; what the
	// services would log about that is not the lesson.
	bar := newProgress(stderr)
	res, err := lab.CapstoneApart(ctx, cfg, slog.New(slog.DiscardHandler), bar.update, stageGeneratorApart(stderr))
	bar.finish()
	if err != nil {
		return fmt.Errorf("lab capstone: %w", err)
	}
	if *reportFile != "" {
		if err := writeFile(*reportFile, res.WriteHTML); err != nil {
			return fmt.Errorf("lab capstone: --report: %w", err)
		}
		fmt.Fprintf(stderr, "wrote %s\n", *reportFile)
	}
	if *asJSON {
		if err := res.WriteJSON(stdout); err != nil {
			return err
		}
	} else {
		res.WriteTable(stdout)
	}
	return capstoneVerdict(res)
}

// capstoneVerdict is the capstone's verdict as an error (judged): its
// INVALID stages, or its failed claims.
func capstoneVerdict(res lab.CapstoneResult) error {
	var invalid []string
	for _, s := range res.Stages {
		if !s.Valid {
			invalid = append(invalid, "stage "+s.Stage+": "+s.Invalid)
		}
	}
	return judged("lab capstone", invalid, "Close other programs and run it again, or lower --checkout-rate and --browse-rate", res.Checks)
}

// writeFile creates name and writes it with write.
func writeFile(name string, write func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// marginFlag is a suggest margin as a flag: "100ms" or "20%".
type marginFlag struct{ m *budget.Margin }

func (f marginFlag) String() string {
	if f.m == nil {
		return ""
	}
	return f.m.String()
}

func (f marginFlag) Set(s string) error {
	m, err := budget.ParseMargin(s)
	if err != nil {
		return err
	}
	*f.m = m
	return nil
}
