package lab

import (
	"fmt"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/mercado-lab/mercado/internal/budget"
	"github.com/mercado-lab/mercado/lab/shop"
)

// DefaultSuggestMargin is what the suggest step adds to a hop's healthy
// p99 by default: Drill 76's per-hop margin, room for a busy machine's
// pauses and a fresh connection's first calls, far under the budget.
var DefaultSuggestMargin = budget.Margin{Fixed: 100 * time.Millisecond}

// suggestFrom is the suggest step over the warm-up: each call's hop
// histogram as it grew from before to after, given to budget.Suggest with
// the margin and the clients' deadline as the budget.
func suggestFrom(before, after budget.Hops, margin budget.Margin, deadline time.Duration) (budget.Suggestion, error) {
	start := map[string]budget.HopObservation{}
	for _, o := range before.Calls {
		start[o.From+"/"+o.To] = o
	}
	var window []budget.HopObservation
	calls := uint64(0)
	for _, o := range after.Calls {
		b := start[o.From+"/"+o.To]
		o.Durations = histSince(o.Durations, b.Durations)
		o.TimedOut -= min(b.TimedOut, o.TimedOut)
		if o.Durations != nil {
			calls += o.Durations.GetSampleCount()
		}
		window = append(window, o)
	}
	if calls == 0 {
		return budget.Suggestion{}, fmt.Errorf("the warm-up made no call: %w", budget.ErrNoTraffic)
	}
	return budget.Suggest(window, budget.SuggestOptions{Margin: margin, Budget: deadline}), nil
}

// histSince is what h counted after before (nil when h is).
func histSince(h, before *dto.Histogram) *dto.Histogram {
	if h == nil {
		return nil
	}
	if before == nil {
		return h
	}
	n := h.GetSampleCount() - min(before.GetSampleCount(), h.GetSampleCount())
	out := &dto.Histogram{SampleCount: &n}
	for _, b := range h.Bucket {
		c := b.GetCumulativeCount()
		for _, o := range before.Bucket {
			if o.GetUpperBound() == b.GetUpperBound() {
				c -= min(o.GetCumulativeCount(), c)
			}
		}
		out.Bucket = append(out.Bucket, &dto.Bucket{UpperBound: b.UpperBound, CumulativeCount: &c})
	}
	return out
}

// capSetting is where one call's cap goes in the in-process shop's
// configuration: the call, as "service/dep", and the flag that sets its
// cap when the service runs alone.
type capSetting struct {
	hop, flag string
	set       func(*shop.Config, time.Duration)
}

// capList is every call's cap setting.
var capList = []capSetting{
	{"gateway/orders", "--orders-cap", func(c *shop.Config, d time.Duration) { c.Gateway.OrdersCap = d }},
	{"gateway/catalog", "--browse-cap", func(c *shop.Config, d time.Duration) { c.Gateway.CatalogCap = d }},
	{"orders/catalog", "--catalog-cap", func(c *shop.Config, d time.Duration) { c.Orders.CatalogCap = d }},
	{"orders/fraud", "--fraud-cap", func(c *shop.Config, d time.Duration) { c.Orders.FraudCap = d }},
	{"orders/payments", "--payments-cap", func(c *shop.Config, d time.Duration) { c.Orders.PaymentsCap = d }},
	{"orders/shipping", "--shipping-cap", func(c *shop.Config, d time.Duration) { c.Orders.ShippingCap = d }},
	{"orders/estimate", "--estimate-cap", func(c *shop.Config, d time.Duration) { c.Orders.EstimateCap = d }},
}

// applySuggestion puts s's caps and connect timeout into a shop's
// configuration. A call with no suggestion (no calls in the warm-up)
// keeps its default.
func applySuggestion(s budget.Suggestion, c *shop.Config) error {
	for _, h := range s.Hops {
		if h.Cap == 0 {
			continue
		}
		i := slices.IndexFunc(capList, func(c capSetting) bool { return c.hop == h.From+"/"+h.To })
		if i < 0 || capList[i].flag != h.Setting {
			return fmt.Errorf("%s → %s: no setting %s in the in-process shop", h.From, h.To, h.Setting)
		}
		capList[i].set(c, h.Cap)
	}
	if s.ConnectTimeout > 0 {
		c.Shared.ConnectTimeout = s.ConnectTimeout
	}
	return nil
}

// suggestionLines are the suggestion as the table prints it: each value
// with its flag and its reason, then the warnings.
func suggestionLines(s budget.Suggestion) []string {
	var out []string
	for _, h := range s.Hops {
		if h.Cap == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%-20s %s", h.Setting+"="+flagMS(h.Cap), h.Why))
	}
	if s.ConnectTimeout > 0 {
		out = append(out, fmt.Sprintf("%-20s %s", "--connect-timeout="+flagMS(s.ConnectTimeout), s.ConnectWhy))
	}
	for _, w := range s.Warnings {
		out = append(out, "warning: "+w)
	}
	return out
}

// flagMS writes d as a flag value in milliseconds ("105ms").
func flagMS(d time.Duration) string {
	return fmt.Sprintf("%dms", d.Milliseconds())
}
