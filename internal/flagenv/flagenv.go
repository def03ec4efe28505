// Package flagenv fills a flag set from the command line first and the
// environment second: every flag --some-name can also be set as
// MERCADO_SOME_NAME, and a flag given on the command line wins.
package flagenv

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// EnvName is the environment variable that sets the flag called name.
func EnvName(name string) string {
	return "MERCADO_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// Parse parses args into fs, then sets each flag not given in args from
// its environment variable, read through getenv. A mistake is returned in
// one line per flag or variable at fault, saying what it wants, and
// nothing is printed; --help prints fs's usage and returns flag.ErrHelp.
func Parse(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] {
			return
		}
		env := EnvName(f.Name)
		v := getenv(env)
		if v == "" {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", env, v, reason(f.Value, err)))
		}
	})
	return errors.Join(errs...)
}

// parseArgs is fs.Parse without its two habits that bury the point: on a
// mistake the flag package prints the error and then the whole usage, and
// of a bad number or duration it says only "parse error". Here the usage
// is printed only when asked for, and a bad value is returned as
//
//	--deadline "-5": want a duration such as 800ms or 2s
func parseArgs(fs *flag.FlagSet, args []string) error {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	// For the parse, each flag's value reports the first one that fails.
	var bad error
	var restore []func()
	fs.VisitAll(func(f *flag.Flag) {
		v := f.Value
		f.Value = watched{Value: v, failed: func(val string, err error) {
			if bad == nil {
				bad = fmt.Errorf("--%s %q: %w", f.Name, val, reason(v, err))
			}
		}}
		restore = append(restore, func() { f.Value = v })
	})
	err := fs.Parse(args)
	for _, r := range restore {
		r()
	}
	fs.Usage = usage
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		if usage != nil {
			usage()
		} else {
			fmt.Fprintf(out, "Usage of %s:\n", fs.Name())
			fs.PrintDefaults()
		}
		return err
	case bad != nil:
		return bad
	case err != nil: // an unknown flag, or one without its value
		return fmt.Errorf("%w (--help lists the flags)", err)
	}
	return nil
}

// watched is a flag's value that tells when a value given to it fails.
type watched struct {
	flag.Value
	failed func(val string, err error)
}

func (w watched) Set(val string) error {
	err := w.Value.Set(val)
	if err != nil {
		w.failed(val, err)
	}
	return err
}

// IsBoolFlag keeps a boolean flag usable without a value (--json).
func (w watched) IsBoolFlag() bool {
	b, ok := w.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// reason says what a flag of v's kind wants, for the flag package's own
// kinds, whose errors say only "parse error"; other values (a mode, a
// fault spec) explain their own refusals.
func reason(v flag.Value, err error) error {
	g, ok := v.(flag.Getter)
	if !ok {
		return err
	}
	switch g.Get().(type) {
	case time.Duration:
		return errors.New("want a duration such as 800ms or 2s")
	case bool:
		return errors.New("want true or false")
	case int, int64, uint, uint64:
		return errors.New("want a whole number")
	case float64:
		return errors.New("want a number")
	}
	return err
}
