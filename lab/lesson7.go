package lab

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/lab/shop"
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
// degraded: its carrier hangs far past any cap. The margin and the floor
// are the services' defaults.
func DefaultLesson7() Lesson7Config {
	return Lesson7Config{
		Deadline: 1200 * time.Millisecond, Margin: serve.DefaultMargin, Floor: serve.DefaultFloor,
		CatalogCap: 300 * time.Millisecond, PaymentsCap: 800 * time.Millisecond, ShippingCap: 300 * time.Millisecond,
		CatalogLatency: 280 * time.Millisecond, PaymentsLatency: 760 * time.Millisecond, ShippingLatency: 5 * time.Second,
	}
}

// Validate reports a configuration the lab cannot run.
func (c Lesson7Config) Validate() error {
	return checkSettings(
		[]setting{{"deadline", c.Deadline}, {"catalog-cap", c.CatalogCap}, {"payments-cap", c.PaymentsCap}, {"shipping-cap", c.ShippingCap}},
		[]setting{{"margin", c.Margin}, {"floor", c.Floor}, {"catalog-latency", c.CatalogLatency},
			{"payments-latency", c.PaymentsLatency}, {"shipping-latency", c.ShippingLatency}})
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
	// MeasuredAgain says why each earlier try was measured again: a
	// stall of this process decided it (see stalls.go). Disturbed says
	// the same of this try, when every try was.
	MeasuredAgain []string `json:"measured_again,omitempty"`
	Disturbed     string   `json:"disturbed,omitempty"`
}

// Lesson7Result is the lab's two runs.
type Lesson7Result struct {
	Naive    ModeResult `json:"naive"`
	Budgeted ModeResult `json:"budgeted"`
}

// chain is lesson 7's hops, in order. The fraud screen is left out: it
// takes no time in this replay.
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
		r, err := lesson7Mode(ctx, cfg, run.m, log)
		if err != nil {
			return Lesson7Result{}, fmt.Errorf("%s run: %w", run.m, err)
		}
		*run.out = r
	}
	return res, nil
}

// lesson7Mode measures one mode's checkout, again when a stall of this
// process decided a try (up to maxTries).
func lesson7Mode(ctx context.Context, cfg Lesson7Config, m mode.Mode, log *slog.Logger) (ModeResult, error) {
	r, again, stalled, err := untilUndisturbed(func() (ModeResult, string, error) { return lesson7Once(ctx, cfg, m, log) })
	if err != nil {
		return ModeResult{}, err
	}
	r.MeasuredAgain, r.Disturbed = again, stalled
	return r, nil
}

// lesson7Once measures one checkout on a fresh shop in mode m. It says
// why, when a stall of this process rather than the budget decided it.
func lesson7Once(ctx context.Context, cfg Lesson7Config, m mode.Mode, log *slog.Logger) (ModeResult, string, error) {
	sc := shop.EphemeralConfig()
	sc.Shared.Mode, sc.Shared.Margin, sc.Shared.Floor = m, cfg.Margin, cfg.Floor
	// Lesson 7 is about timeouts alone: one attempt per hop in both modes.
	off := mode.RetriesOff
	sc.Shared.Overrides = mode.Overrides{Retries: &off}
	// The naive shipping keeps its carrier waiting after the call is
	// abandoned; don't wait for it when the lab is done.
	sc.Shared.DrainTimeout = 100 * time.Millisecond
	sc.Orders.CatalogCap, sc.Orders.PaymentsCap, sc.Orders.ShippingCap = cfg.CatalogCap, cfg.PaymentsCap, cfg.ShippingCap
	s, err := shop.Start(ctx, sc, log)
	if err != nil {
		return ModeResult{}, "", err
	}
	defer s.Stop()

	client := &http.Client{Timeout: cfg.Deadline + time.Minute}
	// Lesson 7's chain has three hops: the fraud screen, which orders asks
	// before the charge, takes no time here (FraudLeftOut; lab fanout is
	// the replay that gives it some).
	if _, err := arrange(ctx, client, s, "lesson7-warm-up-"+string(m), map[string]faults.Set{
		"catalog":  {sim.CatalogReserveStock: {Latency: cfg.CatalogLatency}},
		"payments": {sim.PaymentsCreateCharge: {Latency: cfg.PaymentsLatency}, sim.PaymentsScreenOrder: {}},
		"shipping": {sim.ShippingCreateShipment: {Latency: cfg.ShippingLatency}},
	}); err != nil {
		return ModeResult{}, "", err
	}

	watch := watchStalls()
	start := time.Now()
	c, err := measureCheckout(ctx, client, s.GatewayURL(), "lesson7-"+string(m), cfg.Deadline,
		`{"customer":"lesson7","items":[{"sku":"tea-sencha","qty":1}],"address":"7 Budget Lane"}`)
	stalls := watch.stop()
	if err != nil {
		return ModeResult{}, "", err
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
			h.Outcome = lessonOutcome(got.Outcome)
			if h.Outcome == "skipped" {
				// Not called: no timeout was applied, whatever the
				// decision would have given it.
				h.Note = SkipInsufficientBudget
			} else {
				h.TimeoutMS = got.Timeout.Round(time.Millisecond).Milliseconds()
				h.TookMS = got.Took.Round(time.Millisecond).Milliseconds()
				h.ClippedByBudget = m == mode.Budgeted && got.Timeout > 0 && got.Timeout < capOf(cfg, name)
			}
		}
		h.ElapsedMS = elapsed.Round(time.Millisecond).Milliseconds()
		out.Hops = append(out.Hops, h)
	}

	for _, h := range out.Hops {
		if why := hopStalled(h.Name, workOf(cfg, h.Name), time.Duration(h.TimeoutMS)*time.Millisecond, h.Outcome); why != "" {
			return out, why, nil
		}
	}
	// Budgeted answers within the deadline, with orders' report; when it
	// did not, a stall on the answer's way back may be why.
	if m == mode.Budgeted {
		return out, answerStalled(out.Verdict == "OVER" || !reported, stalls, start.Add(cfg.Deadline), cfg.Margin), nil
	}
	return out, "", nil
}

