package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/mercado-lab/mercado/internal/setting"
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
	setting.Register(fs, cfg.Settings()...)
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
