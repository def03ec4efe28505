package driver_test

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mercado-lab/mercado/lab/driver"
)

// A hop's histogram has one +Inf bound, last, whether or not the parser
// keeps the text's own le="+Inf" bucket; its outcomes add up.
func TestHistogramsEndWithOneInfBound(t *testing.T) {
	text := `# TYPE mercado_hop_duration_seconds histogram
mercado_hop_duration_seconds_bucket{dep="catalog",outcome="ok",le="0.1"} 3
mercado_hop_duration_seconds_bucket{dep="catalog",outcome="ok",le="0.2"} 5
mercado_hop_duration_seconds_bucket{dep="catalog",outcome="ok",le="+Inf"} 6
mercado_hop_duration_seconds_sum{dep="catalog",outcome="ok"} 0.9
mercado_hop_duration_seconds_count{dep="catalog",outcome="ok"} 6
mercado_hop_duration_seconds_bucket{dep="catalog",outcome="timeout",le="0.1"} 0
mercado_hop_duration_seconds_bucket{dep="catalog",outcome="timeout",le="0.2"} 0
mercado_hop_duration_seconds_bucket{dep="catalog",outcome="timeout",le="+Inf"} 1
mercado_hop_duration_seconds_sum{dep="catalog",outcome="timeout"} 0.3
mercado_hop_duration_seconds_count{dep="catalog",outcome="timeout"} 1
`
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	h := driver.Families(fams).Histograms("mercado_hop_duration_seconds", "dep")["catalog"]
	want := []float64{0.1, 0.2, math.Inf(1)}
	if !reflect.DeepEqual(h.Bounds, want) || !reflect.DeepEqual(h.Counts, []float64{3, 5, 7}) {
		t.Errorf("bounds %v, counts %v: want %v and [3 5 7]", h.Bounds, h.Counts, want)
	}
	if q := h.Quantile(0.99); q != 0.2 {
		t.Errorf("p99 %v: past the highest finite bound, want it (0.2)", q)
	}
}
