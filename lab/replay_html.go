package lab

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/loadtest/report"
)

// The replays' HTML pages: each run's hops as the shrinking budget
// (report.BudgetPage draws them).

// answerText is an HTTP answer in words: "HTTP 201".
func answerText(status int) string { return "HTTP " + strconv.Itoa(status) }

// WriteHTML writes lesson 7's page: each mode's chain as the shrinking
// budget.
func (r Lesson7Result) WriteHTML(w io.Writer, cfg Lesson7Config) error {
	ms := func(d time.Duration) string { return report.FormatMS(d.Milliseconds()) }
	return report.WriteBudgetPage(w, report.BudgetPage{
		Title: "Lesson 7: the same chain, naive and budgeted",
		Intro: []string{
			fmt.Sprintf("The client gives the checkout %s ms. Catalog (own cap %s ms) takes %s ms, payments (cap %s ms) %s ms, and shipping (cap %s ms) is degraded: its carrier takes %s ms. The caps add up to %s ms, more than the deadline.",
				ms(cfg.Deadline), ms(cfg.CatalogCap), ms(cfg.CatalogLatency), ms(cfg.PaymentsCap), ms(cfg.PaymentsLatency),
				ms(cfg.ShippingCap), ms(cfg.ShippingLatency), ms(cfg.CatalogCap+cfg.PaymentsCap+cfg.ShippingCap)),
		},
		Runs:  cfg.replay().budgetRuns(r.runs()),
		Notes: []string{"Every figure on this page was measured on real services over loopback gRPC and HTTP (mercado lab lesson7).", FraudLeftOut},
	})
}

// WriteHTML writes the exercise's page: the three ways, each as the
// shrinking budget. Catalog and fraud start together in the parallel
// way, so their rows start with the same budget left.
func (r FanoutResult) WriteHTML(w io.Writer, cfg FanoutConfig) error {
	ms := func(d time.Duration) string { return report.FormatMS(d.Milliseconds()) }
	return report.WriteBudgetPage(w, report.BudgetPage{
		Title: "Lesson 7, exercise 2: in series or in parallel",
		Intro: []string{fmt.Sprintf("The client gives the checkout %s ms. Catalog takes %s ms and the fraud screen %s ms, and neither needs the other; payments takes %s ms and needs both; shipping takes %s ms.",
			ms(cfg.Deadline), ms(cfg.CatalogLatency), ms(cfg.FraudLatency), ms(cfg.PaymentsLatency), ms(cfg.ShippingLatency))},
		Runs:  cfg.replay().budgetRuns(r.runs()),
		Notes: []string{"Each hop starts at orders, counted from the request's arrival there. Every figure on this page was measured on real services over loopback gRPC and HTTP (mercado lab fanout)."},
	})
}

// budgetRuns draws each run, one way each, as the budget shrinking call
// by call: each call's row starts from the budget left when it began.
func (rp replay) budgetRuns(runs []ReplayRun) []report.BudgetRun {
	var out []report.BudgetRun
	for i, r := range runs {
		wy := rp.ways[i]
		run := report.BudgetRun{Title: wy.title, DeadlineMS: r.DeadlineMS, TotalMS: r.TotalMS, Verdict: r.Verdict, Answer: answerText(r.HTTPStatus)}
		// Only the budgeted mode has a floor below which it calls no one.
		if wy.mode == mode.Budgeted {
			run.FloorMS = rp.floor.Milliseconds()
		}
		for _, h := range r.Hops {
			if h.ClippedByBudget {
				run.Notes = append(run.Notes, fmt.Sprintf("%s's timeout: %s.", h.Name, rp.clip(h)))
			}
			bh := report.BudgetHop{Name: h.Name, StartMS: h.StartMS, TimeoutMS: h.TimeoutMS, TookMS: h.TookMS, Outcome: h.Outcome, Note: h.Note,
				Reached: h.Outcome != "unknown" && h.Note != SkipEarlierHopFailed, Called: h.Outcome != "skipped" && h.Outcome != "unknown",
				Clipped: h.ClippedByBudget}
			if h.Outcome == "skipped" {
				bh.Note = "not called: " + h.Note
			}
			run.Hops = append(run.Hops, bh)
		}
		run.Notes = append(run.Notes, "Budget predict, from the lesson's hops: answered at "+r.Predicted.summary()+".")
		run.Notes = append(run.Notes, measuredAgain(r.MeasuredAgain, r.Disturbed)...)
		out = append(out, run)
	}
	return out
}

