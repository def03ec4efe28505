package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/internal/timing"
	"github.com/mercado-lab/mercado/lab/shop"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// Lesson7Config is lesson 7's scenario: a client deadline, each hop's own
// cap, and how long each hop takes in this run.
type Lesson7Config struct {
	Deadline      time.Duration
	Margin, Floor time.Duration

	CatalogCap, PaymentsCap, ShippingCap             time.Duration
	CatalogLatency, PaymentsLatency, ShippingLatency time.Duration
}

// DefaultLesson7 is the lesson's run: a 1200 ms deadline; catalog (cap 300)
// takes 280, payments (cap 800) takes 760, and shipping (cap 300) is
// degraded: its carrier hangs far past any cap. Margin and floor are the
// services' defaults.
func DefaultLesson7() Lesson7Config {
	return Lesson7Config{
		Deadline: 1200 * time.Millisecond, Margin: serve.DefaultMargin, Floor: serve.DefaultFloor,
		CatalogCap: 300 * time.Millisecond, PaymentsCap: 800 * time.Millisecond, ShippingCap: 300 * time.Millisecond,
		CatalogLatency: 280 * time.Millisecond, PaymentsLatency: 760 * time.Millisecond, ShippingLatency: 5 * time.Second,
	}
}

// Validate reports a configuration the lab cannot run.
func (c Lesson7Config) Validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"deadline", c.Deadline}, {"catalog-cap", c.CatalogCap}, {"payments-cap", c.PaymentsCap}, {"shipping-cap", c.ShippingCap},
	} {
		if d.v <= 0 || d.v > time.Minute {
			return fmt.Errorf("%s: %v is outside (0, 1m]", d.name, d.v)
		}
	}
	for _, d := range []time.Duration{c.Margin, c.Floor, c.CatalogLatency, c.PaymentsLatency, c.ShippingLatency} {
		if d < 0 || d > time.Minute {
			return fmt.Errorf("margin, floor and latencies must be within 0 to 1m, got %v", d)
		}
	}
	return nil
}

// HopResult is one hop of the chain as measured by orders.
type HopResult struct {
	Name string `json:"name"`
	// TimeoutMS is the call's effective timeout (0: the call was not made).
	TimeoutMS int64 `json:"timeout_ms"`
	TookMS    int64 `json:"took_ms"`
	// Outcome is ok, timeout, skipped or error; unknown when orders'
	// report never reached the edge.
	Outcome string `json:"outcome"`
	// ClippedByBudget reports that the budget, not the cap, set the timeout.
	ClippedByBudget bool `json:"clipped_by_budget"`
	// ElapsedMS is the chain's running total after this hop.
	ElapsedMS int64 `json:"elapsed_ms"`
	// Note says why a hop was skipped, or why its outcome is unknown.
	Note string `json:"note,omitempty"`
}

// Notes on hops that were not called or not reported.
const (
	SkipInsufficientBudget = "insufficient budget"
	SkipEarlierHopFailed   = "an earlier hop failed"
	NotReported            = "not reported: orders answered after the gateway had given up"
)

// ModeResult is one checkout in one mode.
type ModeResult struct {
	DeadlineMS int64 `json:"deadline_ms"`
	// TotalMS is the checkout's duration measured by the client.
	TotalMS int64 `json:"total_ms"`
	// Verdict is WITHIN when the answer came by the deadline, else OVER.
	Verdict    string      `json:"verdict"`
	HTTPStatus int         `json:"http_status"`
	Hops       []HopResult `json:"hops"`
}

// Lesson7Result is the lab's two runs.
type Lesson7Result struct {
	Naive    ModeResult `json:"naive"`
	Budgeted ModeResult `json:"budgeted"`
}

// chain is lesson 7's hops, in order.
var chain = []string{"catalog", "payments", "shipping"}

