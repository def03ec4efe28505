package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// testLesson7 is the lesson's run with a margin wide enough for the
// answer's way back under the race detector, which slows every hop by
// milliseconds; the default 3 ms is sized for a normal build.
func testLesson7() Lesson7Config {
	cfg := DefaultLesson7()
	cfg.Margin = 10 * time.Millisecond
	return cfg
}

func TestLesson7ReplaysTheLesson(t *testing.T) {
	cfg := testLesson7()
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
	for _, m := range []ModeResult{n, b} {
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
	// What is left for shipping is 1200 − 280 − 760 − margins and hop
	// overheads: clipped well below the cap, and close to the lesson's 160.
	if s := b.Hops[2]; !s.ClippedByBudget || s.TimeoutMS >= 300 || s.TimeoutMS < 100 || s.TimeoutMS > 160 {
		t.Errorf("budgeted shipping = %+v, want clipped by the budget to 100..160 ms", s)
	}

	var table bytes.Buffer
	res.WriteTable(&table, cfg)
	for _, want := range []string{"NAIVE", "BUDGETED", "OVER", "WITHIN", "clipped by the budget", FraudLeftOut} {
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
	for _, m := range []ModeResult{n, b} {
		var w []int64
		for _, h := range m.Hops {
			w = append(w, m.DeadlineMS-(h.ElapsedMS-h.TookMS))
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
	cfg := testLesson7()
	cfg.Deadline = 1000 * time.Millisecond
	cfg.Floor = 50 * time.Millisecond
	cfg.CatalogLatency = 250 * time.Millisecond
	cfg.PaymentsLatency = 700 * time.Millisecond
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
	cfg := testLesson7()
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
	m := ModeResult{DeadlineMS: 1000, TotalMS: 996, Verdict: "WITHIN", HTTPStatus: 202,
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
