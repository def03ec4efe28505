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
