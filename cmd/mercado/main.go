// Command mercado is Mercado's one binary: it serves any of the five
// services, or all of them in one process, and runs the labs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/mercado-lab/mercado/internal/flagenv"
)

// version is set at build time with -ldflags "-X main.version=…"; without
// it the module version (or "devel") is shown.
var version = ""

const usage = `mercado — a five-service checkout shop for learning timeout budgets

Usage:
  mercado serve <gateway|orders|catalog|payments|shipping|all|netproxy> [flags]
  mercado lab [NAME] [flags]                      (NAME: a scenario, scenario FILE, lesson7, fanout,
                                                   waterfall, isolation, capstone, console or capacity)
  mercado load --gateway URL --admin URL --scenario NAME|FILE
  mercado mode [fragile|naive|budgeted] [flags]   (a running shop)
  mercado fault <service> [flags]                 (a running service)
  mercado budget <plan|predict|check|suggest> [flags]
                                                  (plan an allocation, predict its latency, check the
                                                   guardrails, suggest caps)
  mercado healthcheck URL                         (exit 0 when URL answers 200; for images)
  mercado version
  mercado help

Every flag --some-name can also be set as the environment variable
MERCADO_SOME_NAME; a flag on the command line wins. Run a command with
--help to see its flags (mercado lab --help lists every lab).

` + exitStatuses + `The other commands exit 0, 1 (an error, or budget check's findings) or 2
(a usage error).
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// usageError is a mistake in the command line or the configuration: the
// command did nothing, and exits with status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "mercado:", err)
	if errors.As(err, new(usageError)) {
		return 2
	}
	if code := verdictExit(err); code != 0 {
		return code
	}
	return 1
}

// run is the whole program, with its environment passed in so tests can
// drive it.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usagef("no command given")
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		return runServe(ctx, rest, getenv, stderr)
	case "lab":
		return runLab(ctx, rest, getenv, stdout, stderr)
	case "load":
		return runLoad(ctx, rest, getenv, stdout, stderr)
	case "mode":
		return runMode(ctx, rest, getenv, stdout, stderr)
	case "fault":
		return runFault(ctx, rest, getenv, stdout, stderr)
	case "budget":
		return runBudget(ctx, rest, getenv, stdout, stderr)
	case "healthcheck":
		return runHealthcheck(ctx, rest, stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "mercado", buildVersion())
		return nil
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return usagef("unknown command %q", cmd)
	}
}

// parseCommand parses a command's flags (then their environment
// variables). It reports help when the user asked for it (the usage is
// already printed), and a usage error, one line naming the command and the
// flag, for a bad flag or a stray argument.
func parseCommand(fs *flag.FlagSet, args []string, getenv func(string) string) (help bool, err error) {
	if help, err := parseFlags(fs, args, getenv); help || err != nil {
		return help, err
	}
	if fs.NArg() > 0 {
		return false, usagef("%s: unexpected argument %q", commandName(fs), fs.Arg(0))
	}
	return false, nil
}

// parseCommandArg parses args as parseCommand does, but takes one
// argument that is not a flag, before the flags, after them or between
// them, and returns it ("" when there is none).
func parseCommandArg(fs *flag.FlagSet, args []string, getenv func(string) string) (arg string, help bool, err error) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		arg, args = args[0], args[1:]
	}
	if help, err := parseFlags(fs, args, getenv); help || err != nil {
		return "", help, err
	}
	if fs.NArg() > 0 && arg == "" {
		// The flags after it, read as the ones before were.
		arg = fs.Arg(0)
		if help, err := parseFlags(fs, fs.Args()[1:], getenv); help || err != nil {
			return "", help, err
		}
	}
	if fs.NArg() > 0 {
		return "", false, usagef("%s: unexpected argument %q", commandName(fs), fs.Arg(0))
	}
	return arg, false, nil
}

// parseFlags reads args and the environment into fs (flagenv.Parse):
// help is true when --help was asked for, and a mistake is a usage error
// naming the command.
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string) (help bool, err error) {
	if err := flagenv.Parse(fs, args, getenv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return true, nil
		}
		return false, usageError{fmt.Errorf("%s: %w", commandName(fs), err)}
	}
	return false, nil
}

// commandName is fs's command as its messages name it: "load".
func commandName(fs *flag.FlagSet) string { return strings.TrimPrefix(fs.Name(), "mercado ") }

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
