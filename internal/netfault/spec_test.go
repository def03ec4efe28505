package netfault_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/netfault"
)

func TestParse(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		text string
		want netfault.Spec
		str  string // String of the result
	}{
		{"", netfault.Spec{}, "none"},
		{"none", netfault.Spec{}, "none"},
		{"latency=200ms,jitter=50ms", netfault.Spec{{Kind: netfault.Latency, Direction: netfault.DirDown, Latency: 200 * ms, Jitter: 50 * ms}}, "latency=200ms,jitter=50ms"},
		{" latency = 1s , direction = both ", netfault.Spec{{Kind: netfault.Latency, Direction: netfault.DirBoth, Latency: time.Second}}, "latency=1s,direction=both"},
		{"bandwidth=64", netfault.Spec{{Kind: netfault.Bandwidth, Direction: netfault.DirDown, RateKB: 64}}, "bandwidth=64"},
		{"stall", netfault.Spec{{Kind: netfault.Stall, Direction: netfault.DirBoth}}, "stall"},
		{"stall,direction=up", netfault.Spec{{Kind: netfault.Stall, Direction: netfault.DirUp}}, "stall,direction=up"},
		{"reset", netfault.Spec{{Kind: netfault.Reset, Direction: netfault.DirBoth}}, "reset"},
		{"down", netfault.Spec{{Kind: netfault.Down}}, "down"},
		{"latency=100ms;bandwidth=8,direction=up", netfault.Spec{
			{Kind: netfault.Latency, Direction: netfault.DirDown, Latency: 100 * ms},
			{Kind: netfault.Bandwidth, Direction: netfault.DirUp, RateKB: 8},
		}, "latency=100ms;bandwidth=8,direction=up"},
	} {
		t.Run(tc.text, func(t *testing.T) {
			got, err := netfault.Parse(tc.text)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.text, err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("Parse(%q) = %+v, want %+v", tc.text, got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("Parse(%q)[%d] = %+v, want %+v", tc.text, i, got[i], tc.want[i])
				}
			}
			if s := got.String(); s != tc.str {
				t.Errorf("String = %q, want %q", s, tc.str)
			}
		})
	}
}

// TestParseRefusals: every refusal names the setting it is about.
func TestParseRefusals(t *testing.T) {
	for text, want := range map[string]string{
		"latency":                    "latency: needs a duration",
		"latency=abc":                `latency: "abc" is not a duration`,
		"latency=1500us":             "latency: 1.5ms is not a whole number of milliseconds",
		"latency=0s":                 "latency: 0s is outside",
		"latency=2h":                 "latency: 2h0m0s is outside",
		"latency=100ms,jitter=200ms": "latency: jitter: 200ms is outside 0 to the latency",
		"latency=100ms,jitter=x":     `latency: jitter: "x" is not a duration`,
		"latency=100ms,rate=3":       `latency: unknown setting "rate" (it takes jitter and direction)`,
		"bandwidth":                  "bandwidth: needs a rate",
		"bandwidth=fast":             `bandwidth: "fast" is not a whole number`,
		"bandwidth=0":                "bandwidth: 0 is outside 1 to",
		"stall=5s":                   "stall: takes no value",
		"stall,direction=sideways":   `stall: direction: "sideways" must be up, down or both`,
		"reset,jitter=1ms":           `reset: unknown setting "jitter" (it takes direction)`,
		"down,direction=up":          `down: unknown setting "direction" (it takes none)`,
		"down;latency=1s":            "down: takes no other fault beside it",
		"stall;stall,direction=up":   "stall: given twice",
		"jam":                        `unknown fault "jam" (want latency, bandwidth, stall, reset or down)`,
		"latency=1s;":                "empty fault",
		strings.Repeat("x", 200):     "unknown fault \"" + strings.Repeat("x", 32) + "…\"",
	} {
		t.Run(text, func(t *testing.T) {
			_, err := netfault.Parse(text)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Parse(%q) = %v, want an error containing %q", text, err, want)
			}
		})
	}
}

func TestCheckLink(t *testing.T) {
	for _, l := range netfault.Links() {
		if err := netfault.CheckLink(l); err != nil {
			t.Errorf("CheckLink(%q): %v", l, err)
		}
	}
	err := netfault.CheckLink("orders-fraud")
	if err == nil || !strings.Contains(err.Error(), `"orders-fraud"`) || !strings.Contains(err.Error(), netfault.LinkList()) {
		t.Errorf("CheckLink(orders-fraud) = %v, want it named with the links", err)
	}
	if err := netfault.CheckLink(strings.Repeat("<b>", 30)); err == nil || strings.Contains(err.Error(), "<b>") {
		t.Errorf("CheckLink(markup) = %v, want a refusal that does not echo it", err)
	}
}
