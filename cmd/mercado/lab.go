package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/setting"
	"github.com/mercado-lab/mercado/lab"
	"github.com/mercado-lab/mercado/loadtest"
	"github.com/mercado-lab/mercado/loadtest/report"
)

func runLab(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && slices.Contains([]string{"help", "-h", "-help", "--help"}, args[0]) {
		// The overview, and the flags of the lab run with no name: a
		// scenario's.
		fs := flag.NewFlagSet("mercado lab", flag.ContinueOnError)
		fs.SetOutput(stderr)
		scenarioFlags(fs)
		printLabUsage(stderr)
		fs.PrintDefaults()
		return nil
	}
	name := defaultScenario
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	if name == "scenario" {
		if len(args) == 0 || strings.HasPrefix(args[0], "-") {
			return usagef("lab scenario: name a scenario (%s)", strings.Join(loadtest.Builtin(), ", "))
		}
		if !strings.ContainsAny(args[0], "/.") && !slices.Contains(loadtest.Builtin(), args[0]) {
			return unknownLab("scenario", args[0])
		}
		return runScenarioLab(ctx, args[0], args[1:], getenv, stdout, stderr)
	}
	if slices.Contains(loadtest.Builtin(), name) && name != "lesson7" {
		return runScenarioLab(ctx, name, args, getenv, stdout, stderr)
	}
	switch name {
	case "lesson7":
		return runLesson7(ctx, args, getenv, stdout, stderr)
	case "fanout":
		return runFanout(ctx, args, getenv, stdout, stderr)
	case "isolation":
		return runIsolation(ctx, args, getenv, stdout, stderr)
	case "waterfall":
		return runWaterfall(ctx, args, getenv, stdout, stderr)
	case "capacity":
		return runCapacity(ctx, args, getenv, stdout, stderr)
	case "capstone":
		return runCapstone(ctx, args, getenv, stdout, stderr)
	case "challenge":
		return runChallenge(ctx, args, getenv, stdout, stderr)
	case generatorCommand: // a scenario lab's own process (lab_generator.go), not one to run by hand
		return runLoadGenerator(ctx, os.Stdin, stdout)
	case "console":
		return runConsole(ctx, args, getenv, stdout, stderr)
	}
	return unknownLab("lab", name)
}

func runFanout(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg := lab.DefaultFanout()
	fs, asJSON := labFlags("fanout", stderr)
	out := pageFlag(fs)
	setting.Register(fs, cfg.Settings()...)
	if help, err := parseCommand(fs, args, getenv); help || err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return usageError{fmt.Errorf("lab fanout: %w", err)}
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	res, err := lab.Fanout(ctx, cfg, log)
	if err != nil {
		return fmt.Errorf("lab fanout: %w", err)
	}
	if err := writePage(*out, "fanout.html", func(w io.Writer) error { return res.WriteHTML(w, cfg) }, stderr); err != nil {
		return fmt.Errorf("lab fanout: %w", err)
	}
	claims, invalid := fanoutClaims(res)
	return replayOutput(stdout, *asJSON, res.WriteJSON, func(w io.Writer) { res.WriteTable(w, cfg) }, "lab fanout", claims, invalid)
}

func runLesson7(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg := lab.DefaultLesson7()
	fs, asJSON := labFlags("lesson7", stderr)
	out := pageFlag(fs)
	setting.Register(fs, cfg.Settings()...)
	if help, err := parseCommand(fs, args, getenv); help || err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return usageError{fmt.Errorf("lab lesson7: %w", err)}
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	res, err := lab.Lesson7(ctx, cfg, log)
	if err != nil {
		return fmt.Errorf("lab lesson7: %w", err)
	}
	if err := writePage(*out, "lesson7.html", func(w io.Writer) error { return res.WriteHTML(w, cfg) }, stderr); err != nil {
		return fmt.Errorf("lab lesson7: %w", err)
	}
	claims, invalid := lesson7Claims(res)
	return replayOutput(stdout, *asJSON, res.WriteJSON, func(w io.Writer) { res.WriteTable(w, cfg) }, "lab lesson7", claims, invalid)
}

func runIsolation(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := lab.DefaultIsolation()
	if err != nil {
		return fmt.Errorf("lab isolation: %w", err)
	}
	fs, asJSON := labFlags("isolation", stderr)
	out := pageFlag(fs)
	setting.Register(fs, cfg.Settings()...)
	if help, err := parseCommand(fs, args, getenv); help || err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return usageError{fmt.Errorf("lab isolation: %w", err)}
	}
	// The lab breaks the shop on purpose and stops it mid-flight; what the
	// services would log about that is not the lesson.
	log := slog.New(slog.DiscardHandler)
	bar := newProgress(stderr)
	res, err := lab.IsolationApart(ctx, cfg, log, bar.update, generatorApart(stderr, bar.update, nil))
	bar.finish()
	if err != nil {
		return fmt.Errorf("lab isolation: %w", err)
	}
	if err := writePage(*out, "isolation.html", res.WriteHTML, stderr); err != nil {
		return fmt.Errorf("lab isolation: %w", err)
	}
	if *asJSON {
		if err := res.WriteJSON(stdout); err != nil {
			return err
		}
	} else {
		res.WriteTable(stdout)
	}
	return scenarioVerdict("lab isolation", res.Run)
}

