package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestLesson7ReplaysTheLesson(t *testing.T) {
	t.Parallel()
	cfg := DefaultLesson7()
	res, err := Lesson7(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	n, b := res.Naive, res.Budgeted

	// Naive: the hops sleep 280 + 760 and shipping waits its full 300 ms
	// cap, so the total cannot be below 1340 ms: over the deadline.
	if n.TotalMS < 1340 || n.Verdict != "OVER" {
		t.Errorf("naive total %d ms, verdict %s; want >= 1340 and OVER", n.TotalMS, n.Verdict)
	}
	// Budgeted: the answer comes before the client gives up.
	if b.Verdict != "WITHIN" || b.TotalMS > cfg.Deadline.Milliseconds() {
		t.Errorf("budgeted total %d ms, verdict %s; want within %v", b.TotalMS, b.Verdict, cfg.Deadline)
	}
	for name, m := range map[string]ReplayRun{"naive": n, "budgeted": b} {
		predictionHolds(t, name, m.Predicted, m.TotalMS, m.DeadlineMS, m.Verdict)
	}
	if !n.Predicted.CutShort || b.Predicted.CutShort {
		t.Errorf("naive predicted %+v, budgeted %+v: want naive's shipping cut at its cap, budgeted's deferred", n.Predicted, b.Predicted)
	}
	for _, m := range []ReplayRun{n, b} {
		if len(m.Hops) != 3 {
			t.Fatalf("hops = %+v, want catalog, payments, shipping", m.Hops)
		}
		for _, h := range m.Hops[:2] {
			if h.Outcome != "ok" {
				t.Errorf("%s outcome %q, want ok", h.Name, h.Outcome)
			}
		}
		if m.Hops[2].Outcome != "timeout" {
			t.Errorf("shipping outcome %q, want timeout", m.Hops[2].Outcome)
		}
	}
	if s := n.Hops[2]; s.TimeoutMS != 300 || s.ClippedByBudget {
		t.Errorf("naive shipping = %+v, want its own 300 ms cap", s)
	}
	// What is left for shipping is 1200 − 280 − 760 − two margins, less the
	// hops' overheads (more on a busy machine): clipped below the cap, and
	// never below the floor, under which the call would not be made.
	most := cfg.Deadline - cfg.CatalogLatency - cfg.PaymentsLatency - 2*cfg.Margin
	if s := b.Hops[2]; !s.ClippedByBudget || s.TimeoutMS > most.Milliseconds() || s.TimeoutMS < cfg.Floor.Milliseconds() {
		t.Errorf("budgeted shipping = %+v, want clipped by the budget to %v..%v", s, cfg.Floor, most)
	}

	var table bytes.Buffer
	res.WriteTable(&table, cfg)
	// The clipped call's timeout is written out as the lesson's sum, with
	// the margins in it.
	sum := fmt.Sprintf("min(300, 1200 − %d before it − ", b.Hops[2].StartMS)
	margins := fmt.Sprintf("2 × %d margin) = %d ms", cfg.Margin.Milliseconds(), b.Hops[2].TimeoutMS)
	for _, want := range []string{"NAIVE", "BUDGETED", "OVER", "WITHIN", "clipped by the budget", sum, margins, FraudLeftOut} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	// The page draws each mode's hops as the budget left when each began:
	// the deadline less the hops before, shrinking down the chain.
	var page bytes.Buffer
	if err := res.WriteHTML(&page, cfg); err != nil {
		t.Fatal(err)
	}
	_, left := budgetDiagrams(t, page.Bytes())
	var want [][]int64
	for _, m := range []ReplayRun{n, b} {
		var w []int64
		for _, h := range m.Hops {
			w = append(w, m.DeadlineMS-h.StartMS)
		}
		want = append(want, w)
	}
	checkShrinking(t, left, want)

	var js bytes.Buffer
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Lesson7Result
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Naive.TotalMS != n.TotalMS {
		t.Errorf("JSON round trip: %v, %+v", err, back.Naive)
	}
}

// TestLesson7SkipsBelowTheFloor is the lesson's "don't head to the
// airport": payments leaves less than the floor for shipping, so budgeted
// orders does not call shipping at all, while naive calls it blind.
func TestLesson7SkipsBelowTheFloor(t *testing.T) {
	t.Parallel()
	cfg := DefaultLesson7()
	// Payments gets about 735 ms and works 600: 135 ms to spare on a busy
	// machine under the race detector (with 700 ms of work, 35 ms were not
	// always enough). What is then left for shipping, about 135 ms less
	// the margin, is well below the 200 ms floor.
	cfg.Deadline = 1000 * time.Millisecond
	cfg.Floor = 200 * time.Millisecond
	cfg.CatalogLatency = 250 * time.Millisecond
	cfg.PaymentsLatency = 600 * time.Millisecond
	res, err := Lesson7(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	b := res.Budgeted
	if got := b.Hops[1].Outcome; got != "ok" {
		t.Errorf("budgeted payments outcome %q, want ok", got)
	}
	// Not called, so no timeout was applied: 0, not shipping's cap.
	if got := b.Hops[2]; got.Outcome != "skipped" || got.Note != SkipInsufficientBudget || got.TookMS != 0 || got.TimeoutMS != 0 {
		t.Errorf("budgeted shipping = %+v, want skipped for insufficient budget, no timeout", got)
	}
	if got := res.Naive.Hops[2].Outcome; got != "timeout" {
		t.Errorf("naive shipping outcome %q, want timeout (called blind)", got)
	}
}

// TestLesson7StopsAfterAFailedHop: when payments is cut by the budget, the
// chain stops and shipping is never reached.
func TestLesson7StopsAfterAFailedHop(t *testing.T) {
	t.Parallel()
	cfg := DefaultLesson7()
	cfg.Deadline = 1000 * time.Millisecond
	cfg.CatalogLatency = 250 * time.Millisecond
	cfg.PaymentsLatency = 900 * time.Millisecond
	cfg.PaymentsCap = 950 * time.Millisecond
	res, err := Lesson7(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	b := res.Budgeted
	if got := b.Hops[1]; got.Outcome != "timeout" || !got.ClippedByBudget {
		t.Errorf("budgeted payments = %+v, want a timeout clipped by the budget", got)
	}
	if got := b.Hops[2]; got.Outcome != "skipped" || got.Note != SkipEarlierHopFailed {
		t.Errorf("budgeted shipping = %+v, want skipped after payments failed", got)
	}
	if b.Verdict != "WITHIN" {
		t.Errorf("budgeted verdict %s (total %d ms), want WITHIN", b.Verdict, b.TotalMS)
	}
}

func TestLesson7ConfigValidate(t *testing.T) {
	cfg := DefaultLesson7()
	cfg.Deadline = 0
	if err := cfg.Validate(); err == nil {
		t.Error("a zero deadline was accepted")
	}
	cfg = DefaultLesson7()
	cfg.Margin = -time.Millisecond
	if err := cfg.Validate(); err == nil {
		t.Error("a negative margin was accepted")
	}
}

// TestLesson7TableSaysWhatWasMeasuredAgain: a try that a stall decided is
// not shown as the lesson's outcome, but it is not hidden either.
func TestLesson7TableSaysWhatWasMeasuredAgain(t *testing.T) {
	m := ReplayRun{DeadlineMS: 1000, TotalMS: 996, Verdict: "WITHIN", HTTPStatus: 202,
		MeasuredAgain: []string{"its answer missed the deadline although it had 3 ms to spare"}}
	var b bytes.Buffer
	Lesson7Result{Naive: m, Budgeted: m}.WriteTable(&b, DefaultLesson7())
	if !strings.Contains(b.String(), "(try 1 was measured again: its answer missed the deadline although it had 3 ms to spare)") {
		t.Errorf("table:\n%s", b.String())
	}
	m.MeasuredAgain, m.Disturbed = nil, "catalog works 280 ms, yet timed out at its 300 ms"
	b.Reset()
	Lesson7Result{Naive: m, Budgeted: m}.WriteTable(&b, DefaultLesson7())
	if !strings.Contains(b.String(), "(all 5 tries ended so; this one: catalog works 280 ms") {
		t.Errorf("table:\n%s", b.String())
	}
}

// The sum a replay writes out for a clipped call adds up to the timeout
// the call got: the deadline less what came before, the way there and
// the two margins.
func TestClipSumAddsUp(t *testing.T) {
	for _, tc := range []struct {
		before, timeout int64
		want            string
	}{
		{1048, 120, "min(300, 1200 − 1048 before it − 2 on the way − 2 × 15 margin) = 120 ms"},
		{1040, 130, "min(300, 1200 − 1040 before it − 0 on the way − 2 × 15 margin) = 130 ms"},
		// Rounding to whole milliseconds can leave the way there below
		// zero; it shows as none.
		{1050, 121, "min(300, 1200 − 1050 before it − 0 on the way − 2 × 15 margin) = 121 ms"},
	} {
		if got := clipSum(300*time.Millisecond, 1200*time.Millisecond, 15*time.Millisecond, tc.before, tc.timeout); got != tc.want {
			t.Errorf("clipSum(before %d, timeout %d) = %q, want %q", tc.before, tc.timeout, got, tc.want)
		}
	}
}
