package lab

import (
	"bytes"
	"context"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestWaterfall replays the 800 ms create-order: payment is clipped below
// its 400 ms cap by what is left, times out, the client gets 202
// processing within the budget, and the order settles afterwards.
func TestWaterfall(t *testing.T) {
	t.Parallel()
	cfg := DefaultWaterfall()
	// The lesson's final write takes 75 ms of the 80 ms orders keeps for
	// it: 5 ms of slack, which a race-instrumented build on a busy
	// machine can spend. The test keeps more; the lab keeps the lesson's.
	cfg.Cleanup = 40 * time.Millisecond
	res, err := Waterfall(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if res.HTTPStatus != 202 || res.Status != "processing" || res.OrderID == "" {
		t.Fatalf("answer = %d %q (order %q), want 202 processing", res.HTTPStatus, res.Status, res.OrderID)
	}
	verdict := "WITHIN"
	if res.TotalMS > res.BudgetMS {
		verdict = "OVER"
	}
	predictionHolds(t, "waterfall", res.Predicted, res.TotalMS, res.BudgetMS, verdict)
	if !res.Predicted.CutShort {
		t.Errorf("predicted %+v: want the charge cut at its timeout", res.Predicted)
	}
	// The gateway's 100 ms and catalog's 290 ms are sleeps, so payment
	// cannot start before 390 ms; the answer must still come by the budget.
	if res.TotalMS < 390 || res.TotalMS > cfg.Budget.Milliseconds()+50 {
		t.Errorf("total %d ms, want within the %v budget", res.TotalMS, cfg.Budget)
	}
	if len(res.Steps) != 4 {
		t.Fatalf("steps = %+v", res.Steps)
	}
	pay := res.Steps[2]
	if pay.Name != "payments" || pay.Outcome != "timeout" || pay.TimeoutMS >= 400 || pay.TimeoutMS < 200 {
		t.Errorf("payment step = %+v, want a timeout clipped below its 400 ms cap", pay)
	}
	if cat := res.Steps[1]; cat.Outcome != "ok" || cat.TimeoutMS != 300 {
		t.Errorf("catalog step = %+v, want ok with its own 300 ms cap", cat)
	}
	if res.FinalOrderStatus != "confirmed" || res.SettledAfterMS <= 0 {
		t.Errorf("final order status %q after %d ms, want confirmed later (the slow charge went through)", res.FinalOrderStatus, res.SettledAfterMS)
	}
	// What the table says next is measured: the retry under the same key
	// got the same order back, the reconciler asked payments, and
	// payments took one charge.
	if res.ReplayHTTPStatus != 202 || res.ReplayOrderID != res.OrderID {
		t.Errorf("replay = %d %q, want 202 for order %q", res.ReplayHTTPStatus, res.ReplayOrderID, res.OrderID)
	}
	if res.ChargeLookups < 1 || res.ChargesTaken != 1 || res.DuplicateCharges != 0 {
		t.Errorf("charge lookups %d, charges %d, duplicates %d; want >= 1, 1, 0", res.ChargeLookups, res.ChargesTaken, res.DuplicateCharges)
	}
	var out bytes.Buffer
	res.WriteTable(&out, cfg)
	for _, want := range []string{"timed out at", "the key kept the first answer", "reconciler asked payments", "1 charge for this checkout (0 duplicates)", FraudLeftOut} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	// The page draws the steps as the budget left when each began.
	var page bytes.Buffer
	if err := res.WriteHTML(&page, cfg); err != nil {
		t.Fatal(err)
	}
	_, left := budgetDiagrams(t, page.Bytes())
	var want []int64
	for _, st := range res.Steps {
		want = append(want, res.BudgetMS-st.StartsAtMS)
	}
	checkShrinking(t, left, [][]int64{want})
	if !strings.Contains(page.String(), "reconciler asked payments") {
		t.Error("the page does not say what became of the order")
	}
}

// TestWaterfallTableTellsOnlyWhatHappened: every sentence under the table
// follows from the run's figures — no stored key or reconciliation is
// claimed for an answer that named no order, nor a reconciliation for an
// order confirmed in the answer; a step not called shows no timeout.
func TestWaterfallTableTellsOnlyWhatHappened(t *testing.T) {
	cfg := DefaultWaterfall()
	steps := func(catalog, payments WaterfallStep) []WaterfallStep {
		return []WaterfallStep{{Name: "gateway", TookMS: 100, Outcome: "ok"}, catalog, payments, {Name: "reserve", StartsAtMS: 400, TookMS: 75, Outcome: "ok"}}
	}
	for name, tc := range map[string]struct {
		res        WaterfallResult
		want, lack []string
		row        string // a row of the table, as a regular expression
	}{
		"504, no order": {
			res: WaterfallResult{BudgetMS: 800, TotalMS: 799, HTTPStatus: 504, Steps: []WaterfallStep{
				{Name: "gateway", TookMS: 100, Outcome: "ok"},
				{Name: "catalog", StartsAtMS: 100, CapMS: 300, Outcome: "not reported"},
				{Name: "payments", StartsAtMS: 100, CapMS: 400, Outcome: "not reported"},
				{Name: "reserve", StartsAtMS: 100, Outcome: "not reported"}}},
			want: []string{"HTTP 504 after 799 ms", "No order came back", "not reported", "By the time the lab ended"},
			lack: []string{"key", "reconcil", "settled"},
		},
		"201, confirmed in the answer": {
			res: WaterfallResult{BudgetMS: 800, TotalMS: 673, HTTPStatus: 201, Status: "confirmed", OrderID: "ord_1",
				Steps: steps(WaterfallStep{Name: "catalog", StartsAtMS: 100, CapMS: 300, RemainingMS: 620, TimeoutMS: 300, TookMS: 290, Outcome: "ok"},
					WaterfallStep{Name: "payments", StartsAtMS: 390, CapMS: 400, RemainingMS: 330, TimeoutMS: 325, TookMS: 200, Outcome: "ok"}),
				ReplayHTTPStatus: 201, ReplayOrderID: "ord_1", FinalOrderStatus: "confirmed", ChargesTaken: 1},
			want: []string{`HTTP 201 "confirmed" for order ord_1`, "nothing to reconcile", "1 charge for this checkout (0 duplicates)"},
			lack: []string{"reconciler asked", "after the answer"},
		},
		"payment skipped": {
			res: WaterfallResult{BudgetMS: 400, TotalMS: 390, HTTPStatus: 201, Status: "confirmed", OrderID: "ord_2",
				Steps: steps(WaterfallStep{Name: "catalog", StartsAtMS: 100, CapMS: 300, RemainingMS: 220, TimeoutMS: 216, TookMS: 210, Outcome: "ok"},
					WaterfallStep{Name: "payments", StartsAtMS: 310, CapMS: 400, RemainingMS: 10, Outcome: "skipped"}),
				ReplayHTTPStatus: 201, ReplayOrderID: "ord_2", FinalOrderStatus: "confirmed"},
			want: []string{"0 charges"},
			row:  `(?m)^payments +310 ms +400 +10 +- +not called: too little budget$`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			tc.res.WriteTable(&b, cfg)
			out := b.String()
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("table lacks %q:\n%s", w, out)
				}
			}
			for _, l := range tc.lack {
				if strings.Contains(out, l) {
					t.Errorf("table says %q:\n%s", l, out)
				}
			}
			if tc.row != "" && !regexp.MustCompile(tc.row).MatchString(out) {
				t.Errorf("table has no row %s:\n%s", tc.row, out)
			}
		})
	}
}
