// Package setting declares each of a configuration's settings once: the
// flag that sets it, its help, its default and the values it may take. A
// configuration lists its settings, one line each, and binds its flags
// (Register), fills in its defaults (Default) and checks itself (Check)
// from that one list, so a setting's name, default and range are never
// written twice.
package setting

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"
)

// A Setting is one setting of a configuration, bound to the field that
// holds it.
type Setting struct {
	// Name is the flag's name, and the name a problem with it is
	// reported under.
	Name  string
	bind  func(fs *flag.FlagSet)
	reset func()
	check func() error
}

// Register binds each setting's field to a flag on fs, the field's value
// being the flag's default.
func Register(fs *flag.FlagSet, ss ...Setting) {
	for _, s := range ss {
		s.bind(fs)
	}
}

// Default sets each setting to its declared default.
func Default(ss ...Setting) {
	for _, s := range ss {
		if s.reset != nil {
			s.reset()
		}
	}
}

// Check reports every setting whose value is out of its range, each
// problem prefixed with the setting's name.
func Check(ss ...Setting) error {
	var errs []error
	for _, s := range ss {
		if s.check == nil {
			continue
		}
		if err := s.check(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
		}
	}
	return errors.Join(errs...)
}

// ordered are the kinds of number a Range bounds.
type ordered interface {
	int | int64 | float64 | time.Duration
}

// Range is the values a number may take: from Min to Max, both included
// unless AboveMin, which leaves Min out.
type Range[T ordered] struct {
	Min, Max T
	AboveMin bool
	// any leaves the value unchecked here: a setting whose bounds depend
	// on another's, checked by the configuration itself.
	any bool
}

// Within is [lo, hi].
func Within[T ordered](lo, hi T) Range[T] { return Range[T]{Min: lo, Max: hi} }

// Above is (lo, hi].
func Above[T ordered](lo, hi T) Range[T] {
	return Range[T]{Min: lo, Max: hi, AboveMin: true}
}

// Any is every value: the configuration checks it against others.
func Any[T ordered]() Range[T] { return Range[T]{any: true} }

func (r Range[T]) check(v T) error {
	if r.any {
		return nil
	}
	if v > r.Max || v < r.Min || (r.AboveMin && v == r.Min) {
		if r.AboveMin {
			return fmt.Errorf("%v is outside (%s, %s]", v, bound(r.Min), bound(r.Max))
		}
		return fmt.Errorf("%v is outside %s to %s", v, bound(r.Min), bound(r.Max))
	}
	return nil
}

// bound writes a range's end as people do: 1m, not 1m0s.
func bound(v any) string {
	d, ok := v.(time.Duration)
	switch {
	case !ok:
		return fmt.Sprint(v)
	case d == 0:
		return "0"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Duration declares a duration setting.
func Duration(p *time.Duration, name string, def time.Duration, r Range[time.Duration], usage string) Setting {
	return number(p, name, def, r, func(fs *flag.FlagSet) { fs.DurationVar(p, name, *p, usage) })
}

// Int declares an int setting.
func Int(p *int, name string, def int, r Range[int], usage string) Setting {
	return number(p, name, def, r, func(fs *flag.FlagSet) { fs.IntVar(p, name, *p, usage) })
}

// Int64 declares an int64 setting.
func Int64(p *int64, name string, def int64, r Range[int64], usage string) Setting {
	return number(p, name, def, r, func(fs *flag.FlagSet) { fs.Int64Var(p, name, *p, usage) })
}

// Float declares a float setting.
func Float(p *float64, name string, def float64, r Range[float64], usage string) Setting {
	return number(p, name, def, r, func(fs *flag.FlagSet) { fs.Float64Var(p, name, *p, usage) })
}

func number[T ordered](p *T, name string, def T, r Range[T], bind func(*flag.FlagSet)) Setting {
	return Setting{Name: name, bind: bind, reset: func() { *p = def }, check: func() error { return r.check(*p) }}
}

// String declares a string setting; check, when not nil, says what is
// wrong with a value.
func String(p *string, name, def, usage string, check func(string) error) Setting {
	s := Setting{Name: name, bind: func(fs *flag.FlagSet) { fs.StringVar(p, name, *p, usage) }, reset: func() { *p = def }}
	if check != nil {
		s.check = func() error { return check(*p) }
	}
	return s
}

// NotEmpty is a String check.
func NotEmpty(v string) error {
	if v == "" {
		return errors.New("must not be empty")
	}
	return nil
}

// Bool declares a boolean setting.
func Bool(p *bool, name string, def bool, usage string) Setting {
	return Setting{Name: name, bind: func(fs *flag.FlagSet) { fs.BoolVar(p, name, *p, usage) }, reset: func() { *p = def }}
}

// Var declares a setting of a type of its own, which parses itself (a
// flag.Value): def is its default as the flag would be given ("" for the
// type's zero value); check, when not nil, says what is wrong with its
// value.
func Var(v flag.Value, name, def, usage string, check func() error) Setting {
	s := Setting{Name: name, bind: func(fs *flag.FlagSet) { fs.Var(v, name, usage) }, check: check}
	if def != "" {
		s.reset = func() { _ = v.Set(def) }
	}
	return s
}