func runWaterfall(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg := lab.DefaultWaterfall()
	fs, asJSON := labFlags("waterfall", stderr)
	out := pageFlag(fs)
	setting.Register(fs, cfg.Settings()...)
	if help, err := parseCommand(fs, args, getenv); help || err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return usageError{fmt.Errorf("lab waterfall: %w", err)}
	}
	res, err := lab.Waterfall(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return fmt.Errorf("lab waterfall: %w", err)
	}
	if err := writePage(*out, "waterfall.html", func(w io.Writer) error { return res.WriteHTML(w, cfg) }, stderr); err != nil {
		return fmt.Errorf("lab waterfall: %w", err)
	}
	claims, invalid := waterfallClaims(res)
	return replayOutput(stdout, *asJSON, res.WriteJSON, func(w io.Writer) { res.WriteTable(w, cfg) }, "lab waterfall", claims, invalid)
}

// replayOutput prints a replay's results, as JSON or as its table
// followed by its checks, and returns its verdict (judged). The JSON is
// the replay's own: its verdicts and stall markers are the checks'
// figures.
func replayOutput(stdout io.Writer, asJSON bool, writeJSON func(io.Writer) error, writeTable func(io.Writer), command string, claims []report.Claim, invalid []string) error {
	verdict := judged(command, invalid, replayTodo, claims)
	if asJSON {
		if err := writeJSON(stdout); err != nil {
			return err
		}
		return verdict
	}
	writeTable(stdout)
	report.WriteClaims(stdout, "Checks", claims)
	writeReplayVerdict(stdout, verdict, invalid)
	return verdict
}

// labFlags starts a lab's flag set: the lab's usage, and --json.
func labFlags(name string, stderr io.Writer) (*flag.FlagSet, *bool) {
	fs := flag.NewFlagSet("mercado lab "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		printOneLab(stderr, name)
		fs.PrintDefaults()
	}
	return fs, fs.Bool("json", false, "print the measured results as JSON")
}

// pageFlag is a replay's --out: the folder its HTML page goes to, the
// scenario labs' report folder.
func pageFlag(fs *flag.FlagSet) *string {
	return fs.String("out", "lab-report", "folder for the lab's HTML page (NAME.html); \"\" writes none")
}

// writePage writes a replay's HTML page as dir/name, and says where.
func writePage(dir, name string, write func(io.Writer) error, stderr io.Writer) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, name)
	if err := writeFile(path, write); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s\n", path)
	return nil
}

func runCapacity(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg := lab.DefaultCapacity()
	fs, asJSON := labFlags("capacity", stderr)
	quick := fs.Bool("quick", false, "1 s per rate and one refinement (for CI: a smoke test, not a measurement)")
	// The modes are a list the flag gives as text: a string flag, its
	// default the configuration's.
	modes := fs.String("modes", modeList(cfg.Modes), "the modes to search, comma-separated")
	setting.Register(fs, cfg.Settings()...)
	if help, err := parseCommand(fs, args, getenv); help || err != nil {
		return err
	}
	cfg.Modes = nil
	for _, m := range strings.Split(*modes, ",") {
		parsed, err := mode.Parse(strings.TrimSpace(m))
		if err != nil {
			return usageError{fmt.Errorf("lab capacity: --modes: %w", err)}
		}
		cfg.Modes = append(cfg.Modes, parsed)
	}
	if *quick {
		cfg.Step, cfg.Refine = time.Second, 1
	}
	if err := cfg.Validate(); err != nil {
		return usageError{fmt.Errorf("lab capacity: %w", err)}
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	res, err := lab.Capacity(ctx, cfg, log, func(line string) { fmt.Fprintln(stderr, line) })
	if err != nil {
		return fmt.Errorf("lab capacity: %w", err)
	}
	if *asJSON {
		return res.WriteJSON(stdout)
	}
	res.WriteTable(stdout)
	return nil
}

// modeList is modes as --modes takes them: comma-separated.
func modeList(modes []mode.Mode) string {
	names := make([]string, len(modes))
	for i, m := range modes {
		names[i] = string(m)
	}
	return strings.Join(names, ",")
}
