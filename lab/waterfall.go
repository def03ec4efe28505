package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/internal/setting"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/internal/telemetry"
	"github.com/mercado-lab/mercado/internal/timing"
	"github.com/mercado-lab/mercado/lab/driver"
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
	var c WaterfallConfig
	setting.Default(c.Settings()...)
	return c
}

// Settings declares the run's settings, each once: its flag, default,
// range and help.
func (c *WaterfallConfig) Settings() []setting.Setting {
	return []setting.Setting{
		setting.Duration(&c.Budget, "budget", 800*time.Millisecond, setting.Above(0, time.Minute), "the client's budget for creating the order"),
		setting.Duration(&c.GatewayWork, "gateway-work", 100*time.Millisecond, setting.Within(0, time.Minute), "the gateway's own work before calling orders"),
		setting.Duration(&c.Reserve, "reserve", 80*time.Millisecond, setting.Within(0, time.Minute), "what orders keeps back from every call for its answer"),
		setting.Duration(&c.Cleanup, "cleanup", 75*time.Millisecond, setting.Within(0, time.Minute), "how long orders' final write takes"),
		setting.Duration(&c.CatalogCap, "catalog-cap", 300*time.Millisecond, setting.Above(0, time.Minute), "inventory (catalog) call's cap: its own timeout"),
		setting.Duration(&c.CatalogLatency, "catalog-latency", 290*time.Millisecond, setting.Within(0, time.Minute), "how long catalog takes"),
		setting.Duration(&c.PaymentsCap, "payments-cap", 400*time.Millisecond, setting.Above(0, time.Minute), "payment call's cap: its own timeout"),
		setting.Duration(&c.PaymentsLatency, "payments-latency", 600*time.Millisecond, setting.Within(0, time.Minute), "how long the payment provider takes"),
	}
}

// Validate reports a configuration the lab cannot run.
func (c WaterfallConfig) Validate() error { return setting.Check(c.Settings()...) }

// replay is the waterfall as the replay engine runs it: one checkout on
// the budgeted shop, whose steps are the seed's.
func (c WaterfallConfig) replay() replay {
	return replay{
		name: "waterfall", deadline: c.Budget, margin: serve.DefaultMargin, floor: serve.DefaultFloor,
		edge: c.GatewayWork, own: c.Cleanup, ordersMargin: c.Reserve,
		// Orders keeps the reserve back for its answer, and its final
		// write spends some of it.
		spare: c.Reserve - c.Cleanup,
		ways:  []way{{mode: mode.Budgeted}},
		hops: []hopSpec{
			{"catalog", c.CatalogCap, c.CatalogLatency},
			{"payments", c.PaymentsCap, c.PaymentsLatency},
		},
		// The fraud screen takes no time here (FraudLeftOut).
		faults: map[string]faults.Set{
			"gateway":  {sim.GatewayCheckout: {Latency: c.GatewayWork}},
			"orders":   {sim.OrdersFinish: {Latency: c.Cleanup}},
			"catalog":  {sim.CatalogReserveStock: {Latency: c.CatalogLatency}},
			"payments": {sim.PaymentsCreateCharge: {Latency: c.PaymentsLatency}, sim.PaymentsScreenOrder: {}},
		},
		body: `{"customer":"waterfall","items":[{"sku":"kettle-gooseneck","qty":1}],"address":"800 Budget Street"}`,
		configure: func(sc *shop.Config) {
			// Orders alone keeps the reserve back: it gets a copy of the
			// shared settings with a margin of its own.
			sc.Orders.Shared = sc.Shared
			sc.Orders.Margin = c.Reserve
		},
	}
}

