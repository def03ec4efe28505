package lab

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestIsolation runs Drill 76 scaled down — a pool of 20 instead of 200,
// a few seconds instead of fifteen — and checks the lesson's shape: the
// naive shared pool fills and browsing suffers, while budgeted bulkheads
// keep browsing green, bound checkouts by the deadline, and open a breaker.
func TestIsolation(t *testing.T) {
	cfg := IsolationConfig{
		CheckoutRate: 30, BrowseRate: 10, Duration: 4 * time.Second,
		Deadline: 500 * time.Millisecond, Hang: 2 * time.Second, BreakerOpen: 2 * time.Second, Workers: 20,
	}
	var modes []string
	res, err := Isolation(context.Background(), cfg, slog.New(slog.DiscardHandler), func(m string, _, _ time.Duration) {
		if len(modes) == 0 || modes[len(modes)-1] != m {
			modes = append(modes, m)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	n, b := res.Naive, res.Budgeted
	if strings.Join(modes, ",") != "naive,budgeted" {
		t.Errorf("progress reported modes %v", modes)
	}
	if b.BrowseSuccessRatio < 0.95 {
		t.Errorf("budgeted browse success %.2f, want >= 0.95", b.BrowseSuccessRatio)
	}
	if n.BrowseSuccessRatio >= b.BrowseSuccessRatio {
		t.Errorf("naive browse success %.2f is not below budgeted %.2f", n.BrowseSuccessRatio, b.BrowseSuccessRatio)
	}
	if n.PeakPoolInFlight["gateway/shared"] < cfg.Workers {
		t.Errorf("naive gateway pool peaked at %d, want it full (%d)", n.PeakPoolInFlight["gateway/shared"], cfg.Workers)
	}
	// The client hangs up at the deadline plus its patience; budgeted
	// checkouts end by the deadline, with generous room for a busy machine.
	if limit := float64(cfg.Deadline.Milliseconds()) + 400; b.CheckoutMaxMS > limit {
		t.Errorf("budgeted checkout max %.0f ms, want <= %.0f", b.CheckoutMaxMS, limit)
	}
	if n.CheckoutP99MS <= float64(cfg.Deadline.Milliseconds()) {
		t.Errorf("naive checkout p99 %.0f ms, want above the %v deadline", n.CheckoutP99MS, cfg.Deadline)
	}
	if b.BreakerOpens < 1 {
		t.Error("no breaker opened in budgeted mode")
	}
	if b.Skipped["breaker_open"] == 0 {
		t.Errorf("skipped = %v, want breaker_open counted", b.Skipped)
	}
	if n.Amplification <= b.Amplification {
		t.Errorf("naive amplification %.2f is not above budgeted %.2f", n.Amplification, b.Amplification)
	}

	var table, js bytes.Buffer
	res.WriteTable(&table)
	if !strings.Contains(table.String(), "browse p99") {
		t.Errorf("table:\n%s", table.String())
	}
	if err := res.WriteJSON(&js); err != nil || !strings.Contains(js.String(), `"browse_success_ratio"`) {
		t.Errorf("JSON: %v\n%s", err, js.String())
	}
}
