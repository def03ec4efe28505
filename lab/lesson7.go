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
	var c Lesson7Config
	setting.Default(c.Settings()...)
	return c
}

// Settings declares the run's settings, each once: its flag, default,
// range and help.
func (c *Lesson7Config) Settings() []setting.Setting {
	return append(chainSettings(&c.Deadline, &c.Margin, &c.Floor, 1200*time.Millisecond),
		hopCap(&c.CatalogCap, "catalog", "catalog's", 300*time.Millisecond),
		hopCap(&c.PaymentsCap, "payments", "payments'", 800*time.Millisecond),
		hopCap(&c.ShippingCap, "shipping", "shipping's", 300*time.Millisecond),
		hopWork(&c.CatalogLatency, "catalog", "catalog", 280*time.Millisecond, ""),
		hopWork(&c.PaymentsLatency, "payments", "payments", 760*time.Millisecond, ""),
		hopWork(&c.ShippingLatency, "shipping", "shipping", 5*time.Second, " (degraded: far past its cap)"),
	)
}

// Validate reports a configuration the lab cannot run.
func (c Lesson7Config) Validate() error { return setting.Check(c.Settings()...) }

// replay is lesson 7 as the replay engine runs it: the same chain of three
// calls, naive and then budgeted.
func (c Lesson7Config) replay() replay {
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	return replay{
		name: "lesson7", deadline: c.Deadline, margin: c.Margin, floor: c.Floor,
		// A budgeted answer keeps a margin for its way back.
		spare: c.Margin,
		ways: []way{
			{mode: mode.Naive,
				heading: "NAIVE: every hop uses its own cap, blind to the deadline",
				title:   "naive: every hop uses its own cap, blind to the deadline"},
			{mode: mode.Budgeted,
				heading: fmt.Sprintf("BUDGETED: the deadline is propagated; each hop gets min(cap, remaining − %d ms margin)", ms(c.Margin)),
				title: fmt.Sprintf("budgeted: each hop gets min(cap, budget left − %s ms margin), and none starts below the %s ms floor",
					report.FormatMS(ms(c.Margin)), report.FormatMS(ms(c.Floor)))},
		},
		hops: []hopSpec{
			{"catalog", c.CatalogCap, c.CatalogLatency},
			{"payments", c.PaymentsCap, c.PaymentsLatency},
			{"shipping", c.ShippingCap, c.ShippingLatency},
		},
		// The chain has three hops: the fraud screen, which orders asks
		// before the charge, takes no time here (FraudLeftOut; lab
		// fanout is the replay that gives it some).
		faults: map[string]faults.Set{
			"catalog":  {sim.CatalogReserveStock: {Latency: c.CatalogLatency}},
			"payments": {sim.PaymentsCreateCharge: {Latency: c.PaymentsLatency}, sim.PaymentsScreenOrder: {}},
			"shipping": {sim.ShippingCreateShipment: {Latency: c.ShippingLatency}},
		},
		body: `{"customer":"lesson7","items":[{"sku":"tea-sencha","qty":1}],"address":"7 Budget Lane"}`,
	}
}

// Lesson7Result is the lab's two runs.
type Lesson7Result struct {
	Naive    ReplayRun `json:"naive"`
	Budgeted ReplayRun `json:"budgeted"`
}

// runs are the result's runs in the order of the replay's ways.
func (r Lesson7Result) runs() []ReplayRun { return []ReplayRun{r.Naive, r.Budgeted} }

// Lesson7 starts the shop once per mode, makes lesson 7's hops as slow as
// cfg says, and measures one checkout in each.
func Lesson7(ctx context.Context, cfg Lesson7Config, log *slog.Logger) (Lesson7Result, error) {
	var r Lesson7Result
	err := measureLesson(ctx, cfg, log, &r.Naive, &r.Budgeted)
	return r, err
}

// FraudLeftOut is what the lesson 7 and waterfall tables say of the
// fraud screen they leave out.
const FraudLeftOut = "The fraud screen, which orders runs before the charge, takes no time in this replay and is left out of the table (mercado lab fanout shows it)."

// WriteJSON writes r as indented JSON.
func (r Lesson7Result) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteTable writes the lesson's two tables from the measured runs.
func (r Lesson7Result) WriteTable(w io.Writer, cfg Lesson7Config) {
	caps := cfg.CatalogCap + cfg.PaymentsCap + cfg.ShippingCap
	cfg.replay().writeTable(w, r.runs(),
		[]string{fmt.Sprintf("Sum of caps                  = %d ms  (the worst case when every hop uses its own)", caps.Milliseconds())},
		[]string{measuredAbove, FraudLeftOut})
}
