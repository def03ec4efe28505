package flagenv_test

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/flagenv"
)

func TestEnvName(t *testing.T) {
	tests := []struct{ flag, want string }{
		{"addr", "MERCADO_ADDR"},
		{"admin-addr", "MERCADO_ADMIN_ADDR"},
		{"drain-timeout", "MERCADO_DRAIN_TIMEOUT"},
		{"catalog-cap", "MERCADO_CATALOG_CAP"},
		{"max-body-bytes", "MERCADO_MAX_BODY_BYTES"},
	}
	for _, tt := range tests {
		t.Run(tt.flag, func(t *testing.T) {
			if got := flagenv.EnvName(tt.flag); got != tt.want {
				t.Errorf("EnvName(%q) = %q, want %q", tt.flag, got, tt.want)
			}
		})
	}
}

// flags is a small flag set of the kinds the services use.
type flags struct {
	fs     *flag.FlagSet
	addr   string
	margin time.Duration
	debug  bool
	names  list
}

// list is a repeatable flag.Value, like faults.Set.
type list []string

var _ flag.Value = (*list)(nil)

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func newFlags() *flags {
	f := &flags{fs: flag.NewFlagSet("test", flag.ContinueOnError)}
	f.fs.SetOutput(io.Discard)
	f.fs.StringVar(&f.addr, "admin-addr", ":9080", "")
	f.fs.DurationVar(&f.margin, "margin", 3*time.Millisecond, "")
	f.fs.BoolVar(&f.debug, "debug", false, "")
	f.fs.Var(&f.names, "name", "")
	return f
}

