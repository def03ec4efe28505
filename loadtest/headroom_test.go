package loadtest

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

var inf = math.Inf(1)

// TestQuantileAsPrometheus: Histogram.Quantile gives what
// histogram_quantile gives over the same buckets — the values below are
// those promtool computes for deploy/prometheus/alerts_test.yml.
func TestQuantileAsPrometheus(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    Histogram
		q    float64
		want float64
	}{
		// 97 of 100 at most 0.3, 3 in (0.3, 0.5]: rank 99 sits 2/3 into it.
		{"past the cap", Histogram{[]float64{0.2, 0.3, 0.5, inf}, []float64{90, 97, 100, 100}}, 0.99, 0.3 + 0.2*2/3},
		// Rank 99 of 100 in the first bucket: interpolated from 0.
		{"first bucket", Histogram{[]float64{0.1, 0.2, inf}, []float64{99, 100, 100}}, 0.99, 0.1},
		{"median", Histogram{[]float64{0.1, 0.2, inf}, []float64{50, 100, 100}}, 0.5, 0.1},
		// A rank in +Inf: the highest finite bound.
		{"in +Inf", Histogram{[]float64{0.1, 0.2, inf}, []float64{10, 20, 100}}, 0.99, 0.2},
	} {
		if got := tc.h.Quantile(tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: Quantile(%v) = %v; want %v", tc.name, tc.q, got, tc.want)
		}
	}
	for _, h := range []Histogram{
		{},
		{[]float64{0.1, inf}, []float64{0, 0}},
		{[]float64{0.1, 0.2}, []float64{1, 2}}, // no +Inf bucket
	} {
		if got := h.Quantile(0.99); !math.IsNaN(got) {
			t.Errorf("Quantile(0.99) of %v = %v; want NaN", h, got)
		}
	}
}

// TestHeadroomOverASpan: a hop's headroom is its cap minus the p99 of
// the calls made between two readings, not since the start; a hop
// without a cap or without calls has none.
func TestHeadroomOverASpan(t *testing.T) {
	bounds := []float64{0.2, 0.3, 0.5, inf}
	before := Histogram{bounds, []float64{1000, 1000, 1000, 1000}} // fast calls, before the span
	after := Histogram{bounds, []float64{1090, 1097, 1100, 1100}}  // 100 more, 3 past the cap
	ms, ok := headroomMS(0.3, before, after)
	if !ok || math.Abs(ms-(-133.333)) > 0.01 {
		t.Errorf("headroom = %v, %v; want -133.3 ms", ms, ok)
	}
	if ms, ok := headroomMS(0.3, Histogram{}, before); !ok || math.Abs(ms-102) > 1e-6 {
		t.Errorf("headroom of the fast calls = %v, %v; want 102 ms (0.3 − p99 0.198, interpolated in the first bucket)", ms, ok)
	}
	if _, ok := headroomMS(0, before, after); ok {
		t.Error("a hop without a cap has a headroom")
	}
	if _, ok := headroomMS(0.3, after, after); ok {
		t.Error("a hop without calls in the span has a headroom")
	}

	s := serverFigures(
		Counters{Hops: map[string]Histogram{"orders/catalog": before}},
		Counters{Hops: map[string]Histogram{"orders/catalog": after, "orders/audit": after},
			Caps: map[string]float64{"orders/catalog": 0.3}}, 100)
	if v, ok := s.HeadroomMS["orders/catalog"]; !ok || math.Abs(v-(-133.333)) > 0.01 {
		t.Errorf("ServerFigures.HeadroomMS[orders/catalog] = %v, %v; want -133.3", v, ok)
	}
	if _, ok := s.HeadroomMS["orders/audit"]; ok {
		t.Error("ServerFigures.HeadroomMS has orders/audit, which has no cap")
	}
}

// TestHeadroomCheck: a headroom_ms check names a hop and reads its
// figure as is; without service and dep it does not validate.
func TestHeadroomCheck(t *testing.T) {
	neg := -50.0
	c := Check{Name: "h", Mode: "budgeted", Phase: "slow", Class: "checkout", Figure: "headroom_ms", Service: "orders", Dep: "catalog", AtMost: &neg}
	r := Results{Modes: []ModeResult{{Mode: "budgeted", Phases: []PhaseSpan{{
		Name:    "slow",
		Classes: []Summary{{Class: "checkout", Requests: 10}},
		Server:  ServerFigures{HeadroomMS: map[string]float64{"orders/catalog": -112}},
	}}}}}
	got := c.evaluate(r)
	if !got.Pass || got.Value != -112 {
		t.Errorf("check = %+v; want a pass at -112", got)
	}
	c.Dep = "shipping"
	if got := c.evaluate(r); got.Pass || got.Error == "" {
		t.Errorf("check of a hop that made no calls = %+v; want a failure that says why", got)
	}
	sc := Scenario{Modes: nil, Classes: map[string]ClassSpec{"checkout": {}}, Phases: []Phase{{Name: "slow"}}}
	c.Dep = ""
	if err := c.validate(sc); err == nil {
		t.Error("a headroom_ms check without dep validates")
	}
}

// A histogram travels as JSON from the generator's process to the lab's,
// which has no +Inf: it arrives as it left.
func TestHistogramJSONRoundTrip(t *testing.T) {
	h := Histogram{Bounds: []float64{0.1, 0.2, math.Inf(1)}, Counts: []float64{3, 5, 6}}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var got Histogram
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, h) {
		t.Errorf("%s read back as %+v, want %+v", b, got, h)
	}
}
