package lab

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestWaterfall replays the 800 ms create-order: payment is clipped below
// its 400 ms cap by what is left, times out, the client gets 202
// processing within the budget, and the order settles afterwards.
func TestWaterfall(t *testing.T) {
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
	if res.FinalOrderStatus != "confirmed" {
		t.Errorf("final order status %q, want confirmed (the slow charge went through)", res.FinalOrderStatus)
	}
	var out bytes.Buffer
	res.WriteTable(&out, cfg)
	if !strings.Contains(out.String(), "min(400,") {
		t.Errorf("table:\n%s", out.String())
	}
}
