package netfault_test

import (
	"testing"

	"github.com/mercado-lab/mercado/internal/netfault"
)

// FuzzParse checks the network fault grammar against arbitrary text: what
// Parse accepts validates, and its String parses back to the same spec.
// Run it with
//
//	go test -run '^$' -fuzz '^FuzzParse$' ./internal/netfault/
func FuzzParse(f *testing.F) {
	for _, seed := range []string{"", "none", "latency=200ms,jitter=50ms", "bandwidth=64,direction=up", "stall", "reset,direction=down",
		"down", "latency=1s;bandwidth=8", "latency=1.5ms", "stall;stall", ";", "latency=100ms,jitter=100ms,direction=both"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		spec, err := netfault.Parse(text)
		if err != nil {
			return
		}
		if err := spec.Validate(); err != nil {
			t.Fatalf("Parse(%q) accepted %+v, which does not validate: %v", text, spec, err)
		}
		str := spec.String()
		back, err := netfault.Parse(str)
		if err != nil {
			t.Fatalf("Parse(%q).String() = %q, which does not parse: %v", text, str, err)
		}
		if len(back) != len(spec) {
			t.Fatalf("Parse(%q) = %+v; its String %q parses to %+v", text, spec, str, back)
		}
		for i := range back {
			if back[i] != spec[i] {
				t.Fatalf("Parse(%q) = %+v; its String %q parses to %+v", text, spec, str, back)
			}
		}
	})
}
