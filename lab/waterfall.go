package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/internal/timing"
	"github.com/mercado-lab/mercado/lab/shop"
)

// WaterfallConfig is the 800 ms create-order waterfall: a budget, the
// gateway's own work, the reserve orders keeps for writing its answer, and
// each step's cap and latency.
type WaterfallConfig struct {
	Budget time.Duration
	// GatewayWork is the gateway's own work before it calls orders.
	GatewayWork time.Duration
	// Reserve is what orders keeps back from every call for writing the
	// answer and cleaning up (its margin); Cleanup is how long that final
	// write takes.
	Reserve, Cleanup time.Duration
	// Each step's own cap and how long it takes in this run.
	CatalogCap, CatalogLatency   time.Duration
	PaymentsCap, PaymentsLatency time.Duration
}

// DefaultWaterfall is the seed's run: 800 ms, the gateway works 100 ms,
// orders reserves 80 ms, inventory (catalog) has a 300 ms cap and takes
// 290, payment has a 400 ms cap and is slow (600 ms).
func DefaultWaterfall() WaterfallConfig {
	return WaterfallConfig{
		Budget: 800 * time.Millisecond, GatewayWork: 100 * time.Millisecond,
		Reserve: 80 * time.Millisecond, Cleanup: 75 * time.Millisecond,
		CatalogCap: 300 * time.Millisecond, CatalogLatency: 290 * time.Millisecond,
		PaymentsCap: 400 * time.Millisecond, PaymentsLatency: 600 * time.Millisecond,
	}
}

// Validate reports a configuration the lab cannot run.
func (c WaterfallConfig) Validate() error {
	if c.Budget <= 0 || c.Budget > time.Minute {
		return fmt.Errorf("budget: %v is outside (0, 1m]", c.Budget)
	}
	if c.CatalogCap <= 0 || c.PaymentsCap <= 0 || c.CatalogCap > time.Minute || c.PaymentsCap > time.Minute {
		return fmt.Errorf("caps must be within (0, 1m]")
	}
	for _, d := range []time.Duration{c.GatewayWork, c.Reserve, c.Cleanup, c.CatalogLatency, c.PaymentsLatency} {
		if d < 0 || d > time.Minute {
			return fmt.Errorf("work times and the reserve must be within 0 to 1m, got %v", d)
		}
	}
	return nil
}

// WaterfallStep is one step of the create-order request.
type WaterfallStep struct {
	Name string `json:"name"`
	// StartsAtMS is when the step started, after the steps before it.
	StartsAtMS int64 `json:"starts_at_ms"`
	CapMS      int64 `json:"cap_ms"`
	// RemainingMS is what was left of the budget before the step, less
	// the reserve; TimeoutMS what the step was given.
	RemainingMS int64  `json:"remaining_ms"`
	TimeoutMS   int64  `json:"timeout_ms"`
	TookMS      int64  `json:"took_ms"`
	Outcome     string `json:"outcome"`
}

// WaterfallResult is the run's measured figures.
type WaterfallResult struct {
	BudgetMS int64 `json:"budget_ms"`
	TotalMS  int64 `json:"total_ms"`
	// HTTPStatus and Status are the client's answer: 202 "processing".
	HTTPStatus int             `json:"http_status"`
	Status     string          `json:"status"`
	OrderID    string          `json:"order_id"`
	Steps      []WaterfallStep `json:"steps"`
	// FinalOrderStatus is the order's state once the reconciler settled
	// it, and SettledAfterMS how long after the answer that was.
	FinalOrderStatus string `json:"final_order_status"`
	SettledAfterMS   int64  `json:"settled_after_ms"`
}

// Waterfall runs the 800 ms create-order on the budgeted shop and follows
// the order until it settles.
func Waterfall(ctx context.Context, cfg WaterfallConfig, log *slog.Logger) (WaterfallResult, error) {
	if err := cfg.Validate(); err != nil {
		return WaterfallResult{}, err
	}
	sc := shop.EphemeralConfig()
	sc.Shared.Mode, sc.Shared.Margin, sc.Shared.Floor = mode.Budgeted, serve.DefaultMargin, serve.DefaultFloor
	off := mode.RetriesOff
	sc.Shared.Overrides = mode.Overrides{Retries: &off} // the waterfall has no retries
	sc.Gateway.Faults = faults.Set{"Checkout": {Latency: cfg.GatewayWork}}
	// Orders alone keeps the reserve back: it gets a copy of the shared
	// settings with a margin of its own.
	sc.Orders.Shared = sc.Shared
	sc.Orders.Margin = cfg.Reserve
	sc.Orders.Faults = faults.Set{"Finish": {Latency: cfg.Cleanup}}
	sc.Orders.CatalogCap, sc.Orders.PaymentsCap = cfg.CatalogCap, cfg.PaymentsCap
	sc.Catalog.Faults = faults.Set{"ReserveStock": {Latency: cfg.CatalogLatency}}
	sc.Payments.Faults = faults.Set{"CreateCharge": {Latency: cfg.PaymentsLatency}}
	s, err := shop.Start(ctx, sc, log)
	if err != nil {
		return WaterfallResult{}, err
	}
	defer s.Stop()

	client := &http.Client{Timeout: cfg.Budget + time.Minute}
	if err := warmUp(ctx, client, s.GatewayURL()); err != nil {
		return WaterfallResult{}, err
	}
	c, err := measureCheckout(ctx, client, s.GatewayURL(), "waterfall-1", cfg.Budget,
		`{"customer":"waterfall","items":[{"sku":"kettle-gooseneck","qty":1}],"address":"800 Budget Street"}`)
	if err != nil {
		return WaterfallResult{}, err
	}
	answeredAt := time.Now()
	var answer struct {
		Status  string `json:"status"`
		OrderID string `json:"order_id"`
	}
	_ = json.Unmarshal(c.body, &answer)
	total, hops := c.took, c.hops
	res := WaterfallResult{
		BudgetMS: cfg.Budget.Milliseconds(), TotalMS: total.Round(time.Millisecond).Milliseconds(),
		HTTPStatus: c.status, Status: answer.Status, OrderID: answer.OrderID,
	}
	res.Steps = waterfallSteps(cfg, hops)

	if res.OrderID != "" {
		final, err := awaitSettled(ctx, client, s.GatewayURL()+"/api/orders/"+res.OrderID, 15*time.Second)
		if err != nil {
			return WaterfallResult{}, err
		}
		res.FinalOrderStatus = final
		res.SettledAfterMS = time.Since(answeredAt).Milliseconds()
	}
	return res, nil
}

