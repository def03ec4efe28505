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

// FanoutConfig is lesson 7's exercise 2: a client deadline, how long
// each hop takes, and each hop's own cap — high enough that the budget,
// not a cap, decides.
type FanoutConfig struct {
	Deadline      time.Duration
	Margin, Floor time.Duration

	CatalogCap, FraudCap, PaymentsCap, ShippingCap                 time.Duration
	CatalogLatency, FraudLatency, PaymentsLatency, ShippingLatency time.Duration
}

// DefaultFanout is the exercise: a 900 ms deadline; catalog takes 250 ms
// and the fraud screen 300 ms, independent of each other; payments takes
// 500 ms and needs both; shipping is fast. In series the worst case is
// 1050 ms; with catalog ∥ fraud it is max(250, 300) + 500 = 800 ms. The
// margin and the floor are the services' defaults.
func DefaultFanout() FanoutConfig {
	return FanoutConfig{
		Deadline: 900 * time.Millisecond, Margin: serve.DefaultMargin, Floor: serve.DefaultFloor,
		CatalogCap: 300 * time.Millisecond, FraudCap: 400 * time.Millisecond,
		PaymentsCap: 800 * time.Millisecond, ShippingCap: 300 * time.Millisecond,
		CatalogLatency: 250 * time.Millisecond, FraudLatency: 300 * time.Millisecond,
		PaymentsLatency: 500 * time.Millisecond,
	}
}

// Validate reports a configuration the lab cannot run.
func (c FanoutConfig) Validate() error {
	return checkSettings(
		[]setting{{"deadline", c.Deadline}, {"catalog-cap", c.CatalogCap}, {"fraud-cap", c.FraudCap},
			{"payments-cap", c.PaymentsCap}, {"shipping-cap", c.ShippingCap}},
		[]setting{{"margin", c.Margin}, {"floor", c.Floor}, {"catalog-latency", c.CatalogLatency}, {"fraud-latency", c.FraudLatency},
			{"payments-latency", c.PaymentsLatency}, {"shipping-latency", c.ShippingLatency}})
}

// FanoutHop is one call of the checkout as orders measured it.
type FanoutHop struct {
	Name string `json:"name"`
	// StartMS is when the call began, from the start of the request at
	// orders (Server-Timing's start).
	StartMS int64 `json:"start_ms"`
	// TimeoutMS is the call's effective timeout (0: the call was not made).
	TimeoutMS int64 `json:"timeout_ms"`
	TookMS    int64 `json:"took_ms"`
	// Outcome is ok, timeout, skipped or error; unknown when orders'
	// report never reached the edge.
	Outcome string `json:"outcome"`
}

// FanoutRun is one checkout, run one way.
type FanoutRun struct {
	DeadlineMS int64 `json:"deadline_ms"`
	// TotalMS is the checkout's duration measured by the client.
	TotalMS int64 `json:"total_ms"`
	// Verdict is WITHIN when the answer came by the deadline, else OVER.
	Verdict string `json:"verdict"`
	// Status is the HTTP status the client got.
	Status int         `json:"status"`
	Hops   []FanoutHop `json:"hops"`
	// MeasuredAgain and Disturbed are as in ModeResult: the stalls of
	// this process that decided a try (see stalls.go).
	MeasuredAgain []string `json:"measured_again,omitempty"`
	Disturbed     string   `json:"disturbed,omitempty"`
}

// FanoutResult is the exercise measured three ways.
type FanoutResult struct {
	NaiveSequential    FanoutRun `json:"naive_sequential"`
	BudgetedSequential FanoutRun `json:"budgeted_sequential"`
	BudgetedParallel   FanoutRun `json:"budgeted_parallel"`
}

// fanoutChain is the exercise's hops: catalog ∥ fraud, then payments,
// then shipping.
var fanoutChain = []string{"catalog", "fraud", "payments", "shipping"}

// fanoutWay is one of the three ways the lab runs the checkout.
type fanoutWay struct {
	mode   mode.Mode
	fanout mode.Fanout
}

// Fanout starts the shop once per way — naive sequential, budgeted
// sequential (budgeted with fanout=sequential), budgeted parallel — makes
// the hops as slow as cfg says, and measures one checkout in each.
func Fanout(ctx context.Context, cfg FanoutConfig, log *slog.Logger) (FanoutResult, error) {
	if err := cfg.Validate(); err != nil {
		return FanoutResult{}, err
	}
	var res FanoutResult
	for _, run := range []struct {
		way fanoutWay
		out *FanoutRun
	}{
		{fanoutWay{mode.Naive, mode.FanoutSequential}, &res.NaiveSequential},
		{fanoutWay{mode.Budgeted, mode.FanoutSequential}, &res.BudgetedSequential},
		{fanoutWay{mode.Budgeted, mode.FanoutParallel}, &res.BudgetedParallel},
	} {
		r, err := fanoutWayRun(ctx, cfg, run.way, log)
		if err != nil {
			return FanoutResult{}, fmt.Errorf("%s %s run: %w", run.way.mode, run.way.fanout, err)
		}
		*run.out = r
	}
	return res, nil
}

