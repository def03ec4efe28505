package serve_test

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/serve"
)

func TestCommonValidate(t *testing.T) {
	valid := serve.Defaults(":8082", "127.0.0.1:9082")
	tests := []struct {
		name   string
		change func(*serve.Common)
		want   []string // pieces of the error; none means valid
	}{
		{"defaults", func(*serve.Common) {}, nil},
		{"both on ephemeral ports", func(c *serve.Common) { c.Addr, c.AdminAddr = "127.0.0.1:0", "127.0.0.1:0" }, nil},
		{"naive", func(c *serve.Common) { c.Mode = mode.Naive }, nil},
		{"zero margin and floor", func(c *serve.Common) { c.Margin, c.Floor = 0, 0 }, nil},
		{"one-minute margin and floor", func(c *serve.Common) { c.Margin, c.Floor = time.Minute, time.Minute }, nil},
		{"empty addr", func(c *serve.Common) { c.Addr = "" }, []string{"addr: must not be empty"}},
		{"empty admin addr", func(c *serve.Common) { c.AdminAddr = "" }, []string{"admin-addr: must not be empty"}},
		{"admin shares the serving port", func(c *serve.Common) { c.Addr, c.AdminAddr = ":8080", ":8080" }, []string{"admin-addr: must differ"}},
		{"no mode", func(c *serve.Common) { c.Mode = "" }, []string{"mode:"}},
		{"unknown mode", func(c *serve.Common) { c.Mode = "fast" }, []string{"mode:", `"fast"`}},
		{"negative margin", func(c *serve.Common) { c.Margin = -time.Millisecond }, []string{"margin:"}},
		{"margin over a minute", func(c *serve.Common) { c.Margin = time.Minute + 1 }, []string{"margin:"}},
		{"negative floor", func(c *serve.Common) { c.Floor = -time.Millisecond }, []string{"floor:"}},
		{"floor over a minute", func(c *serve.Common) { c.Floor = 2 * time.Minute }, []string{"floor:"}},
		{"no connect timeout", func(c *serve.Common) { c.ConnectTimeout = 0 }, []string{"connect-timeout:"}},
		{"connect timeout over a minute", func(c *serve.Common) { c.ConnectTimeout = 2 * time.Minute }, []string{"connect-timeout:"}},
		{"zero drain timeout", func(c *serve.Common) { c.DrainTimeout = 0 }, []string{"drain-timeout:"}},
		{"negative drain timeout", func(c *serve.Common) { c.DrainTimeout = -time.Second }, []string{"drain-timeout:"}},
		{"unknown retry strategy", func(c *serve.Common) { r := mode.Retries("sometimes"); c.Overrides.Retries = &r }, []string{"mechanisms:", `"sometimes"`}},
		{"unknown fanout", func(c *serve.Common) { f := mode.Fanout("sideways"); c.Overrides.Fanout = &f }, []string{"mechanisms:", `"sideways"`}},
		{"zero workers", func(c *serve.Common) { c.Resilience.Workers = 0 }, []string{"workers:"}},
		{"negative bulkhead", func(c *serve.Common) { c.Resilience.Bulkhead = -1 }, []string{"bulkhead:"}},
		{"zero breaker calls", func(c *serve.Common) { c.Resilience.BreakerMinCalls = 0 }, []string{"breaker-min-calls:"}},
		{"breaker window too short", func(c *serve.Common) { c.Resilience.BreakerWindow = 10 * time.Millisecond }, []string{"breaker-window:"}},
		{"no database connections", func(c *serve.Common) { c.DBMaxConns = 0 }, []string{"db-max-conns:"}},
		{"every problem is reported", func(c *serve.Common) { *c = serve.Common{Shared: serve.Shared{Margin: -1, Floor: -1}} },
			[]string{"addr: must not be empty", "admin-addr: must not be empty", "mode:", "margin:", "floor:", "drain-timeout:", "workers:", "db-max-conns:"}},

		// The admin API changes the service: beyond loopback it needs a
		// token, or the operator's explicit opt-in.
		{"admin on localhost", func(c *serve.Common) { c.AdminAddr = "localhost:9082" }, nil},
		{"admin on IPv6 loopback", func(c *serve.Common) { c.AdminAddr = "[::1]:9082" }, nil},
		{"admin on every interface", func(c *serve.Common) { c.AdminAddr = ":9082" }, []string{"admin-addr:", "--admin-token", "--admin-insecure"}},
		{"admin on 0.0.0.0", func(c *serve.Common) { c.AdminAddr = "0.0.0.0:9082" }, []string{"admin-addr:"}},
		{"admin on a LAN address", func(c *serve.Common) { c.AdminAddr = "192.168.1.20:9082" }, []string{"admin-addr:"}},
		{"admin on a host name", func(c *serve.Common) { c.AdminAddr = "catalog:9082" }, []string{"admin-addr:"}},
		{"admin on every interface with a token", func(c *serve.Common) { c.AdminAddr, c.AdminToken = ":9082", "s3cret" }, nil},
		{"admin on every interface, insecure on purpose", func(c *serve.Common) { c.AdminAddr, c.AdminInsecure = ":9082", true }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid
			tt.change(&c)
			err := c.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	c := serve.Defaults(":1", ":2")
	if c.Addr != ":1" || c.AdminAddr != ":2" || c.Mode != serve.DefaultMode || c.Margin != serve.DefaultMargin ||
		c.Floor != serve.DefaultFloor || c.DrainTimeout != serve.DefaultDrainTimeout || c.Faults == nil {
		t.Errorf("Defaults = %+v", c)
	}
}

func TestRegisterFlags(t *testing.T) {
	c := serve.Defaults(":8082", "127.0.0.1:9082")
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.RegisterFlags(fs)
	err := fs.Parse([]string{
		"--addr=:1", "--admin-addr=:2", "--mode=naive", "--margin=5ms", "--floor=50ms",
		"--drain-timeout=3s", "--fault=ReserveStock:latency=280ms", "--fault=CreateCharge:hang",
		"--mechanisms=breakers=on", "--admin-token=s3cret", "--admin-insecure",
		"--workers=7", "--bulkhead=9", "--max-wait=50ms", "--breaker-min-calls=10", "--breaker-window=15s", "--breaker-ratio=0.25", "--breaker-open=5s",
		"--db-max-conns=6",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := faults.Set{"ReserveStock": {Latency: 280 * time.Millisecond}, "CreateCharge": {Hang: faults.DefaultHang}}
	if c.Addr != ":1" || c.AdminAddr != ":2" || c.Mode != mode.Naive || c.Margin != 5*time.Millisecond ||
		c.Floor != 50*time.Millisecond || c.DrainTimeout != 3*time.Second || c.Faults.String() != want.String() {
		t.Errorf("after parsing flags: %+v", c)
	}
	if c.AdminToken != "s3cret" || !c.AdminInsecure || c.Overrides.Breakers == nil || !*c.Overrides.Breakers {
		t.Errorf("after parsing flags: token %q, insecure %t, overrides %+v", c.AdminToken, c.AdminInsecure, c.Overrides)
	}
	wantRes := serve.Resilience{Workers: 7, Bulkhead: 9, MaxWait: 50 * time.Millisecond,
		BreakerMinCalls: 10, BreakerWindow: 15 * time.Second, BreakerRatio: 0.25, BreakerOpen: 5 * time.Second}
	if c.Resilience != wantRes || c.DBMaxConns != 6 {
		t.Errorf("after parsing flags: resilience %+v, db-max-conns %d; want %+v and 6", c.Resilience, c.DBMaxConns, wantRes)
	}
	// The override applies on top of the naive preset.
	if got := c.Settings().Mechanisms; !got.Breakers || got.Bulkheads {
		t.Errorf("Settings().Mechanisms = %+v, want naive with breakers on", got)
	}
}

// --breaker-window once counted the last N calls: a bare number still
// works, as the fewest calls a breaker opens on.
func TestBreakerWindowTakesTheOldCount(t *testing.T) {
	for _, tc := range []struct {
		arg      string
		minCalls int
		window   time.Duration
		err      bool
	}{
		{"--breaker-window=12", 12, 0, false},
		{"--breaker-window=8s", 20, 8 * time.Second, false},
		{"--breaker-window=0", 20, 0, false},
		{"--breaker-window=soon", 20, 0, true},
	} {
		c := serve.Defaults(":8082", "127.0.0.1:9082")
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c.RegisterFlags(fs)
		err := fs.Parse([]string{tc.arg})
		if (err != nil) != tc.err || c.Resilience.BreakerMinCalls != tc.minCalls || c.Resilience.BreakerWindow != tc.window {
			t.Errorf("%s: min calls %d, window %v, err %v; want %d, %v, error %t",
				tc.arg, c.Resilience.BreakerMinCalls, c.Resilience.BreakerWindow, err, tc.minCalls, tc.window, tc.err)
		}
	}
}

func TestSettings(t *testing.T) {
	c := serve.Defaults(":1", ":2")
	c.Mode, c.Margin, c.Floor, c.ConnectTimeout, c.Resilience.Workers = mode.Naive, 7*time.Millisecond, 70*time.Millisecond, 1500*time.Millisecond, 50
	want := mode.Settings{Mode: mode.Naive, Mechanisms: mode.Naive.Mechanisms(), Margin: 7 * time.Millisecond, Floor: 70 * time.Millisecond,
		Connect: 1500 * time.Millisecond, Workers: 50}
	if got := c.Settings(); got != want {
		t.Errorf("Settings() = %+v, want %+v", got, want)
	}
}