// waterfallSteps lays the measured hops out as the seed's table.
func waterfallSteps(cfg WaterfallConfig, hops []timing.Hop) []WaterfallStep {
	ms := func(d time.Duration) int64 { return d.Round(time.Millisecond).Milliseconds() }
	var steps []WaterfallStep
	var at time.Duration
	add := func(name string, cap time.Duration, h timing.Hop, ok bool) {
		st := WaterfallStep{Name: name, StartsAtMS: ms(at), CapMS: ms(cap), Outcome: "not reached"}
		if name != "gateway" && name != "reserve" {
			st.RemainingMS = ms(cfg.Budget - at - cfg.Reserve)
		}
		if ok {
			st.TimeoutMS, st.TookMS, st.Outcome = ms(h.Timeout), ms(h.Took), lessonOutcome(h.Outcome)
			at += h.Took
		}
		steps = append(steps, st)
	}
	g, ok := findHop(hops, "gateway")
	add("gateway", 0, g, ok)
	c, ok := findHop(hops, "catalog")
	add("catalog", cfg.CatalogCap, c, ok)
	p, ok := findHop(hops, "payments")
	add("payments", cfg.PaymentsCap, p, ok)
	f, ok := findHop(hops, "finish")
	add("reserve", 0, f, ok)
	return steps
}

// awaitSettled polls an order until it leaves payment_pending.
func awaitSettled(ctx context.Context, client *http.Client, url string, within time.Duration) (string, error) {
	deadline := time.Now().Add(within)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return "", err
		}
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		var o struct {
			Status string `json:"status"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&o)
		resp.Body.Close()
		if o.Status != "payment_pending" && o.Status != "pending" && o.Status != "" {
			return o.Status, nil
		}
		if time.Now().After(deadline) {
			return o.Status, fmt.Errorf("order still %q after %v", o.Status, within)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// WriteJSON writes r as indented JSON.
func (r WaterfallResult) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the seed's waterfall table from the measured run.
func (r WaterfallResult) WriteTable(w io.Writer, cfg WaterfallConfig) {
	fmt.Fprintf(w, "Create order within %d ms: the gateway works first; orders keeps the last %d ms for its answer.\n\n",
		r.BudgetMS, cfg.Reserve.Milliseconds())
	reserve := fmt.Sprintf("remaining - %d", cfg.Reserve.Milliseconds())
	fmt.Fprintf(w, "%-9s %10s %8s %15s %22s  %s\n", "step", "starts at", "own cap", reserve, "applied timeout", "actually used")
	for _, s := range r.Steps {
		cap, rem, to := "-", "-", "-"
		if s.CapMS > 0 {
			cap = fmt.Sprintf("%d", s.CapMS)
			rem = fmt.Sprintf("%d", s.RemainingMS)
			to = fmt.Sprintf("min(%d, %d) = %d", s.CapMS, s.RemainingMS, s.TimeoutMS)
		}
		used := fmt.Sprintf("%d ms", s.TookMS)
		if s.Outcome == "timeout" {
			used = fmt.Sprintf("timed out at %d ms", s.TookMS)
		} else if s.Outcome == "not reached" {
			used = "not reached"
		}
		fmt.Fprintf(w, "%-9s %7d ms %8s %15s %22s  %s\n", s.Name, s.StartsAtMS, cap, rem, to, used)
	}
	fmt.Fprintf(w, "\nThe client got HTTP %d %q for order %s after %d ms (budget %d ms).\n",
		r.HTTPStatus, r.Status, r.OrderID, r.TotalMS, r.BudgetMS)
	fmt.Fprintf(w, "Its key was stored; no second payment was made. The reconciler asked payments under the same key,\n")
	fmt.Fprintf(w, "and %d ms later the order was %s.\n", r.SettledAfterMS, r.FinalOrderStatus)
}