// fanoutWayRun measures one way's checkout, again when a stall of this
// process decided a try (up to maxTries).
func fanoutWayRun(ctx context.Context, cfg FanoutConfig, way fanoutWay, log *slog.Logger) (FanoutRun, error) {
	r, again, stalled, err := untilUndisturbed(func() (FanoutRun, string, error) { return fanoutOnce(ctx, cfg, way, log) })
	if err != nil {
		return FanoutRun{}, err
	}
	r.MeasuredAgain, r.Disturbed = again, stalled
	return r, nil
}

// fanoutOnce measures one checkout on a fresh shop run way. It says why,
// when a stall of this process rather than the budget decided it.
func fanoutOnce(ctx context.Context, cfg FanoutConfig, way fanoutWay, log *slog.Logger) (FanoutRun, string, error) {
	sc := shop.EphemeralConfig()
	sc.Shared.Mode, sc.Shared.Margin, sc.Shared.Floor = way.mode, cfg.Margin, cfg.Floor
	// The exercise is about timeouts and the fan-out alone: one attempt
	// per hop, and the fan-out this way's.
	off, fanout := mode.RetriesOff, way.fanout
	sc.Shared.Overrides = mode.Overrides{Retries: &off, Fanout: &fanout}
	sc.Shared.DrainTimeout = 100 * time.Millisecond
	sc.Orders.CatalogCap, sc.Orders.FraudCap = cfg.CatalogCap, cfg.FraudCap
	sc.Orders.PaymentsCap, sc.Orders.ShippingCap = cfg.PaymentsCap, cfg.ShippingCap
	s, err := shop.Start(ctx, sc, log)
	if err != nil {
		return FanoutRun{}, "", err
	}
	defer s.Stop()

	name := fmt.Sprintf("fanout-%s-%s", way.mode, way.fanout)
	client := &http.Client{Timeout: cfg.Deadline + time.Minute}
	if _, err := arrange(ctx, client, s, name+"-warm-up", map[string]faults.Set{
		"catalog":  {sim.CatalogReserveStock: {Latency: cfg.CatalogLatency}},
		"payments": {sim.PaymentsScreenOrder: {Latency: cfg.FraudLatency}, sim.PaymentsCreateCharge: {Latency: cfg.PaymentsLatency}},
		"shipping": {sim.ShippingCreateShipment: {Latency: cfg.ShippingLatency}},
	}); err != nil {
		return FanoutRun{}, "", err
	}

	watch := watchStalls()
	start := time.Now()
	c, err := measureCheckout(ctx, client, s.GatewayURL(), name, cfg.Deadline,
		`{"customer":"exercise2","items":[{"sku":"tea-sencha","qty":1}],"address":"2 Fan-out Row"}`)
	stalls := watch.stop()
	if err != nil {
		return FanoutRun{}, "", err
	}
	out := FanoutRun{
		DeadlineMS: cfg.Deadline.Milliseconds(), TotalMS: c.took.Round(time.Millisecond).Milliseconds(),
		Verdict: "WITHIN", Status: c.status,
	}
	if c.took > cfg.Deadline {
		out.Verdict = "OVER"
	}
	// Orders reports its hops in its answer; when that answer came too
	// late for the gateway, the edge never saw them.
	_, reported := findHop(c.hops, fanoutChain[0])
	for _, name := range fanoutChain {
		h := FanoutHop{Name: name, Outcome: "skipped"}
		if !reported {
			h.Outcome = "unknown"
		}
		if got, ok := findHop(c.hops, name); ok {
			h.Outcome = lessonOutcome(got.Outcome)
			h.StartMS = got.Start.Round(time.Millisecond).Milliseconds()
			if h.Outcome != "skipped" {
				h.TimeoutMS = got.Timeout.Round(time.Millisecond).Milliseconds()
				h.TookMS = got.Took.Round(time.Millisecond).Milliseconds()
			}
		}
		out.Hops = append(out.Hops, h)
	}

	for _, h := range out.Hops {
		if why := hopStalled(h.Name, cfg.hopWork(h.Name), time.Duration(h.TimeoutMS)*time.Millisecond, h.Outcome); why != "" {
			return out, why, nil
		}
	}
	if way.mode == mode.Budgeted {
		return out, answerStalled(out.Verdict == "OVER" || !reported, stalls, start.Add(cfg.Deadline), cfg.Margin), nil
	}
	return out, "", nil
}