// Lesson7 starts the shop once per mode, makes lesson 7's hops as slow as
// cfg says, and measures one checkout in each.
func Lesson7(ctx context.Context, cfg Lesson7Config, log *slog.Logger) (Lesson7Result, error) {
	if err := cfg.Validate(); err != nil {
		return Lesson7Result{}, err
	}
	var res Lesson7Result
	for _, run := range []struct {
		m   mode.Mode
		out *ModeResult
	}{{mode.Naive, &res.Naive}, {mode.Budgeted, &res.Budgeted}} {
		r, err := lesson7Once(ctx, cfg, run.m, log)
		if err != nil {
			return Lesson7Result{}, fmt.Errorf("%s run: %w", run.m, err)
		}
		*run.out = r
	}
	return res, nil
}

func lesson7Once(ctx context.Context, cfg Lesson7Config, m mode.Mode, log *slog.Logger) (ModeResult, error) {
	sc := shop.EphemeralConfig()
	sc.Shared.Mode, sc.Shared.Margin, sc.Shared.Floor = m, cfg.Margin, cfg.Floor
	// Lesson 7 is about timeouts alone: one attempt per hop in both modes.
	off := mode.RetriesOff
	sc.Shared.Overrides = mode.Overrides{Retries: &off}
	// The naive shipping keeps its carrier waiting after the call is
	// abandoned; don't wait for it when the lab is done.
	sc.Shared.DrainTimeout = 100 * time.Millisecond
	sc.Orders.CatalogCap, sc.Orders.PaymentsCap, sc.Orders.ShippingCap = cfg.CatalogCap, cfg.PaymentsCap, cfg.ShippingCap
	sc.Catalog.Faults = faults.Set{"ReserveStock": {Latency: cfg.CatalogLatency}}
	sc.Payments.Faults = faults.Set{"CreateCharge": {Latency: cfg.PaymentsLatency}}
	sc.Shipping.Faults = faults.Set{"CreateShipment": {Latency: cfg.ShippingLatency}}
	s, err := shop.Start(ctx, sc, log)
	if err != nil {
		return ModeResult{}, err
	}
	defer s.Stop()

	client := &http.Client{Timeout: cfg.Deadline + time.Minute}
	if err := warmUp(ctx, client, s.GatewayURL()); err != nil {
		return ModeResult{}, err
	}

	c, err := measureCheckout(ctx, client, s.GatewayURL(), "lesson7-"+string(m), cfg.Deadline,
		`{"customer":"lesson7","items":[{"sku":"tea-sencha","qty":1}],"address":"7 Budget Lane"}`)
	if err != nil {
		return ModeResult{}, err
	}
	total, hops := c.took, c.hops
	out := ModeResult{
		DeadlineMS: cfg.Deadline.Milliseconds(), TotalMS: total.Round(time.Millisecond).Milliseconds(),
		Verdict: "WITHIN", HTTPStatus: c.status,
	}
	if total > cfg.Deadline {
		out.Verdict = "OVER"
	}
	// Orders reports its hops in its answer; when that answer came too late
	// for the gateway, the edge never saw them.
	_, reported := findHop(hops, chain[0])
	var elapsed time.Duration
	for _, name := range chain {
		h := HopResult{Name: name, Outcome: "skipped", Note: SkipEarlierHopFailed}
		if !reported {
			h.Outcome, h.Note = "unknown", NotReported
		}
		if got, ok := findHop(hops, name); ok {
			h.Note = ""
			elapsed += got.Took
			h.TimeoutMS = got.Timeout.Round(time.Millisecond).Milliseconds()
			h.TookMS = got.Took.Round(time.Millisecond).Milliseconds()
			h.Outcome = lessonOutcome(got.Outcome)
			if h.Outcome == "skipped" {
				h.Note = SkipInsufficientBudget
			}
			h.ClippedByBudget = m == mode.Budgeted && got.Timeout > 0 && got.Timeout < capOf(cfg, name)
		}
		h.ElapsedMS = elapsed.Round(time.Millisecond).Milliseconds()
		out.Hops = append(out.Hops, h)
	}
	return out, nil
}

// checkout is one measured checkout: its status, body, duration as the
// client saw it, and the hops the shop reported in Server-Timing.
type checkout struct {
	status int
	body   []byte
	took   time.Duration
	hops   []timing.Hop
}

