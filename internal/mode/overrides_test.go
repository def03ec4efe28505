package mode_test

import (
	"strings"
	"testing"

	"github.com/mercado-lab/mercado/internal/mode"
)

// The fanout switch takes parallel or sequential on top of either preset,
// and refuses anything else, naming the valid values.
func TestOverridesFanout(t *testing.T) {
	var o mode.Overrides
	if err := o.Set("fanout=sequential,breakers=off"); err != nil {
		t.Fatal(err)
	}
	if got := mode.Budgeted.Mechanisms().Apply(o); got.Fanout != mode.FanoutSequential || got.Breakers || !got.Bulkheads {
		t.Errorf("budgeted with fanout=sequential,breakers=off = %+v", got)
	}
	if got := o.String(); got != "breakers=false,fanout=sequential" {
		t.Errorf("String() = %q", got)
	}
	var p mode.Overrides
	if err := p.Set("fanout=parallel"); err != nil {
		t.Fatal(err)
	}
	if got := mode.Naive.Mechanisms().Apply(p); got.Fanout != mode.FanoutParallel || got.ClipToBudget {
		t.Errorf("naive with fanout=parallel = %+v", got)
	}
	var bad mode.Overrides
	err := bad.Set("fanout=sideways")
	if err == nil || !strings.Contains(err.Error(), `unknown fanout "sideways" (want "parallel" or "sequential")`) {
		t.Errorf(`Set("fanout=sideways") = %v`, err)
	}
	if bad.Fanout != nil {
		t.Errorf("a refused value was kept: %q", *bad.Fanout)
	}
	f := mode.Fanout("sideways")
	if err := (mode.Overrides{Fanout: &f}).Validate(); err == nil {
		t.Error("Validate accepted fanout=sideways")
	}
}

// TestVariant: a scenario's mode name is a preset and the switches it turns
// on; a name that is not a switch, or a preset that is not one, is refused.
func TestVariant(t *testing.T) {
	m, o, err := mode.Variant("budgeted+hedging")
	if err != nil || m != mode.Budgeted {
		t.Fatalf("Variant = %q, %v", m, err)
	}
	if got := m.Mechanisms().Apply(o); !got.Hedging || !got.Breakers {
		t.Errorf("budgeted+hedging = %+v, want budgeted with hedging on", got)
	}
	if m, o, err := mode.Variant("naive"); err != nil || m != mode.Naive || o.String() != "" {
		t.Errorf("mode.Variant(naive) = %q, %q, %v", m, o.String(), err)
	}
	for _, bad := range []string{"budgeted+hedgin", "budgeted+retries", "fast+hedging", "budgeted+"} {
		if _, _, err := mode.Variant(bad); err == nil {
			t.Errorf("mode.Variant(%q) accepted", bad)
		}
	}
}

// TestJoin: the second set of switches goes over the first.
func TestJoin(t *testing.T) {
	var a, b mode.Overrides
	if err := a.Set("breakers=off,hedging=off,retries=off"); err != nil {
		t.Fatal(err)
	}
	if err := b.Set("hedging=on,fanout=sequential"); err != nil {
		t.Fatal(err)
	}
	joined := a.Join(b)
	if got, want := joined.String(), "breakers=false,fanout=sequential,hedging=true,retries=off"; got != want {
		t.Errorf("Join = %q, want %q", got, want)
	}
}