// WaterfallStep is one step of the create-order request.
type WaterfallStep struct {
	Name string `json:"name"`
	// StartsAtMS is when the step started, after the steps before it.
	StartsAtMS int64 `json:"starts_at_ms"`
	CapMS      int64 `json:"cap_ms"`
	// RemainingMS is the budget less what the steps before it took and
	// less the reserve; TimeoutMS what orders gave the call (0: it was
	// not made).
	RemainingMS int64 `json:"remaining_ms"`
	TimeoutMS   int64 `json:"timeout_ms"`
	TookMS      int64 `json:"took_ms"`
	// Outcome is ok, timeout, skipped (too little budget to call), error,
	// not reached (an earlier step failed) or not reported (orders'
	// report of its steps never reached the client).
	Outcome string `json:"outcome"`
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
	// Predicted is what the lesson's steps predict of the answer.
	Predicted ReplayPrediction `json:"predicted"`
	// ReplayHTTPStatus and ReplayOrderID are the answer to the same
	// checkout sent again under the same Idempotency-Key, right after the
	// first answer (when that one named an order).
	ReplayHTTPStatus int    `json:"replay_http_status,omitempty"`
	ReplayOrderID    string `json:"replay_order_id,omitempty"`
	// FinalOrderStatus is the order's state once it left payment_pending.
	// When the answer left it pending, SettledAfterMS is how long after
	// the answer it settled, and ChargeLookups how many times orders
	// asked payments about the charge meanwhile (the reconciler).
	FinalOrderStatus string `json:"final_order_status"`
	SettledAfterMS   int64  `json:"settled_after_ms,omitempty"`
	ChargeLookups    int    `json:"charge_lookups"`
	// ChargesTaken and DuplicateCharges are the successful charges
	// payments took for this checkout, and those beyond one, counted
	// once the order settled (or when the lab ended).
	ChargesTaken     int `json:"charges_taken"`
	DuplicateCharges int `json:"duplicate_charges"`
	// MeasuredAgain says why each earlier try was measured again: a
	// stall of this process decided it (see stalls.go). Disturbed says
	// the same of this try, when every try was.
	MeasuredAgain []string `json:"measured_again,omitempty"`
	Disturbed     string   `json:"disturbed,omitempty"`
}

// Waterfall runs the 800 ms create-order on the budgeted shop and follows
// the order until it settles; again on a fresh shop when a stall of this
// process decided a try (up to maxTries).
func Waterfall(ctx context.Context, cfg WaterfallConfig, log *slog.Logger) (WaterfallResult, error) {
	if err := cfg.Validate(); err != nil {
		return WaterfallResult{}, err
	}
	r, again, stalled, err := untilUndisturbed(func() (WaterfallResult, string, error) { return waterfallOnce(ctx, cfg, log) })
	if err != nil {
		return WaterfallResult{}, err
	}
	r.MeasuredAgain, r.Disturbed = again, stalled
	return r, nil
}

// waterfallOnce is one try of the waterfall: the replay engine's
// checkout, then what became of its order. It says why, when a stall of
// this process rather than the budget decided it.
func waterfallOnce(ctx context.Context, cfg WaterfallConfig, log *slog.Logger) (WaterfallResult, string, error) {
	rp := cfg.replay()
	st, err := rp.start(ctx, rp.ways[0], log)
	if err != nil {
		return WaterfallResult{}, "", err
	}
	defer st.stop()
	d := st.driver
	// The warm-up took a charge and may have looked one up: what follows
	// counts from here.
	chargesBefore, err := d.Charges(ctx)
	if err != nil {
		return WaterfallResult{}, "", err
	}
	lookupsBefore, err := chargeLookups(ctx, d)
	if err != nil {
		return WaterfallResult{}, "", err
	}

	t, err := st.watched(ctx)
	if err != nil {
		return WaterfallResult{}, "", err
	}
	answeredAt := time.Now()
	run := st.read(t)
	answer := orderAnswer(t.body)
	res := WaterfallResult{
		BudgetMS: run.DeadlineMS, TotalMS: run.TotalMS,
		HTTPStatus: run.HTTPStatus, Status: answer.Status, OrderID: answer.OrderID,
		Steps: waterfallSteps(cfg, t.hops), Predicted: rp.predict(rp.ways[0]),
	}

	if res.OrderID != "" {
		// The client's retry: the same checkout under the same key.
		again, err := st.send(ctx)
		if err != nil {
			return WaterfallResult{}, "", err
		}
		res.ReplayHTTPStatus, res.ReplayOrderID = again.status, orderAnswer(again.body).OrderID

		final, err := awaitSettled(ctx, st.client, d.URL()+"/api/orders/"+res.OrderID, 15*time.Second)
		if err != nil {
			return WaterfallResult{}, "", err
		}
		res.FinalOrderStatus = final
		if t.status == http.StatusAccepted {
			res.SettledAfterMS = time.Since(answeredAt).Milliseconds()
		}
	}
	lookups, err := chargeLookups(ctx, d)
	if err != nil {
		return WaterfallResult{}, "", err
	}
	res.ChargeLookups = int(lookups - lookupsBefore)
	charges, err := d.Charges(ctx)
	if err != nil {
		return WaterfallResult{}, "", err
	}
	res.ChargesTaken = charges.Succeeded - chargesBefore.Succeeded
	res.DuplicateCharges = charges.Duplicates - chargesBefore.Duplicates
	return res, st.stalled(run, t), nil
}

