package report

import (
	"regexp"
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

// Two fault bands side by side, as a fault told in two phases draws, have
// their labels in rows of their own, so neither is written over the
// other; bands far apart keep one row.
func TestFaultBandLabelsDoNotOverlap(t *testing.T) {
	labelYs := func(bands []chartBand) []string {
		svg := string(lineChart{Title: "goodput", XLabel: "s", YLabel: "per second", XMax: 60, Shade: bands,
			Series: []chartSeries{{Name: "budgeted", Points: []chartPoint{{X: 0, Y: 1}, {X: 60, Y: 1}}}}}.svg())
		var ys []string
		for _, m := range regexp.MustCompile(`<text class="fault-label" x="[^"]*" y="([^"]*)"`).FindAllStringSubmatch(svg, -1) {
			ys = append(ys, m[1])
		}
		if len(ys) != len(bands) {
			t.Fatalf("%d fault labels in %s, want %d", len(ys), svg, len(bands))
		}
		return ys
	}
	close := labelYs([]chartBand{
		{From: 10, To: 15, Label: "fault + network fault: stall (orders-shipping stall)"},
		{From: 15, To: 40, Label: "fault: carrier slow"},
	})
	if close[0] == close[1] {
		t.Errorf("labels of adjacent bands are both at y=%s: one is written over the other", close[0])
	}
	apart := labelYs([]chartBand{
		{From: 0, To: 5, Label: "fault: a"},
		{From: 40, To: 50, Label: "fault: b"},
	})
	if apart[0] != apart[1] {
		t.Errorf("labels of bands far apart are at y=%s and y=%s, want one row", apart[0], apart[1])
	}
}