// measuredAgain says why tries were measured again (see stalls.go).
func measuredAgain(again []string, disturbed string) []string {
	var out []string
	for i, why := range again {
		out = append(out, fmt.Sprintf("Try %d was measured again: %s.", i+1, why))
	}
	if disturbed != "" {
		out = append(out, fmt.Sprintf("All %d tries ended so; this one: %s.", maxTries, disturbed))
	}
	return out
}

// WriteHTML writes the waterfall's page: the create-order's steps as the
// shrinking budget, and what became of the order.
func (r WaterfallResult) WriteHTML(w io.Writer, cfg WaterfallConfig) error {
	var table strings.Builder
	r.WriteTable(&table, cfg)
	run := report.BudgetRun{Title: fmt.Sprintf("budgeted: orders gives each call min(own cap, budget left − %d ms reserve)", cfg.Reserve.Milliseconds()),
		DeadlineMS: r.BudgetMS, FloorMS: serve.DefaultFloor.Milliseconds(), TotalMS: r.TotalMS, Verdict: "WITHIN", Answer: answerText(r.HTTPStatus)}
	if r.Status != "" {
		run.Answer += " " + r.Status
	}
	if r.TotalMS > r.BudgetMS {
		run.Verdict = "OVER"
	}
	for _, st := range r.Steps {
		called := st.Outcome == "ok" || st.Outcome == "timeout" || st.Outcome == "error"
		bh := report.BudgetHop{Name: st.Name, StartMS: st.StartsAtMS, TimeoutMS: st.TimeoutMS, TookMS: st.TookMS, Outcome: st.Outcome,
			Reached: called || st.Outcome == "skipped", Called: called}
		switch {
		case st.Outcome == "skipped":
			bh.Note = "not called: too little budget"
		case !called:
			bh.Note = st.Outcome
		}
		bh.Clipped = bh.Called && st.TimeoutMS < st.CapMS
		run.Hops = append(run.Hops, bh)
	}
	run.Notes = append([]string{"Budget predict, from the lesson's steps: answered at " + r.Predicted.summary() + "."}, measuredAgain(r.MeasuredAgain, r.Disturbed)...)
	p := report.BudgetPage{
		Title: fmt.Sprintf("The %s ms create-order waterfall", report.FormatMS(r.BudgetMS)),
		Intro: []string{fmt.Sprintf("The gateway works %s ms first; orders keeps the last %s ms of the budget for its answer and calls inventory (catalog, cap %s ms, takes %s ms), then payment (cap %s ms, takes %s ms).",
			report.FormatMS(cfg.GatewayWork.Milliseconds()), report.FormatMS(cfg.Reserve.Milliseconds()), report.FormatMS(cfg.CatalogCap.Milliseconds()),
			report.FormatMS(cfg.CatalogLatency.Milliseconds()), report.FormatMS(cfg.PaymentsCap.Milliseconds()), report.FormatMS(cfg.PaymentsLatency.Milliseconds()))},
		Runs: []report.BudgetRun{run},
	}
	// What became of the order: the table's closing sentences, measured.
	_, after, _ := strings.Cut(table.String(), FraudLeftOut)
	p.Notes = append(p.Notes, strings.Join(strings.Fields(after), " "))
	p.Notes = append(p.Notes, FraudLeftOut, "Every figure on this page was measured on real services over loopback gRPC and HTTP (mercado lab waterfall).")
	return report.WriteBudgetPage(w, p)
}
