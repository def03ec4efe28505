package report

import (
	"testing"

	"github.com/mercado-lab/mercado/loadtest"
)

// A fault band says which faults it shades: simulated work, network
// faults with their links' specs, or both.
func TestFaultBandLabels(t *testing.T) {
	m := loadtest.ModeResult{Mode: "budgeted", Phases: []loadtest.PhaseSpan{
		{Name: "calm", StartS: 0, EndS: 5},
		{Name: "vendor slow", StartS: 5, EndS: 10, Faulty: true, Faults: map[string]string{"shipping": "CreateShipment:hang"}},
		{Name: "wire", StartS: 10, EndS: 15, Faulty: true, Network: map[string]string{"orders-shipping": "stall", "gateway-orders": "latency=200ms"}},
		{Name: "both", StartS: 15, EndS: 20, Faulty: true, Faults: map[string]string{"payments": "latency=1s"}, Network: map[string]string{"orders-payments": "reset"}},
		{Name: "old results", StartS: 20, EndS: 25, Faulty: true},
	}}
	want := []string{
		"fault: vendor slow",
		"network fault: wire (gateway-orders latency=200ms, orders-shipping stall)",
		"fault + network fault: both (orders-payments reset)",
		"fault: old results",
	}
	bands := faultBands(m)
	if len(bands) != len(want) {
		t.Fatalf("bands = %+v, want %d", bands, len(want))
	}
	for i, b := range bands {
		if b.Label != want[i] {
			t.Errorf("band %d = %q, want %q", i, b.Label, want[i])
		}
	}
}
