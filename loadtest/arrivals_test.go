package loadtest

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

func TestParseArrivals(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "constant", want: "constant"},
		{in: "poisson", want: "poisson"},
		{in: "bursty", want: "bursty:on=250ms,off=750ms"},
		{in: "bursty:on=100ms,off=900ms", want: "bursty:on=100ms,off=900ms"},
		{in: "bursty:off=2s", want: "bursty:on=250ms,off=2s"},
		{in: "uniform", err: "want constant, poisson or bursty"},
		{in: "poisson:on=1s", err: "poisson takes no parameters"},
		{in: "bursty:on=0s", err: "on wants a duration in (0, 1m]"},
		{in: "bursty:on=fast", err: `on wants a duration in (0, 1m], got "fast"`},
		{in: "bursty:duty=0.5", err: `unknown parameter "duty"`},
	} {
		a, err := ParseArrivals(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseArrivals(%q) = %v, %v; want an error saying %q", tc.in, a, err, tc.err)
		case tc.err == "" && (err != nil || a.String() != tc.want):
			t.Errorf("ParseArrivals(%q) = %v, %v; want %s", tc.in, a, err, tc.want)
		}
	}
	if got := (Arrivals{}).String(); got != ArrivalsConstant {
		t.Errorf("a scenario that names no arrivals has %q, want constant", got)
	}
}

// Every process sends ⌈rate × d⌉ requests inside the phase, in order: the
// generator's count is held to its schedule whatever the process.
func TestScheduleCountsAndBounds(t *testing.T) {
	const rate, d = 40.0, 5 * time.Second
	for _, a := range []string{"constant", "poisson", "bursty", "bursty:on=100ms,off=400ms"} {
		arr, err := ParseArrivals(a)
		if err != nil {
			t.Fatal(err)
		}
		due := arr.schedule(rate, d, 7)
		if len(due) != 200 {
			t.Errorf("%s: %d requests, want 200", a, len(due))
		}
		if !slices.IsSorted(due) || due[0] < 0 || due[len(due)-1] >= d {
			t.Errorf("%s: schedule %v … %v is not in order inside [0, %v)", a, due[0], due[len(due)-1], d)
		}
	}
	if got := len((Arrivals{}).schedule(0.5, 3*time.Second, 1)); got != 2 {
		t.Errorf("0.5/s for 3 s: %d requests, want ⌈1.5⌉ = 2", got)
	}
}

// Constant arrivals are a metronome; Poisson ones have the spread of a
// Poisson process (the gaps' standard deviation near their mean: their
// coefficient of variation is 1), and the same seed draws the same ones,
// so every mode of a run meets the same arrivals; bursty ones fall in the
// on parts only, at the rate that keeps the average.
func TestScheduleShapes(t *testing.T) {
	const rate, d = 50.0, 20 * time.Second
	gaps := func(due []time.Duration) (mean, sd float64) {
		var xs []float64
		for i := 1; i < len(due); i++ {
			xs = append(xs, (due[i] - due[i-1]).Seconds())
		}
		for _, x := range xs {
			mean += x
		}
		mean /= float64(len(xs))
		for _, x := range xs {
			sd += (x - mean) * (x - mean)
		}
		return mean, math.Sqrt(sd / float64(len(xs)))
	}

	constant := Arrivals{Kind: ArrivalsConstant}.schedule(rate, d, 1)
	if mean, sd := gaps(constant); math.Abs(mean-1/rate) > 1e-6 || sd > 1e-6 {
		t.Errorf("constant: gaps %.4f s ± %.4f, want exactly %.4f", mean, sd, 1/rate)
	}

	poisson := Arrivals{Kind: ArrivalsPoisson}
	due := poisson.schedule(rate, d, 42)
	if mean, sd := gaps(due); math.Abs(mean-1/rate) > 0.002 || sd/mean < 0.9 || sd/mean > 1.1 {
		t.Errorf("poisson: gaps %.4f s ± %.4f (CV %.2f), want a mean near %.4f and a CV near 1", mean, sd, sd/mean, 1/rate)
	}
	if !slices.Equal(due, poisson.schedule(rate, d, 42)) {
		t.Error("poisson: one seed drew two schedules")
	}
	if slices.Equal(due, poisson.schedule(rate, d, 43)) {
		t.Error("poisson: two seeds drew one schedule")
	}

	bursty := Arrivals{Kind: ArrivalsBursty, On: 200 * time.Millisecond, Off: 800 * time.Millisecond}
	for _, at := range bursty.schedule(rate, d, 1) {
		if at%time.Second >= 200*time.Millisecond {
			t.Fatalf("bursty: a request at %v, in an off part", at)
		}
	}
	perSecond := map[time.Duration]int{}
	for _, at := range bursty.schedule(rate, d, 1) {
		perSecond[at/time.Second]++
	}
	for s, n := range perSecond {
		if n != int(rate) {
			t.Errorf("bursty: %d requests in second %d, want the average %v in each period", n, s, rate)
		}
	}
}

// The generator sends on the schedule the arrivals draw: each request's
// intended time is its place in that schedule, and it went out then.
func TestRunSendsOnTheArrivalsSchedule(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	const rate, d = 40.0, 2 * time.Second
	arr := Arrivals{Kind: ArrivalsPoisson}
	var mu sync.Mutex
	var seen int
	out, err := Run(context.Background(), Options{Base: srv.URL, Duration: d, OnSample: func(Sample) { mu.Lock(); seen++; mu.Unlock() }}, Class{
		Name: "poisson", Rate: rate, Arrivals: arr, Seed: 9, Deadline: time.Second,
		Request: func(base string, _ uint64) vegeta.Target { return vegeta.Target{Method: http.MethodGet, URL: base} },
	})
	if err != nil {
		t.Fatal(err)
	}
	samples, due := out["poisson"], arr.schedule(rate, d, 9)
	if len(samples) != len(due) || seen != len(due) {
		t.Fatalf("sent %d requests (%d seen as they came), want the schedule's %d", len(samples), seen, len(due))
	}
	origin := samples[0].Intended.Add(-due[0])
	late := 0
	for i, s := range samples {
		if got := s.Intended.Sub(origin); got != due[i] {
			t.Fatalf("request %d intended at %v, want the schedule's %v", i, got, due[i])
		}
		// A generous bound: the test must hold on a busy machine.
		if s.Sent.Sub(s.Intended) > 100*time.Millisecond {
			late++
		}
	}
	if late > len(samples)/10 {
		t.Errorf("%d of %d requests went out over 100 ms after their time", late, len(samples))
	}
}
