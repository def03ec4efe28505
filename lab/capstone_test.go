package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/mercado-lab/mercado/internal/budget"
	"github.com/mercado-lab/mercado/internal/slowtest"
	"github.com/mercado-lab/mercado/lab/shop"
)

// shortCapstone is the capstone scaled down for a test: a pool of 40
// instead of 200, a 500 ms deadline, a carrier that takes 5 s, a stall of
// 1 s, and a few seconds a stage.
func shortCapstone() CapstoneConfig {
	cfg := DefaultCapstone()
	cfg.CheckoutRate, cfg.BrowseRate = 30, 10
	cfg.WarmUp, cfg.Fault = 2*time.Second, 4*time.Second
	cfg.Deadline, cfg.Patience = 500*time.Millisecond, 3*time.Second
	cfg.Carrier = "CreateShipment:hang=5s"
	cfg.StallFor = time.Second
	cfg.Workers, cfg.BreakerOpen = 40, 2*time.Second
	return cfg
}

// TestCapstone runs the four stages on the shortened run and checks the
// lesson's shape: the fragile shop fills its pool and browsing goes
// dark while checkouts wait until the client hangs up; each step keeps
// browsing at least as well as the one before; the last keeps it green
// and answers checkouts by the deadline.
func TestCapstone(t *testing.T) {
	slowtest.Require(t, "four capstone stages, about 30 s")
	slowtest.Exclusive(t)
	cfg := shortCapstone()
	var stages []string
	res, err := Capstone(context.Background(), cfg, slog.New(slog.DiscardHandler), func(s string, _, _ time.Duration) {
		if len(stages) == 0 || stages[len(stages)-1] != s {
			stages = append(stages, s)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(stages, ","); got != "0 fragile,1 +timeouts,2 +budget,3 +isolation" {
		t.Errorf("progress reported stages %s", got)
	}
	if len(res.Stages) != 4 {
		t.Fatalf("%d stages, want 4", len(res.Stages))
	}
	fragile, last := res.Stages[0], res.Stages[3]
	if fragile.BrowseSuccessRatio >= 0.5 {
		t.Errorf("stage 0 browse success %.2f, want < 0.5", fragile.BrowseSuccessRatio)
	}
	if fragile.PoolPeak < cfg.Workers {
		t.Errorf("stage 0's gateway pool peaked at %d, want it full (%d)", fragile.PoolPeak, cfg.Workers)
	}
	if fragile.CheckoutMaxMS <= 5*last.CheckoutMaxMS {
		t.Errorf("stage 0 checkout max %.0f ms is not above 5× stage 3's %.0f ms", fragile.CheckoutMaxMS, last.CheckoutMaxMS)
	}
	for i := 1; i < len(res.Stages); i++ {
		if a, b := res.Stages[i-1], res.Stages[i]; b.BrowseSuccessRatio < a.BrowseSuccessRatio-browseSlack {
			t.Errorf("stage %s browse success %.3f is below stage %s's %.3f", b.Stage, b.BrowseSuccessRatio, a.Stage, a.BrowseSuccessRatio)
		}
	}
	if last.BrowseSuccessRatio < 0.99 {
		t.Errorf("stage 3 browse success %.3f, want >= 0.99", last.BrowseSuccessRatio)
	}
	// Within the deadline, with room for a busy machine.
	if limit := float64(cfg.Deadline.Milliseconds()) + 200; last.CheckoutP999MS > limit {
		t.Errorf("stage 3 checkout p99.9 %.0f ms, want <= %.0f", last.CheckoutP999MS, limit)
	}
	if last.CheckoutGoodputPerS <= fragile.CheckoutGoodputPerS {
		t.Errorf("stage 3 checkout goodput %.1f/s is not above stage 0's %.1f/s", last.CheckoutGoodputPerS, fragile.CheckoutGoodputPerS)
	}
	if last.DuplicateCharges != 0 {
		t.Errorf("stage 3 charged %d checkouts twice; idempotency is on", last.DuplicateCharges)
	}
	if !fragile.StoppedAtEnd || last.StoppedAtEnd {
		t.Errorf("stopped at end: stage 0 %v, stage 3 %v; want only the stage without caps", fragile.StoppedAtEnd, last.StoppedAtEnd)
	}

	// The fault is the carrier slow throughout, and the stall through the
	// real proxy for its first second: the stall's phase shows both in
	// the report's bands. Only a read cap ends a call on the stalled link:
	// stage 0 has none, stage 1's orders → catalog calls end at theirs.
	for i, m := range res.Run.Modes {
		if len(m.Phases) != 3 {
			t.Fatalf("stage %s: phases %+v, want healthy, stalled, carrier slow", m.Mode, m.Phases)
		}
		st := m.Phases[1]
		if st.Network[cfg.Stall] != "stall" || st.Faults["shipping"] != cfg.Carrier || !st.Faulty {
			t.Errorf("stage %s: the stall's phase has network %v and faults %v, want %s stalled and the carrier slow", m.Mode, st.Network, st.Faults, cfg.Stall)
		}
		if p := m.Phases[2]; len(p.Network) != 0 || p.Faults["shipping"] != cfg.Carrier {
			t.Errorf("stage %s: the last phase has network %v and faults %v, want the carrier alone", m.Mode, p.Network, p.Faults)
		}
		// A call stuck on the stall ends at its cap, which may come after
		// the stall's phase (on a busy machine the caps, taken from
		// stage 0's p99, are long): count the phase after it too, when
		// the link is healthy and nothing else holds a catalog call.
		timeouts := st.Server.HopTimeouts["orders/catalog"] + m.Phases[2].Server.HopTimeouts["orders/catalog"]
		switch i {
		case 0:
			if timeouts != 0 {
				t.Errorf("stage 0 counted %.0f timeouts of orders → catalog; it has no read caps", timeouts)
			}
		case 1:
			if timeouts == 0 {
				t.Errorf("stage 1 counted no timeouts of orders → catalog from the stall (%v, then %v)",
					st.Server.HopTimeouts, m.Phases[2].Server.HopTimeouts)
				b, _ := json.Marshal(res.Suggestion)
				t.Logf("the caps stage 1 ran with: %s", b)
			}
		}
	}

	// The suggest step read stage 0's healthy warm-up: a cap on the
	// carrier's hop, above its p99 by the margin, and a connect timeout
	// within the deadline.
	var shipping *budget.HopSuggestion
	for i, h := range res.Suggestion.Hops {
		if h.From == "orders" && h.To == "shipping" {
			shipping = &res.Suggestion.Hops[i]
		}
	}
	if shipping == nil || shipping.Samples == 0 || shipping.Cap < shipping.P99+cfg.Margin.Fixed || shipping.Why == "" {
		t.Errorf("suggestion for orders → shipping: %+v (all: %+v)", shipping, res.Suggestion.Hops)
	}
	if c := res.Suggestion.ConnectTimeout; c <= 0 || c >= cfg.Deadline || res.Suggestion.ConnectWhy == "" {
		t.Errorf("connect timeout %v (%q), want within (0, %v) with its reason", c, res.Suggestion.ConnectWhy, cfg.Deadline)
	}

	var table, js, page bytes.Buffer
	res.WriteTable(&table)
	for _, want := range []string{"0 fragile", "3 +isolation", "--shipping-cap=", "--connect-timeout=", "browse ok", "PASS", "CreateShipment:hang=5s", "orders-catalog connection stalled"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Stages []map[string]any `json:"stages"`
	}
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil || len(decoded.Stages) != 4 {
		t.Fatalf("JSON: %v\n%s", err, js.String())
	}
	for _, key := range []string{"stage", "browse_success_ratio", "checkout_goodput_per_s", "checkout_p99_ms", "checkout_max_ms", "pool_peak", "late_work_seconds"} {
		if _, ok := decoded.Stages[0][key]; !ok {
			t.Errorf("JSON stage lacks %q: %v", key, decoded.Stages[0])
		}
	}
	if err := res.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="lead"`, "3 +isolation", "--shipping-cap", "<svg"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func TestCapstoneConfigValidate(t *testing.T) {
	if err := DefaultCapstone().Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*CapstoneConfig)
		want string
	}{
		{"no checkouts", func(c *CapstoneConfig) { c.CheckoutRate = 0 }, "checkout-rate"},
		{"a short warm-up", func(c *CapstoneConfig) { c.WarmUp = 100 * time.Millisecond }, "warm-up"},
		{"no fault phase", func(c *CapstoneConfig) { c.Fault = 0 }, "fault"},
		{"a deadline of nothing", func(c *CapstoneConfig) { c.Deadline = time.Millisecond }, "deadline"},
		{"a carrier fault that does not parse", func(c *CapstoneConfig) { c.Carrier = "CreateShipment:hang=soon" }, "carrier"},
		{"a carrier fault on another service's method", func(c *CapstoneConfig) { c.Carrier = "CreateCharge:hang=1s" }, "carrier"},
		{"no carrier fault", func(c *CapstoneConfig) { c.Carrier = "" }, "carrier"},
		{"a margin past the deadline", func(c *CapstoneConfig) { c.Margin = budget.Margin{Fixed: 2 * time.Second} }, "margin"},
		{"no workers", func(c *CapstoneConfig) { c.Workers = 0 }, "workers"},
		{"a link that is not one", func(c *CapstoneConfig) { c.Stall = "orders-fraud" }, "stall"},
		{"a stall as long as the fault", func(c *CapstoneConfig) { c.StallFor = c.Fault }, "stall-for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultCapstone()
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

// hopHist is a hop histogram: n calls of fast seconds and slow more of
// slow seconds, in buckets that hold both.
func hopHist(fast, slow uint64) *dto.Histogram {
	bounds := []float64{0.001, 0.005, 0.01, 0.1, 1, 10}
	counts := []uint64{0, fast, fast, fast, fast + slow, fast + slow}
	h := &dto.Histogram{SampleCount: proto(fast + slow)}
	for i, b := range bounds {
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: &b, CumulativeCount: proto(counts[i])})
	}
	return h
}

func proto[T any](v T) *T { return &v }

// TestSuggestFrom: the suggest step reads the warm-up alone — calls made
// before it (a fresh shop's first, slow ones) do not count — and each cap
// is the p99 plus the margin.
func TestSuggestFrom(t *testing.T) {
	call := func(h *dto.Histogram) budget.HopObservation {
		return budget.HopObservation{From: "orders", To: "shipping", Callee: "shipping", Setting: "--shipping-cap",
			Criticality: "critical", Route: "checkout", Method: "/orders.v1.OrdersService/Checkout", Durations: h}
	}
	before := budget.Hops{Calls: []budget.HopObservation{call(hopHist(0, 50))}}   // 50 calls of about a second
	after := budget.Hops{Calls: []budget.HopObservation{call(hopHist(1000, 50))}} // then 1000 of a few ms
	s, err := suggestFrom(before, after, budget.Margin{Fixed: 100 * time.Millisecond}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Hops) != 1 {
		t.Fatalf("hops %+v", s.Hops)
	}
	h := s.Hops[0]
	if h.Samples != 1000 || h.P99 > 5*time.Millisecond || h.Cap < 100*time.Millisecond || h.Cap > 110*time.Millisecond {
		t.Errorf("orders → shipping: %d calls, p99 %v, cap %v; want the warm-up's 1000 calls, p99 within 5 ms, cap about 105 ms", h.Samples, h.P99, h.Cap)
	}
	if _, err := suggestFrom(before, before, budget.Margin{}, time.Second); !errors.Is(err, budget.ErrNoTraffic) {
		t.Errorf("a warm-up with no calls: %v, want ErrNoTraffic", err)
	}
	var cfg shop.Config
	if err := applySuggestion(s, &cfg); err != nil || cfg.Orders.ShippingCap != h.Cap {
		t.Errorf("applied: %v, shipping cap %v, want %v", err, cfg.Orders.ShippingCap, h.Cap)
	}
	s.Hops[0].Setting = "--nope"
	if err := applySuggestion(s, &cfg); err == nil {
		t.Error("a setting the shop does not have was applied")
	}
}