// hopWork is how long a hop works in this run.
func (c FanoutConfig) hopWork(name string) time.Duration {
	switch name {
	case "catalog":
		return c.CatalogLatency
	case "fraud":
		return c.FraudLatency
	case "payments":
		return c.PaymentsLatency
	}
	return c.ShippingLatency
}

// hopCap is a hop's own timeout.
func (c FanoutConfig) hopCap(name string) time.Duration {
	switch name {
	case "catalog":
		return c.CatalogCap
	case "fraud":
		return c.FraudCap
	case "payments":
		return c.PaymentsCap
	}
	return c.ShippingCap
}

// WriteJSON writes r as indented JSON.
func (r FanoutResult) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteTable writes the exercise's three tables from the measured runs.
func (r FanoutResult) WriteTable(w io.Writer, cfg FanoutConfig) {
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	fmt.Fprintf(w, "Client deadline for checkout = %d ms\n", ms(cfg.Deadline))
	fmt.Fprintf(w, "catalog %d ms and fraud %d ms need nothing from each other; payments %d ms needs both; shipping %d ms.\n",
		ms(cfg.CatalogLatency), ms(cfg.FraudLatency), ms(cfg.PaymentsLatency), ms(cfg.ShippingLatency))
	fmt.Fprintf(w, "In series the work sums to %d ms; with catalog and fraud at once, max(%d, %d) + %d + %d = %d ms.\n\n",
		ms(cfg.CatalogLatency+cfg.FraudLatency+cfg.PaymentsLatency+cfg.ShippingLatency),
		ms(cfg.CatalogLatency), ms(cfg.FraudLatency), ms(cfg.PaymentsLatency), ms(cfg.ShippingLatency),
		ms(max(cfg.CatalogLatency, cfg.FraudLatency)+cfg.PaymentsLatency+cfg.ShippingLatency))
	writeFanoutRun(w, "NAIVE SEQUENTIAL: one call after the other, each with its own local timeout", "local_timeout", r.NaiveSequential, cfg, false)
	fmt.Fprintln(w)
	writeFanoutRun(w, fmt.Sprintf("BUDGETED SEQUENTIAL (fanout=sequential): one after the other, each gets min(cap, remaining − %d ms)", ms(cfg.Margin)),
		"timeout", r.BudgetedSequential, cfg, true)
	fmt.Fprintln(w)
	writeFanoutRun(w, "BUDGETED PARALLEL: catalog and fraud at once, sharing one remaining budget; the pair costs the slower",
		"timeout", r.BudgetedParallel, cfg, true)
	fmt.Fprintln(w, "\nstart is each call's start at orders, from the request's arrival there.")
	fmt.Fprintln(w, "Every figure above was measured on real services over loopback gRPC and HTTP.")
}

func writeFanoutRun(w io.Writer, title, timeoutLabel string, run FanoutRun, cfg FanoutConfig, budgeted bool) {
	fmt.Fprintln(w, title)
	for _, h := range run.Hops {
		switch h.Outcome {
		case "skipped":
			fmt.Fprintf(w, "  %-9s not called  (skipped)\n", h.Name)
			continue
		case "unknown":
			fmt.Fprintf(w, "  %-9s not reported: orders answered after the gateway had given up\n", h.Name)
			continue
		}
		note := ""
		if budgeted && h.TimeoutMS > 0 && time.Duration(h.TimeoutMS)*time.Millisecond < cfg.hopCap(h.Name) {
			note = "\n            " + clipSum(cfg.hopCap(h.Name), cfg.Deadline, cfg.Margin, h.StartMS, h.TimeoutMS) + "  <- clipped by the budget"
		}
		fmt.Fprintf(w, "  %-9s %s=%5d ms  start=%5d ms  took %5d ms (%s)%s\n",
			h.Name, timeoutLabel, h.TimeoutMS, h.StartMS, h.TookMS, h.Outcome, note)
	}
	verdict := "WITHIN"
	if run.Verdict == "OVER" {
		verdict = "OVER (past the client's deadline)"
	}
	fmt.Fprintf(w, "  total elapsed = %d ms vs deadline %d ms  -> %s   [HTTP %d]\n", run.TotalMS, run.DeadlineMS, verdict, run.Status)
	for i, why := range run.MeasuredAgain {
		fmt.Fprintf(w, "  (try %d was measured again: %s)\n", i+1, why)
	}
	if run.Disturbed != "" {
		fmt.Fprintf(w, "  (all %d tries ended so; this one: %s)\n", maxTries, run.Disturbed)
	}
}
