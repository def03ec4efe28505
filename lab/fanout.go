package lab

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/setting"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/loadtest/report"
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
	var c FanoutConfig
	setting.Default(c.Settings()...)
	return c
}

// Settings declares the run's settings, each once: its flag, default,
// range and help.
func (c *FanoutConfig) Settings() []setting.Setting {
	return append(chainSettings(&c.Deadline, &c.Margin, &c.Floor, 900*time.Millisecond),
		hopCap(&c.CatalogCap, "catalog", "catalog's", 300*time.Millisecond),
		hopCap(&c.FraudCap, "fraud", "the fraud screen's", 400*time.Millisecond),
		hopCap(&c.PaymentsCap, "payments", "payments'", 800*time.Millisecond),
		hopCap(&c.ShippingCap, "shipping", "shipping's", 300*time.Millisecond),
		hopWork(&c.CatalogLatency, "catalog", "catalog", 250*time.Millisecond, ""),
		hopWork(&c.FraudLatency, "fraud", "the fraud screen", 300*time.Millisecond, ""),
		hopWork(&c.PaymentsLatency, "payments", "payments", 500*time.Millisecond, ""),
		hopWork(&c.ShippingLatency, "shipping", "shipping", 0, ""),
	)
}

// Validate reports a configuration the lab cannot run.
func (c FanoutConfig) Validate() error { return setting.Check(c.Settings()...) }

// replay is the exercise as the replay engine runs it: catalog ∥ fraud,
// then payments, then shipping, run three ways.
func (c FanoutConfig) replay() replay {
	margin := c.Margin.Milliseconds()
	return replay{
		name: "fanout", deadline: c.Deadline, margin: c.Margin, floor: c.Floor,
		// A budgeted answer keeps a margin for its way back.
		spare: c.Margin,
		// The naive mode calls one after the other anyway; the budgeted
		// one is run both ways, so that only the fan-out differs.
		ways: []way{
			{mode: mode.Naive, fanout: mode.FanoutSequential,
				heading: "NAIVE SEQUENTIAL: one call after the other, each with its own cap",
				title:   "naive, in series: each call with its own cap"},
			{mode: mode.Budgeted, fanout: mode.FanoutSequential,
				heading: fmt.Sprintf("BUDGETED SEQUENTIAL (fanout=sequential): one after the other, each gets min(cap, remaining − %d ms)", margin),
				title:   fmt.Sprintf("budgeted, in series: each call gets min(cap, budget left − %s ms)", report.FormatMS(margin))},
			{mode: mode.Budgeted, fanout: mode.FanoutParallel,
				heading: "BUDGETED PARALLEL: catalog and fraud at once, sharing one remaining budget; the pair costs the slower",
				title:   "budgeted, in parallel: catalog and fraud at once, sharing one budget"},
		},
		hops: []hopSpec{
			{"catalog", c.CatalogCap, c.CatalogLatency},
			{"fraud", c.FraudCap, c.FraudLatency},
			{"payments", c.PaymentsCap, c.PaymentsLatency},
			{"shipping", c.ShippingCap, c.ShippingLatency},
		},
		faults: map[string]faults.Set{
			"catalog":  {sim.CatalogReserveStock: {Latency: c.CatalogLatency}},
			"payments": {sim.PaymentsScreenOrder: {Latency: c.FraudLatency}, sim.PaymentsCreateCharge: {Latency: c.PaymentsLatency}},
			"shipping": {sim.ShippingCreateShipment: {Latency: c.ShippingLatency}},
		},
		body: `{"customer":"exercise2","items":[{"sku":"tea-sencha","qty":1}],"address":"2 Fan-out Row"}`,
		// In parallel, catalog and fraud start together.
		showStart: true,
	}
}

// FanoutResult is the exercise measured three ways.
type FanoutResult struct {
	NaiveSequential    ReplayRun `json:"naive_sequential"`
	BudgetedSequential ReplayRun `json:"budgeted_sequential"`
	BudgetedParallel   ReplayRun `json:"budgeted_parallel"`
}

// runs are the result's runs in the order of the replay's ways.
func (r FanoutResult) runs() []ReplayRun {
	return []ReplayRun{r.NaiveSequential, r.BudgetedSequential, r.BudgetedParallel}
}

// Fanout starts the shop once per way — naive sequential, budgeted
// sequential (budgeted with fanout=sequential), budgeted parallel — makes
// the hops as slow as cfg says, and measures one checkout in each.
func Fanout(ctx context.Context, cfg FanoutConfig, log *slog.Logger) (FanoutResult, error) {
	var r FanoutResult
	err := measureLesson(ctx, cfg, log, &r.NaiveSequential, &r.BudgetedSequential, &r.BudgetedParallel)
	return r, err
}

// WriteJSON writes r as indented JSON.
func (r FanoutResult) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteTable writes the exercise's three tables from the measured runs.
func (r FanoutResult) WriteTable(w io.Writer, cfg FanoutConfig) {
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	cfg.replay().writeTable(w, r.runs(), []string{
		fmt.Sprintf("catalog %d ms and fraud %d ms need nothing from each other; payments %d ms needs both; shipping %d ms.",
			ms(cfg.CatalogLatency), ms(cfg.FraudLatency), ms(cfg.PaymentsLatency), ms(cfg.ShippingLatency)),
		fmt.Sprintf("In series the work sums to %d ms; with catalog and fraud at once, max(%d, %d) + %d + %d = %d ms.",
			ms(cfg.CatalogLatency+cfg.FraudLatency+cfg.PaymentsLatency+cfg.ShippingLatency),
			ms(cfg.CatalogLatency), ms(cfg.FraudLatency), ms(cfg.PaymentsLatency), ms(cfg.ShippingLatency),
			ms(max(cfg.CatalogLatency, cfg.FraudLatency)+cfg.PaymentsLatency+cfg.ShippingLatency)),
	}, []string{"start is each call's start at orders, from the request's arrival there.", measuredAbove})
}
