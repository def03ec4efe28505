package lab

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mercado-lab/mercado/internal/budget"
	"github.com/mercado-lab/mercado/lab/shop"
)

// DefaultSuggestMargin is what the suggest step adds to a hop's healthy
// p99 by default: Drill 76's per-hop margin, room for a busy machine's
// pauses and a fresh connection's first calls, far under the budget.
const DefaultSuggestMargin = 100 * time.Millisecond

// Suggestion is the suggest step's answer, read from stage 0's healthy
// warm-up: a read cap for each hop the shop measured (its p99 plus the
// margin), a connect timeout, and why each value is what it is.
type Suggestion struct {
	Caps []SuggestedCap `json:"caps"`
	// ConnectTimeoutMS bounds each attempt to connect to a dependency.
	ConnectTimeoutMS float64 `json:"connect_timeout_ms"`
	ConnectWhy       string  `json:"connect_why"`
}

// SuggestedCap is one hop's read cap.
type SuggestedCap struct {
	// Hop is "service/dep" ("orders/shipping").
	Hop   string  `json:"hop"`
	Calls uint64  `json:"calls"`
	P99MS float64 `json:"p99_ms"`
	CapMS float64 `json:"cap_ms"`
	// Flag is the service's setting the cap goes to ("--shipping-cap").
	Flag string `json:"flag"`
	Why  string `json:"why"`
}

// suggest chooses the caps from what the warm-up measured: each hop's
// p99, rounded up to the millisecond, plus margin; the gateway's call to
// orders at least what orders' own calls may take, one try each, plus
// margin (an outer timeout shorter than the inner ones gives up while the
// inner call can still answer); and a connect timeout of a tenth of the
// client's deadline.
func suggest(obs budget.Observed, margin, deadline time.Duration) (Suggestion, error) {
	var s Suggestion
	inner := 0.0 // orders' calls' caps, summed
	for _, hop := range slices.Sorted(maps.Keys(obs.P99)) {
		set, ok := capSettings[hop]
		if !ok {
			continue
		}
		p99 := obs.P99[hop]
		capMS := math.Ceil(float64(p99)/float64(time.Millisecond)) + float64(margin.Milliseconds())
		s.Caps = append(s.Caps, SuggestedCap{Hop: hop, Calls: obs.Count[hop], P99MS: ms(p99), CapMS: capMS, Flag: set.flag,
			Why: fmt.Sprintf("p99 %s over %d healthy calls + %d ms margin", fmtMS(ms(p99)), obs.Count[hop], margin.Milliseconds())})
		if strings.HasPrefix(hop, "orders/") {
			inner += capMS
		}
	}
	if len(s.Caps) == 0 {
		return Suggestion{}, fmt.Errorf("the warm-up measured no hop (have %s)", obs.Names())
	}
	for i, c := range s.Caps {
		if floor := inner + float64(margin.Milliseconds()); c.Hop == "gateway/orders" && c.CapMS < floor {
			s.Caps[i].CapMS = floor
			s.Caps[i].Why = fmt.Sprintf("p99 %s, but no shorter than orders' calls one try each (%s) + %d ms margin: outer waits outlast inner ones",
				fmtMS(c.P99MS), fmtMS(inner), margin.Milliseconds())
		}
	}
	connect := deadline / 10
	s.ConnectTimeoutMS = ms(connect)
	s.ConnectWhy = fmt.Sprintf("a tenth of the %d ms deadline: a loopback connect takes well under a millisecond, and one not made by then will not be made in time", deadline.Milliseconds())
	return s, nil
}

// capSetting is where one hop's cap goes in the shop's configuration.
type capSetting struct {
	flag string
	set  func(*shop.Config, time.Duration)
}

// capSettings are the hops whose caps the capstone sets, by
// "service/dep". (The audit write has a timeout of its own.)
var capSettings = map[string]capSetting{
	"gateway/orders":  {"--orders-cap", func(c *shop.Config, d time.Duration) { c.Gateway.OrdersCap = d }},
	"gateway/catalog": {"--browse-cap", func(c *shop.Config, d time.Duration) { c.Gateway.CatalogCap = d }},
	"orders/catalog":  {"--catalog-cap", func(c *shop.Config, d time.Duration) { c.Orders.CatalogCap = d }},
	"orders/fraud":    {"--fraud-cap", func(c *shop.Config, d time.Duration) { c.Orders.FraudCap = d }},
	"orders/payments": {"--payments-cap", func(c *shop.Config, d time.Duration) { c.Orders.PaymentsCap = d }},
	"orders/shipping": {"--shipping-cap", func(c *shop.Config, d time.Duration) { c.Orders.ShippingCap = d }},
	"orders/estimate": {"--estimate-cap", func(c *shop.Config, d time.Duration) { c.Orders.EstimateCap = d }},
}

// applyTo puts the suggestion into a shop's configuration.
func (s Suggestion) applyTo(c *shop.Config) error {
	for _, cp := range s.Caps {
		set, ok := capSettings[cp.Hop]
		if !ok {
			return fmt.Errorf("no setting for hop %s", cp.Hop)
		}
		set.set(c, time.Duration(cp.CapMS*float64(time.Millisecond)))
	}
	if s.ConnectTimeoutMS > 0 {
		c.Shared.ConnectTimeout = time.Duration(s.ConnectTimeoutMS * float64(time.Millisecond))
	}
	return nil
}

// Lines are the suggestion as the table prints it, one value a line.
func (s Suggestion) Lines() []string {
	var out []string
	for _, c := range s.Caps {
		out = append(out, fmt.Sprintf("%-16s %-15s %6s   %s", c.Hop, c.Flag, fmtMS(c.CapMS), c.Why))
	}
	out = append(out, fmt.Sprintf("%-16s %-15s %6s   %s", "every dependency", "--connect-timeout", fmtMS(s.ConnectTimeoutMS), s.ConnectWhy))
	return out
}

func fmtMS(v float64) string {
	if v >= 10 || v == math.Trunc(v) {
		return fmt.Sprintf("%.0f ms", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.1f", v), "0"), ".") + " ms"
}
