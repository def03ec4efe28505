package budget

import (
	"math"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

func histogram(bounds []float64, cumulative []uint64) *dto.Histogram {
	h := &dto.Histogram{SampleCount: new(uint64)}
	for i := range bounds {
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: &bounds[i], CumulativeCount: &cumulative[i]})
	}
	*h.SampleCount = cumulative[len(cumulative)-1]
	return h
}

// Quantile reads a histogram of seconds as histogram_quantile does.
func TestQuantile(t *testing.T) {
	inf := math.Inf(+1)
	for _, tc := range []struct {
		name       string
		bounds     []float64
		cumulative []uint64
		q          float64
		want       time.Duration
	}{
		{"linear within the bucket", []float64{0.1, 0.2, inf}, []uint64{0, 100, 100}, 0.99, 199 * time.Millisecond},
		{"the first bucket starts at zero", []float64{0.1, 0.2, inf}, []uint64{100, 100, 100}, 0.5, 50 * time.Millisecond},
		{"past every bound: the highest finite one", []float64{0.1, 0.2, inf}, []uint64{10, 10, 100}, 0.99, 200 * time.Millisecond},
		{"the slow tail counts", []float64{0.01, 0.1, 1, inf}, []uint64{98, 98, 100, 100}, 0.99, 550 * time.Millisecond},
		{"empty", []float64{0.1, inf}, []uint64{0, 0}, 0.99, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Quantile(tc.q, histogram(tc.bounds, tc.cumulative))
			if d := got - tc.want; d < -time.Microsecond || d > time.Microsecond {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// The shop's p99s are merged across outcomes and rounded up to the
// millisecond; a call the shop has not measured keeps the file's p99.
func TestObservedApply(t *testing.T) {
	o := Observed{
		P99:   map[string]time.Duration{"orders/catalog": 41300 * time.Microsecond, "orders/fraud": 300 * time.Microsecond},
		Count: map[string]uint64{"orders/catalog": 5, "orders/fraud": 5},
	}
	f := File{Target: time.Second, Graph: Node{Seq: []Node{
		{Call: &Call{Name: "catalog", Criticality: Critical}},
		{Call: &Call{Name: "orders/fraud", Criticality: Critical}},
		{Call: &Call{Name: "auth", P99: 7 * time.Millisecond, Criticality: Critical}},
	}}}
	filled, err := o.Apply(&f)
	if err != nil {
		t.Fatal(err)
	}
	c := f.Graph.Calls()
	if c[0].P99 != 42*time.Millisecond || c[1].P99 != time.Millisecond || c[2].P99 != 7*time.Millisecond {
		t.Errorf("p99s %v %v %v, want 42ms 1ms 7ms", c[0].P99, c[1].P99, c[2].P99)
	}
	if len(filled) != 2 || filled[0] != "catalog (orders/catalog, 5 calls)" {
		t.Errorf("filled %q", filled)
	}
}