// env is a getenv over a fixed map.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParse(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		wantAddr   string
		wantMargin time.Duration
		wantDebug  bool
		wantNames  string
	}{
		{
			name:     "defaults when neither is set",
			wantAddr: ":9080", wantMargin: 3 * time.Millisecond,
		},
		{
			name:     "environment fills unset flags",
			env:      map[string]string{"MERCADO_ADMIN_ADDR": ":1", "MERCADO_MARGIN": "7ms", "MERCADO_DEBUG": "true", "MERCADO_NAME": "a"},
			wantAddr: ":1", wantMargin: 7 * time.Millisecond, wantDebug: true, wantNames: "a",
		},
		{
			name:     "command line wins",
			args:     []string{"--admin-addr=:2", "--margin=9ms"},
			env:      map[string]string{"MERCADO_ADMIN_ADDR": ":1", "MERCADO_MARGIN": "7ms"},
			wantAddr: ":2", wantMargin: 9 * time.Millisecond,
		},
		{
			name:     "command line wins even when it repeats the default",
			args:     []string{"--admin-addr=:9080"},
			env:      map[string]string{"MERCADO_ADMIN_ADDR": ":1"},
			wantAddr: ":9080", wantMargin: 3 * time.Millisecond,
		},
		{
			name:     "a repeatable flag on the command line is not extended from the environment",
			args:     []string{"--name=x"},
			env:      map[string]string{"MERCADO_NAME": "y"},
			wantAddr: ":9080", wantMargin: 3 * time.Millisecond, wantNames: "x",
		},
		{
			name:     "an empty variable counts as unset",
			env:      map[string]string{"MERCADO_ADMIN_ADDR": "", "MERCADO_MARGIN": ""},
			wantAddr: ":9080", wantMargin: 3 * time.Millisecond,
		},
		{
			name:     "other variables are ignored",
			env:      map[string]string{"ADMIN_ADDR": ":1", "mercado_admin_addr": ":2"},
			wantAddr: ":9080", wantMargin: 3 * time.Millisecond,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFlags()
			if err := flagenv.Parse(f.fs, tt.args, env(tt.env)); err != nil {
				t.Fatalf("Parse error: %v", err)
			}
			if f.addr != tt.wantAddr {
				t.Errorf("admin-addr = %q, want %q", f.addr, tt.wantAddr)
			}
			if f.margin != tt.wantMargin {
				t.Errorf("margin = %v, want %v", f.margin, tt.wantMargin)
			}
			if f.debug != tt.wantDebug {
				t.Errorf("debug = %v, want %v", f.debug, tt.wantDebug)
			}
			if got := f.names.String(); got != tt.wantNames {
				t.Errorf("name = %q, want %q", got, tt.wantNames)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want []string // pieces the error must contain
	}{
		{
			name: "bad environment value names the variable and the value",
			env:  map[string]string{"MERCADO_MARGIN": "soon"},
			want: []string{"MERCADO_MARGIN", `"soon"`},
		},
		{
			name: "every bad variable is reported",
			env:  map[string]string{"MERCADO_MARGIN": "soon", "MERCADO_DEBUG": "maybe"},
			want: []string{"MERCADO_MARGIN", "MERCADO_DEBUG"},
		},
		{
			name: "unknown command-line flag",
			args: []string{"--nope"},
			want: []string{"nope"},
		},
		{
			name: "bad command-line value",
			args: []string{"--margin=soon"},
			want: []string{"margin"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := flagenv.Parse(newFlags().fs, tt.args, env(tt.env))
			if err == nil {
				t.Fatal("Parse succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// A bad variable for a flag given on the command line is never read, so
// it cannot fail the parse.
func TestParseIgnoresVariableOfGivenFlag(t *testing.T) {
	f := newFlags()
	err := flagenv.Parse(f.fs, []string{"--margin=1ms"}, env(map[string]string{"MERCADO_MARGIN": "soon"}))
	if err != nil {
		t.Fatalf("Parse error: %v", err)
	}
	if f.margin != time.Millisecond {
		t.Errorf("margin = %v, want 1ms", f.margin)
	}
}

// Positional arguments stay where flag.FlagSet puts them.
func TestParseKeepsArgs(t *testing.T) {
	f := newFlags()
	if err := flagenv.Parse(f.fs, []string{"--debug", "orders", "extra"}, env(nil)); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.fs.Args(), " "); got != "orders extra" {
		t.Errorf("Args() = %q, want %q", got, "orders extra")
	}
}

// A bad value is one line that names the flag, the value and what the
// flag wants, and nothing is printed: no "parse error", no usage.
func TestParseBadValueIsOneLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"a bad duration", []string{"--margin", "-5"}, nil, `--margin "-5": want a duration such as 800ms or 2s`},
		{"a bad boolean", []string{"--debug=maybe"}, nil, `--debug "maybe": want true or false`},
		{"a bad whole number", []string{"--workers", "many"}, nil, `--workers "many": want a whole number`},
		{"a bad number", []string{"--ratio", "half"}, nil, `--ratio "half": want a number`},
		{"a value's own refusal", []string{"--name", "bad"}, nil, `--name "bad": no "bad" names`},
		{"the first bad value", []string{"--workers", "x", "--margin", "y"}, nil, `--workers "x": want a whole number`},
		{"a bad variable", nil, map[string]string{"MERCADO_MARGIN": "-5"}, `MERCADO_MARGIN="-5": want a duration such as 800ms or 2s`},
		{"an unknown flag", []string{"--nope"}, nil, "flag provided but not defined: -nope (--help lists the flags)"},
		{"a flag without its value", []string{"--margin"}, nil, "flag needs an argument: -margin (--help lists the flags)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(&out)
			fs.Usage = func() { out.WriteString("Usage: all fifty lines of it\n") }
			fs.Duration("margin", 0, "")
			fs.Bool("debug", false, "")
			fs.Int("workers", 1, "")
			fs.Float64("ratio", 0.5, "")
			fs.Var(picky{}, "name", "")
			err := flagenv.Parse(fs, tc.args, env(tc.env))
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v,\nwant %s", err, tc.want)
			}
			if out.Len() > 0 {
				t.Errorf("printed %q, want nothing (the error says it all)", out.String())
			}
		})
	}
}

// picky is a flag.Value that refuses "bad" in words of its own.
type picky struct{}

func (picky) String() string { return "" }
func (picky) Set(v string) error {
	if v == "bad" {
		return errors.New(`no "bad" names`)
	}
	return nil
}

// --help prints the usage, once, and the flags keep their kinds for it.
func TestParseHelpPrintsUsage(t *testing.T) {
	var out strings.Builder
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(&out)
	fs.Usage = func() { out.WriteString("Usage: test\n"); fs.PrintDefaults() }
	fs.Duration("margin", time.Millisecond, "kept back")
	fs.Bool("json", false, "print JSON")
	err := flagenv.Parse(fs, []string{"--help"}, env(nil))
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("error %v, want flag.ErrHelp", err)
	}
	got := out.String()
	if strings.Count(got, "Usage: test") != 1 || !strings.Contains(got, "-margin duration") || !strings.Contains(got, "(default 1ms)") {
		t.Errorf("usage printed:\n%s", got)
	}
	// A boolean flag still needs no value after a parse.
	if err := flagenv.Parse(fs, []string{"--json", "rest"}, env(nil)); err != nil || fs.Arg(0) != "rest" {
		t.Errorf("--json rest: %v, args %q", err, fs.Args())
	}
}