// FraudLeftOut is what the lesson 7 and waterfall tables say of the
// fraud screen they leave out.
const FraudLeftOut = "The fraud screen, which orders runs before the charge, takes no time in this replay and is left out of the table (mercado lab fanout shows it)."

// workOf is how long a hop works in this run.
func workOf(cfg Lesson7Config, name string) time.Duration {
	switch name {
	case "catalog":
		return cfg.CatalogLatency
	case "payments":
		return cfg.PaymentsLatency
	}
	return cfg.ShippingLatency
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

// clip writes out how the budget set the timeout of h, a hop it clipped
// (clipSum); the hop started when the chain had taken all but its own
// time.
func (cfg Lesson7Config) clip(h HopResult) string {
	return clipSum(capOf(cfg, h.Name), cfg.Deadline, cfg.Margin, h.ElapsedMS-h.TookMS, h.TimeoutMS)
}

// WriteJSON writes r as indented JSON.
func (r Lesson7Result) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteTable writes the lesson's two tables from the measured runs.
func (r Lesson7Result) WriteTable(w io.Writer, cfg Lesson7Config) {
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	fmt.Fprintf(w, "Client deadline for checkout = %d ms\n", ms(cfg.Deadline))
	fmt.Fprintf(w, "Sum of local timeouts        = %d ms  (the worst case when every hop uses its own)\n\n",
		ms(cfg.CatalogCap+cfg.PaymentsCap+cfg.ShippingCap))
	writeMode(w, "NAIVE: every hop uses its own local timeout, blind to the deadline", "local_timeout", r.Naive, cfg)
	fmt.Fprintln(w)
	writeMode(w, fmt.Sprintf("BUDGETED: the deadline is propagated; each hop gets min(cap, remaining − %d ms margin)", ms(cfg.Margin)),
		"timeout", r.Budgeted, cfg)
	fmt.Fprintln(w, "\nEvery figure above was measured on real services over loopback gRPC and HTTP.")
	fmt.Fprintln(w, FraudLeftOut)
}

func writeMode(w io.Writer, title, timeoutLabel string, m ModeResult, cfg Lesson7Config) {
	fmt.Fprintln(w, title)
	for _, h := range m.Hops {
		note := ""
		if h.ClippedByBudget {
			note = "\n            " + cfg.clip(h) + "  <- clipped by the budget"
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
		verdict = "OVER (past the client's deadline)"
	}
	fmt.Fprintf(w, "  total elapsed = %d ms vs deadline %d ms  -> %s   [HTTP %d]\n", m.TotalMS, m.DeadlineMS, verdict, m.HTTPStatus)
	for i, why := range m.MeasuredAgain {
		fmt.Fprintf(w, "  (try %d was measured again: %s)\n", i+1, why)
	}
	if m.Disturbed != "" {
		fmt.Fprintf(w, "  (all %d tries ended so; this one: %s)\n", maxTries, m.Disturbed)
	}
}
