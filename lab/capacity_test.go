package lab

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
)

// TestCapacitySearch runs a small search whose bound every rate meets: the
// rate doubles up to the maximum, each mode reports it as sustained, and
// the overhead comparison runs both modes at half of it.
func TestCapacitySearch(t *testing.T) {
	t.Parallel()
	cfg := DefaultCapacity()
	cfg.Start, cfg.Max, cfg.Step, cfg.P99 = 10, 20, 500*time.Millisecond, time.Second
	var lines []string
	res, err := Capacity(context.Background(), cfg, slog.New(slog.DiscardHandler), func(l string) { lines = append(lines, l) })
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Modes) != 2 || res.Store != "memory" {
		t.Fatalf("result %+v, want two modes on the memory store", res)
	}
	for _, m := range res.Modes {
		if len(m.Steps) != 2 || m.Steps[0].Rate != 10 || m.Steps[1].Rate != 20 {
			t.Errorf("%s steps %+v, want 10/s then 20/s", m.Mode, m.Steps)
		}
		for _, s := range m.Steps {
			if !s.Sustained || s.Good != s.Sent || s.Sent == 0 {
				t.Errorf("%s step %+v: want every checkout answered well (a 1 s bound)", m.Mode, s)
			}
		}
		if m.MaxRate != 20 || !m.AtCeiling || m.CPUSecondsPerCheckout <= 0 {
			t.Errorf("%s: max %v (at the ceiling: %v), CPU %v; want 20/s, the search's ceiling, and a CPU figure", m.Mode, m.MaxRate, m.AtCeiling, m.CPUSecondsPerCheckout)
		}
	}
	o := res.Overhead
	if o == nil || o.Rate != 10 || o.ThroughputRatio != 1 || o.NaiveP50MS <= 0 || o.BudgetedP50MS <= 0 {
		t.Fatalf("overhead %+v, want both modes measured at 10/s", o)
	}
	if len(lines) != 8 || !strings.Contains(lines[0], "warm the store") {
		t.Errorf("progress lines %q, want a warm-up per mode, then one per step and per comparison", lines)
	}
	var b strings.Builder
	res.WriteTable(&b)
	for _, want := range []string{"memory store", "naive     highest sustained rate: 20 checkouts/s", "throughput 1.00x"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestCapacityBoundRelativeToTheIdleCheckout: with IdleTimes the bound is
// that multiple of the higher idle median of the modes, measured first
// and stated in the table.
func TestCapacityBoundRelativeToTheIdleCheckout(t *testing.T) {
	t.Parallel()
	cfg := DefaultCapacity()
	cfg.Start, cfg.Max, cfg.Step, cfg.Refine, cfg.IdleTimes = 10, 20, 500*time.Millisecond, 0, 50
	var lines []string
	res, err := Capacity(context.Background(), cfg, slog.New(slog.DiscardHandler), func(l string) { lines = append(lines, l) })
	if err != nil {
		t.Fatal(err)
	}
	naive, budgeted := res.IdleP50MS["naive"], res.IdleP50MS["budgeted"]
	if naive <= 0 || budgeted <= 0 || res.IdleTimes != 50 {
		t.Fatalf("idle medians %v, times %v; want both modes' measured", res.IdleP50MS, res.IdleTimes)
	}
	if want := min(50*max(naive, budgeted), 1000); math.Abs(res.P99MS-want) > 0.01 {
		t.Errorf("bound %.2f ms, want 50 × the higher idle median = %.2f ms", res.P99MS, want)
	}
	if !strings.Contains(lines[0], "(idle)") || !strings.Contains(lines[2], "bound: p99 ≤") {
		t.Errorf("progress lines %q, want the idle measurements and the bound first", lines[:3])
	}
	var b strings.Builder
	res.WriteTable(&b)
	if !strings.Contains(b.String(), "50 × the idle checkout's median: budgeted") {
		t.Errorf("table does not state the relative bound:\n%s", b.String())
	}
}

// TestCapacityFindsNothingWhenNoRateHolds: a bound nothing meets fails
// the first rate, so the search halves down to 1/s and reports no
// maximum and no overhead.
func TestCapacityFindsNothingWhenNoRateHolds(t *testing.T) {
	t.Parallel()
	cfg := DefaultCapacity()
	cfg.Modes = []mode.Mode{mode.Budgeted}
	// A checkout takes far longer than a microsecond (a fast one on the
	// in-process shop, under one millisecond, held a 1 ms bound), so p99
	// ≤ 1 µs cannot hold.
	cfg.Start, cfg.Max, cfg.Step, cfg.P99 = 10, 80, 500*time.Millisecond, time.Microsecond
	res, err := Capacity(context.Background(), cfg, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Modes[0]
	var rates []float64
	for _, s := range m.Steps {
		rates = append(rates, s.Rate)
		if s.Sustained {
			t.Errorf("step %+v sustained under a 1 µs bound", s)
		}
	}
	if !slices.Equal(rates, []float64{10, 5, 3, 2, 1}) || m.MaxRate != 0 || res.Overhead != nil {
		t.Errorf("rates %v, result %+v; want 10, 5, 3, 2, 1/s all failed and no maximum", rates, res)
	}
}

// fakeShop holds every rate up to its capacity: a step function for the
// search alone, that records the rates it was asked for.
type fakeShop struct {
	capacity float64
	// missFirst fails the first step whatever its rate: one step's tail.
	missFirst bool
	tried     []float64
}

func (f *fakeShop) hold(rate float64) (bool, error) {
	f.tried = append(f.tried, rate)
	if f.missFirst && len(f.tried) == 1 {
		return false, nil
	}
	return rate <= f.capacity, nil
}

// TestSearchRateFromFarAboveCapacity: a first rate far above what the
// shop holds halves until one holds, then goes up again and bisects, so
// the figure is non-zero and close to the one a search from below finds.
func TestSearchRateFromFarAboveCapacity(t *testing.T) {
	cfg := DefaultCapacity()
	cfg.Max, cfg.Refine = 20_000, 3
	found := map[float64]float64{}
	for _, start := range []float64{25, 100, 5000} {
		cfg.Start = start
		f := &fakeShop{capacity: 300}
		got, err := searchRate(cfg, f.hold)
		if err != nil {
			t.Fatal(err)
		}
		// Three bisections of a factor-of-two gap leave it an eighth wide.
		if got > f.capacity || got < f.capacity*7/8 {
			t.Errorf("start %v/s: found %v/s (tried %v), want within an eighth below 300/s", start, got, f.tried)
		}
		found[start] = got
	}
	f := &fakeShop{capacity: 300}
	cfg.Start = 5000
	if _, err := searchRate(cfg, f.hold); err != nil {
		t.Fatal(err)
	}
	want := []float64{5000, 2500, 1250, 625, 313, 157, 314, 236, 275, 295}
	if !slices.Equal(f.tried, want) {
		t.Errorf("from 5000/s tried %v, want %v (halving, 313 once more as 314, then bisecting 157 to 314)", f.tried, want)
	}
	t.Logf("found from each start: %v", found)
}

// TestSearchRateAfterAFirstStepsMiss: a first step that fails by chance
// (one step's tail, at a rate the shop holds) does not bound the search:
// the way up tries that rate again, and the search finds what it finds
// from a start that held.
func TestSearchRateAfterAFirstStepsMiss(t *testing.T) {
	cfg := DefaultCapacity()
	cfg.Start, cfg.Max, cfg.Refine = 100, 5000, 3
	clean := &fakeShop{capacity: 400}
	want, err := searchRate(cfg, clean.hold)
	if err != nil {
		t.Fatal(err)
	}
	missed := &fakeShop{capacity: 400, missFirst: true}
	got, err := searchRate(cfg, missed.hold)
	if err != nil {
		t.Fatal(err)
	}
	if got != want || got < 350 {
		t.Errorf("after a missed first step found %v/s (tried %v), want %v/s as without the miss (tried %v)", got, missed.tried, want, clean.tried)
	}
}

func TestSearchRateEdges(t *testing.T) {
	cfg := DefaultCapacity()
	cfg.Start, cfg.Max, cfg.Refine = 100, 800, 3
	for name, tc := range map[string]struct {
		capacity float64
		max      float64 // 800 if 0
		want     float64
		tried    []float64
	}{
		"every rate holds":       {capacity: 10_000, want: 800, tried: []float64{100, 200, 400, 800}},
		"the last step is --max": {capacity: 10_000, max: 1000, want: 1000, tried: []float64{100, 200, 400, 800, 1000}},
		"the knee under --max":   {capacity: 900, max: 1000, want: 900, tried: []float64{100, 200, 400, 800, 1000, 900, 950, 925}},
		"nothing holds":          {capacity: 0, want: 0, tried: []float64{100, 50, 25, 13, 7, 4, 2, 1}},
		"only 1/s holds":         {capacity: 1, want: 1, tried: []float64{100, 50, 25, 13, 7, 4, 2, 1, 2}},
		"the start is the knee":  {capacity: 100, want: 100, tried: []float64{100, 200, 150, 125, 113}},
	} {
		cfg.Max = cmp.Or(tc.max, 800)
		f := &fakeShop{capacity: tc.capacity}
		got, err := searchRate(cfg, f.hold)
		if err != nil || got != tc.want || !slices.Equal(f.tried, tc.tried) {
			t.Errorf("%s: found %v (%v) after %v, want %v after %v", name, got, err, f.tried, tc.want, tc.tried)
		}
	}
	broken := errors.New("the shop did not start")
	calls := 0
	_, err := searchRate(cfg, func(float64) (bool, error) {
		calls++
		if calls == 2 {
			return false, broken
		}
		return true, nil
	})
	if !errors.Is(err, broken) || calls != 2 {
		t.Errorf("err %v after %d steps, want the second step's error to end the search", err, calls)
	}
}

func TestCapacityConfigValidate(t *testing.T) {
	for name, change := range map[string]func(*CapacityConfig){
		"no modes":            func(c *CapacityConfig) { c.Modes = nil },
		"unknown mode":        func(c *CapacityConfig) { c.Modes = []mode.Mode{"turbo"} },
		"tiny p99":            func(c *CapacityConfig) { c.P99 = time.Microsecond },
		"short step":          func(c *CapacityConfig) { c.Step = time.Millisecond },
		"max below start":     func(c *CapacityConfig) { c.Max = c.Start - 1 },
		"too many refines":    func(c *CapacityConfig) { c.Refine = 11 },
		"no database pool":    func(c *CapacityConfig) { c.DBMaxConns = 0 },
		"deadline < p99":      func(c *CapacityConfig) { c.Deadline = c.P99 / 2 },
		"idle-times below 2":  func(c *CapacityConfig) { c.IdleTimes = 1.5 },
		"idle-times over 100": func(c *CapacityConfig) { c.IdleTimes = 101 },
		"unknown popularity":  func(c *CapacityConfig) { c.Basket.Popularity = "hot" },
	} {
		c := DefaultCapacity()
		change(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, c)
		}
	}
	if err := DefaultCapacity().Validate(); err != nil {
		t.Errorf("the default: %v", err)
	}
}
