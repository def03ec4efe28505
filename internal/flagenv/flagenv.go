// Package flagenv fills a flag set from the command line first and the
// environment second: every flag --some-name can also be set as
// MERCADO_SOME_NAME, and a flag given on the command line wins.
package flagenv

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// EnvName is the environment variable that sets the flag called name.
func EnvName(name string) string {
	return "MERCADO_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// Parse parses args into fs, then sets each flag not given in args from
// its environment variable, read through getenv. Errors name the flag or
// the variable at fault.
func Parse(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	if err := fs.Parse(args); err != nil {
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
			errs = append(errs, fmt.Errorf("%s=%q: %w", env, v, err))
		}
	})
	return errors.Join(errs...)
}