// measureCheckout posts body as a checkout with an idempotency key and the
// client's deadline, and measures it.
func measureCheckout(ctx context.Context, client *http.Client, base, key string, deadlineAfter time.Duration, body string) (checkout, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/checkout", strings.NewReader(body))
	if err != nil {
		return checkout{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set(deadline.HeaderDeadline, strconv.FormatInt(deadlineAfter.Milliseconds(), 10))
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return checkout{}, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return checkout{}, err
	}
	c := checkout{status: resp.StatusCode, body: b, took: time.Since(start)}
	c.hops, err = timing.Parse(resp.Header.Get("Server-Timing"))
	return c, err
}

// warmUp opens the gateway's connections and the shop's gRPC channels so
// the measured checkout pays for no handshake.
func warmUp(ctx context.Context, client *http.Client, base string) error {
	for _, path := range []string{"/api/products", "/api/orders/warm-up"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("warming up: %w", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return nil
}

func findHop(hops []timing.Hop, name string) (timing.Hop, bool) {
	for _, h := range hops {
		if h.Name == name {
			return h, true
		}
	}
	return timing.Hop{}, false
}

func capOf(cfg Lesson7Config, name string) time.Duration {
	switch name {
	case "catalog":
		return cfg.CatalogCap
	case "payments":
		return cfg.PaymentsCap
	}
	return cfg.ShippingCap
}

// lessonOutcome folds pkg/deadline's outcomes into the lesson's four: a
// call cut by its cap and one cut by the budget both timed out.
func lessonOutcome(o string) string {
	switch deadline.Outcome(o) {
	case deadline.OutcomeOK:
		return "ok"
	case deadline.OutcomeTimeout, deadline.OutcomeBudget:
		return "timeout"
	case deadline.OutcomeSkipped:
		return "skipped"
	}
	return "error"
}

// WriteJSON writes r as indented JSON.
func (r Lesson7Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the lesson's two tables from the measured runs.
func (r Lesson7Result) WriteTable(w io.Writer, cfg Lesson7Config) {
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	fmt.Fprintf(w, "Client deadline for checkout = %d ms\n", ms(cfg.Deadline))
	fmt.Fprintf(w, "Sum of local timeouts        = %d ms  (the worst case when every hop uses its own)\n\n",
		ms(cfg.CatalogCap+cfg.PaymentsCap+cfg.ShippingCap))
	writeMode(w, "NAIVE: every hop uses its own local timeout, blind to the deadline", "local_timeout", r.Naive)
	fmt.Fprintln(w)
	writeMode(w, fmt.Sprintf("BUDGETED: the deadline is propagated; each hop gets min(cap, remaining − %d ms margin)", ms(cfg.Margin)),
		"timeout", r.Budgeted)
	fmt.Fprintln(w, "\nEvery figure above was measured on real services over loopback gRPC and HTTP.")
}

func writeMode(w io.Writer, title, timeoutLabel string, m ModeResult) {
	fmt.Fprintln(w, title)
	for _, h := range m.Hops {
		note := ""
		if h.ClippedByBudget {
			note = "  <- clipped by the budget"
		}
		switch h.Outcome {
		case "skipped":
			fmt.Fprintf(w, "  %-9s not called: %s  (skipped)\n", h.Name, h.Note)
			continue
		case "unknown":
			fmt.Fprintf(w, "  %-9s %s\n", h.Name, h.Note)
			continue
		}
		fmt.Fprintf(w, "  %-9s %s=%5d ms  took %5d ms (%s)  elapsed=%5d ms%s\n",
			h.Name, timeoutLabel, h.TimeoutMS, h.TookMS, h.Outcome, h.ElapsedMS, note)
	}
	verdict := "WITHIN"
	if m.Verdict == "OVER" {
		verdict = "OVER (the client had already given up)"
	}
	fmt.Fprintf(w, "  total elapsed = %d ms vs deadline %d ms  -> %s   [HTTP %d]\n", m.TotalMS, m.DeadlineMS, verdict, m.HTTPStatus)
}