// orderAnswer reads the status and order of a checkout's answer.
func orderAnswer(body []byte) (a struct {
	Status  string `json:"status"`
	OrderID string `json:"order_id"`
}) {
	_ = json.Unmarshal(body, &a)
	return a
}

// chargeLookups is how many times payments has been asked about a charge
// (GetCharge): what orders' reconciler does for an order left pending.
func chargeLookups(ctx context.Context, d *driver.Driver) (float64, error) {
	all, err := d.Scrape(ctx)
	if err != nil {
		return 0, err
	}
	var n float64
	for method, v := range all["payments"].ByLabel(telemetry.NameRequests, "method") {
		if strings.HasSuffix(method, "/GetCharge") {
			n += v
		}
	}
	return n, nil
}

// waterfallSteps lays the measured hops out as the seed's table. Orders
// reports its steps with its answer; when none came back, its steps are
// not reported rather than not reached. The gateway's work and orders'
// final write are recorded from a millisecond up: a step that ran quicker
// shows 0 ms.
func waterfallSteps(cfg WaterfallConfig, hops []timing.Hop) []WaterfallStep {
	ms := func(d time.Duration) int64 { return d.Round(time.Millisecond).Milliseconds() }
	_, reported := findHop(hops, "catalog")
	var steps []WaterfallStep
	var at time.Duration
	add := func(name, hop string, cap time.Duration, ran bool) {
		st := WaterfallStep{Name: name, StartsAtMS: ms(at), CapMS: ms(cap)}
		h, ok := findHop(hops, hop)
		switch {
		case ok:
			st.Outcome = lessonOutcome(h.Outcome)
			if cap > 0 {
				st.RemainingMS = ms(cfg.Budget - at - cfg.Reserve)
			}
			if st.Outcome != "skipped" {
				st.TimeoutMS, st.TookMS = ms(h.Timeout), ms(h.Took)
			}
			at += h.Took
		case ran:
			st.Outcome = "ok"
		case !reported:
			st.Outcome = "not reported"
		default:
			st.Outcome = "not reached"
		}
		steps = append(steps, st)
	}
	// The gateway's own work comes before anything; orders' final write
	// comes after whatever orders did, once orders reported.
	add("gateway", "gateway", 0, true)
	add("catalog", "catalog", cfg.CatalogCap, false)
	add("payments", "payments", cfg.PaymentsCap, false)
	add("reserve", "finish", 0, reported)
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
func (r WaterfallResult) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteTable writes the seed's waterfall table from the measured run, and
// what became of the order: every sentence from a measured figure.
func (r WaterfallResult) WriteTable(w io.Writer, cfg WaterfallConfig) {
	fmt.Fprintf(w, "Create order within %d ms: the gateway works first; orders keeps the last %d ms for its answer.\n\n",
		r.BudgetMS, cfg.Reserve.Milliseconds())
	left := fmt.Sprintf("%d - start - %d", r.BudgetMS, cfg.Reserve.Milliseconds())
	fmt.Fprintf(w, "%-9s %10s %8s %17s %16s  %s\n", "step", "starts at", "own cap", left, "applied timeout", "actually used")
	for _, s := range r.Steps {
		cap, rem, to := "-", "-", "-"
		if s.CapMS > 0 {
			cap = fmt.Sprintf("%d", s.CapMS)
		}
		called := s.Outcome == "ok" || s.Outcome == "timeout" || s.Outcome == "error"
		if s.CapMS > 0 && (called || s.Outcome == "skipped") {
			rem = fmt.Sprintf("%d", s.RemainingMS)
		}
		if s.CapMS > 0 && called {
			to = fmt.Sprintf("%d", s.TimeoutMS)
		}
		var used string
		switch s.Outcome {
		case "ok":
			used = fmt.Sprintf("%d ms", s.TookMS)
		case "timeout":
			used = fmt.Sprintf("timed out at %d ms", s.TookMS)
		case "error":
			used = fmt.Sprintf("failed after %d ms", s.TookMS)
		case "skipped":
			used = "not called: too little budget"
		default:
			used = s.Outcome
		}
		fmt.Fprintf(w, "%-9s %7d ms %8s %17s %16s  %s\n", s.Name, s.StartsAtMS, cap, rem, to, used)
	}
	fmt.Fprintln(w, "\nThe applied timeout is what orders gave the call: min(own cap, what orders had left - reserve).")
	fmt.Fprintln(w, FraudLeftOut)

	fmt.Fprintf(w, "\nThe client got HTTP %d", r.HTTPStatus)
	if r.Status != "" {
		fmt.Fprintf(w, " %q", r.Status)
	}
	if r.OrderID != "" {
		fmt.Fprintf(w, " for order %s", r.OrderID)
	}
	fmt.Fprintf(w, " after %d ms (budget %d ms).\n", r.TotalMS, r.BudgetMS)
	fmt.Fprintf(w, "The lesson's steps predicted it (mercado budget predict): %s.\n", r.Predicted.summary())
	if r.OrderID == "" {
		fmt.Fprintln(w, "No order came back to follow.")
	} else {
		same := "the same order: the key kept the first answer"
		if r.ReplayOrderID != r.OrderID {
			same = fmt.Sprintf("order %q", r.ReplayOrderID)
		}
		fmt.Fprintf(w, "Sent again under the same Idempotency-Key, the checkout got HTTP %d for %s.\n", r.ReplayHTTPStatus, same)
		switch {
		case r.HTTPStatus != http.StatusAccepted:
			fmt.Fprintf(w, "The order was %s in the answer: there was nothing to reconcile.\n", r.FinalOrderStatus)
		case r.ChargeLookups > 0:
			fmt.Fprintf(w, "Orders' reconciler asked payments about the charge under the same key (%s), and %d ms\n",
				plural(r.ChargeLookups, "time"), r.SettledAfterMS)
			fmt.Fprintf(w, "after the answer the order was %s.\n", r.FinalOrderStatus)
		default:
			fmt.Fprintf(w, "%d ms after the answer the order was %s.\n", r.SettledAfterMS, r.FinalOrderStatus)
		}
	}
	when := "the order settled"
	if r.OrderID == "" {
		when = "the lab ended"
	}
	fmt.Fprintf(w, "By the time %s, payments had taken %s for this checkout (%s).\n",
		when, plural(r.ChargesTaken, "charge"), plural(r.DuplicateCharges, "duplicate"))
	for i, why := range r.MeasuredAgain {
		fmt.Fprintf(w, "(Try %d was measured again: %s.)\n", i+1, why)
	}
	if r.Disturbed != "" {
		fmt.Fprintf(w, "(All %d tries ended so; this one: %s.)\n", maxTries, r.Disturbed)
	}
}

// plural is n and the noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
