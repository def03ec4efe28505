package lab

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
)

// TestCapacitySearch runs a small search whose bound every rate meets: the
// rate doubles up to the maximum, each mode reports it as sustained, and
// the overhead comparison runs both modes at half of it.
func TestCapacitySearch(t *testing.T) {
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
		if m.MaxRate != 20 || m.CPUSecondsPerCheckout <= 0 {
			t.Errorf("%s: max %v, CPU %v; want 20/s and a CPU figure", m.Mode, m.MaxRate, m.CPUSecondsPerCheckout)
		}
	}
	o := res.Overhead
	if o == nil || o.Rate != 10 || o.ThroughputRatio != 1 || o.NaiveP50MS <= 0 || o.BudgetedP50MS <= 0 {
		t.Fatalf("overhead %+v, want both modes measured at 10/s", o)
	}
	if len(lines) != 6 {
		t.Errorf("progress lines %q, want one per step and per comparison", lines)
	}
	var b strings.Builder
	res.WriteTable(&b)
	for _, want := range []string{"memory store", "naive     highest sustained rate: 20 checkouts/s", "throughput 1.00x"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestCapacityStopsAtTheFirstFailure: a bound nothing meets fails the
// first rate, so there is nothing to refine, no maximum and no overhead.
func TestCapacityStopsAtTheFirstFailure(t *testing.T) {
	cfg := DefaultCapacity()
	cfg.Modes = []mode.Mode{mode.Budgeted}
	cfg.Start, cfg.Max, cfg.Step, cfg.P99 = 10, 80, 500*time.Millisecond, time.Millisecond
	// A checkout takes longer than 1 ms, so p99 ≤ 1 ms cannot hold.
	res, err := Capacity(context.Background(), cfg, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Modes[0]
	if len(m.Steps) != 1 || m.Steps[0].Sustained || m.MaxRate != 0 || res.Overhead != nil {
		t.Errorf("result %+v, want one failed step and no maximum", res)
	}
}

func TestCapacityConfigValidate(t *testing.T) {
	for name, change := range map[string]func(*CapacityConfig){
		"no modes":         func(c *CapacityConfig) { c.Modes = nil },
		"unknown mode":     func(c *CapacityConfig) { c.Modes = []mode.Mode{"turbo"} },
		"tiny p99":         func(c *CapacityConfig) { c.P99 = time.Microsecond },
		"short step":       func(c *CapacityConfig) { c.Step = time.Millisecond },
		"max below start":  func(c *CapacityConfig) { c.Max = c.Start - 1 },
		"too many refines": func(c *CapacityConfig) { c.Refine = 11 },
		"deadline < p99":   func(c *CapacityConfig) { c.Deadline = c.P99 / 2 },
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
