package setting_test

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/setting"
)

type config struct {
	Wait    time.Duration
	Workers int
	Ratio   float64
	Addr    string
	Verbose bool
}

func (c *config) settings() []setting.Setting {
	return []setting.Setting{
		setting.Duration(&c.Wait, "wait", 100*time.Millisecond, setting.Above(0, time.Hour), "how long to wait"),
		setting.Int(&c.Workers, "workers", 8, setting.Within(1, 100), "workers"),
		setting.Float(&c.Ratio, "ratio", 0.5, setting.Above(0.0, 1), "a share"),
		setting.String(&c.Addr, "addr", ":8080", "listen address", setting.NotEmpty),
		setting.Bool(&c.Verbose, "verbose", false, "say more"),
	}
}

// One declaration gives the defaults, the flags (with those defaults) and
// the checks, each problem named by its flag.
func TestOneDeclarationPerSetting(t *testing.T) {
	var c config
	setting.Default(c.settings()...)
	if c != (config{Wait: 100 * time.Millisecond, Workers: 8, Ratio: 0.5, Addr: ":8080"}) {
		t.Fatalf("defaults: %+v", c)
	}
	if err := setting.Check(c.settings()...); err != nil {
		t.Fatalf("the defaults fail their own checks: %v", err)
	}

	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	setting.Register(fs, c.settings()...)
	if f := fs.Lookup("wait"); f == nil || f.DefValue != "100ms" {
		t.Fatalf("--wait's default: %+v", f)
	}
	if err := fs.Parse([]string{"--wait", "0", "--workers", "101", "--ratio", "1", "--addr=", "--verbose"}); err != nil {
		t.Fatal(err)
	}
	if !c.Verbose || c.Ratio != 1 {
		t.Errorf("flags did not reach the fields: %+v", c)
	}
	err := setting.Check(c.settings()...)
	if err == nil {
		t.Fatal("no problem reported")
	}
	want := []string{
		"wait: 0s is outside (0, 1h]",
		"workers: 101 is outside 1 to 100",
		"addr: must not be empty",
	}
	if got := strings.Split(err.Error(), "\n"); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("problems:\n%s\nwant:\n%s", err, strings.Join(want, "\n"))
	}
}

// A range's ends are written as a person writes them.
func TestRangeEnds(t *testing.T) {
	var d time.Duration
	for _, tc := range []struct {
		r    setting.Range[time.Duration]
		v    time.Duration
		want string
	}{
		{setting.Within(0, time.Minute), 2 * time.Minute, "d: 2m0s is outside 0 to 1m"},
		{setting.Within(100*time.Millisecond, 90*time.Minute), time.Millisecond, "d: 1ms is outside 100ms to 1h30m"},
		{setting.Above(0, 10*time.Second), -time.Second, "d: -1s is outside (0, 10s]"},
	} {
		d = tc.v
		err := setting.Check(setting.Duration(&d, "d", 0, tc.r, ""))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%v in %+v: %v, want %q", tc.v, tc.r, err, tc.want)
		}
	}
}
