package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestFanoutReplaysExercise2: in series the work sums past the deadline
// (naive: over it; budgeted: payments clipped to what is left), and with
// catalog and the fraud screen at once it costs the slower of the two
// plus payments, within the deadline. The hops' start offsets show the
// order: in series each starts where the previous ended; in parallel
// catalog and fraud start together and payments once the slower is done.
func TestFanoutReplaysExercise2(t *testing.T) {
	t.Parallel()
	cfg := DefaultFanout()
	res, err := Fanout(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ns, bs, bp := res.NaiveSequential, res.BudgetedSequential, res.BudgetedParallel
	chain := []string{"catalog", "fraud", "payments", "shipping"}
	for _, run := range []ReplayRun{ns, bs, bp} {
		if names := hopNamesOf(run); !slices.Equal(names, chain) {
			t.Fatalf("hops %q, want %q", names, chain)
		}
		if run.DeadlineMS != 900 {
			t.Errorf("deadline_ms %d, want 900", run.DeadlineMS)
		}
	}
	for name, run := range map[string]ReplayRun{"naive sequential": ns, "budgeted sequential": bs, "budgeted parallel": bp} {
		predictionHolds(t, name, run.Predicted, run.TotalMS, run.DeadlineMS, run.Verdict)
	}
	if ns.Predicted.TotalMS != 1050 || bp.Predicted.TotalMS != 800 {
		t.Errorf("predicted %d ms in series, %d at once; want 250 + 300 + 500 and max(250, 300) + 500", ns.Predicted.TotalMS, bp.Predicted.TotalMS)
	}
	hop := func(r ReplayRun, name string) ReplayHop { return r.Hops[slices.Index(chain, name)] }
	end := func(h ReplayHop) int64 { return h.StartMS + h.TookMS }

	// Naive sequential: 250 + 300 + 500, every call ok, one after the
	// other: the total cannot be below the sum, so it is over.
	if ns.Verdict != "OVER" || ns.TotalMS < 1050 || ns.TotalMS > 1300 {
		t.Errorf("naive sequential: total %d ms, %s; want 1050 ms or a little more, OVER", ns.TotalMS, ns.Verdict)
	}
	for _, name := range []string{"catalog", "fraud", "payments"} {
		if h := hop(ns, name); h.Outcome != "ok" || h.TimeoutMS != cfg.replay().hop(name).cap.Milliseconds() {
			t.Errorf("naive %s = %+v, want ok under its own cap", name, h)
		}
	}
	// Budgeted sequential: what is left after 550 ms of catalog and fraud
	// is less than payments' 500 ms; the budget clips it, and the answer
	// comes within the deadline.
	if p := hop(bs, "payments"); p.Outcome == "ok" || p.TimeoutMS >= cfg.PaymentsCap.Milliseconds() || p.TimeoutMS > 900-550 {
		t.Errorf("budgeted sequential payments = %+v, want clipped below %d ms by the budget, not ok", p, 900-550)
	}
	if bs.Verdict != "WITHIN" || bs.TotalMS > 930 {
		t.Errorf("budgeted sequential: total %d ms, %s; want within the deadline (≤ 930 ms)", bs.TotalMS, bs.Verdict)
	}
	// Naive and budgeted in series: the screen starts once the
	// reservation has ended, payments once the screen has.
	for _, r := range []ReplayRun{ns, bs} {
		if c, f, p := hop(r, "catalog"), hop(r, "fraud"), hop(r, "payments"); f.StartMS < end(c)-1 || p.StartMS < end(f)-1 {
			t.Errorf("in series: catalog %+v, fraud %+v, payments %+v; want each to start after the previous ended", c, f, p)
		}
	}
	// Budgeted parallel: max(250, 300) + 500 = 800, every call ok, 201.
	if bp.Verdict != "WITHIN" || bp.HTTPStatus != 201 || bp.TotalMS < 800 || bp.TotalMS > 900 {
		t.Errorf("budgeted parallel: total %d ms, %s, HTTP %d; want about 800 ms, WITHIN, 201", bp.TotalMS, bp.Verdict, bp.HTTPStatus)
	}
	c, f, p := hop(bp, "catalog"), hop(bp, "fraud"), hop(bp, "payments")
	if d := c.StartMS - f.StartMS; d < -10 || d > 10 {
		t.Errorf("parallel: catalog starts at %d ms, fraud at %d ms; want within 10 ms of each other", c.StartMS, f.StartMS)
	}
	if p.StartMS < max(end(c), end(f))-1 || p.StartMS >= end(c)+end(f)-c.StartMS-f.StartMS {
		t.Errorf("parallel: payments starts at %d ms; want once the slower branch ended (%d ms), not after their sum", p.StartMS, max(end(c), end(f)))
	}
	for _, h := range bp.Hops {
		if h.Outcome != "ok" {
			t.Errorf("parallel %s outcome %q, want ok", h.Name, h.Outcome)
		}
	}
	// The ratio that cannot flake: parallel saves about the shorter branch.
	if saved := ns.TotalMS - bp.TotalMS; saved < 200 {
		t.Errorf("parallel saved %d ms on naive sequential, want about catalog's 250", saved)
	}

	var table bytes.Buffer
	res.WriteTable(&table, cfg)
	for _, want := range []string{"NAIVE SEQUENTIAL", "BUDGETED SEQUENTIAL", "BUDGETED PARALLEL", "OVER", "WITHIN", "clipped by the budget", "start="} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	t.Logf("\n%s", table.String())

	// The page draws each way's calls as the budget left when each
	// began; in parallel, catalog and fraud start together.
	var page bytes.Buffer
	if err := res.WriteHTML(&page, cfg); err != nil {
		t.Fatal(err)
	}
	_, left := budgetDiagrams(t, page.Bytes())
	var want [][]int64
	for _, run := range []ReplayRun{ns, res.BudgetedSequential, bp} {
		var w []int64
		for _, h := range run.Hops {
			if h.Outcome != "unknown" && (h.Outcome != "skipped" || h.StartMS > 0) {
				w = append(w, run.DeadlineMS-h.StartMS)
			}
		}
		want = append(want, w)
	}
	checkShrinking(t, left, want, true, true, false)
}

// The JSON is exactly the runs, named as docs and scripts read them; each
// run and each hop has the same figures in every replay (ReplayRun,
// ReplayHop).
func TestReplayJSONShape(t *testing.T) {
	run := ReplayRun{DeadlineMS: 900, TotalMS: 805, Verdict: "WITHIN", HTTPStatus: 201,
		Hops: []ReplayHop{{Name: "catalog", StartMS: 0, TimeoutMS: 300, TookMS: 251, Outcome: "ok", ElapsedMS: 251}}}
	for _, tc := range []struct {
		res  interface{ WriteJSON(io.Writer) error }
		runs []string
	}{
		{FanoutResult{run, run, run}, []string{"budgeted_parallel", "budgeted_sequential", "naive_sequential"}},
		{Lesson7Result{run, run}, []string{"budgeted", "naive"}},
	} {
		var b bytes.Buffer
		if err := tc.res.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		var got map[string]map[string]any
		if err := json.Unmarshal(b.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if keys := sortedKeys(got); !slices.Equal(keys, tc.runs) {
			t.Errorf("top-level keys %q, want %q", keys, tc.runs)
		}
		r := got[tc.runs[0]]
		if keys := sortedKeys(r); !slices.Equal(keys, []string{"deadline_ms", "hops", "http_status", "predicted", "total_ms", "verdict"}) {
			t.Errorf("a run's keys %q", keys)
		}
		h := r["hops"].([]any)[0].(map[string]any)
		if keys := sortedKeys(h); !slices.Equal(keys, []string{"clipped_by_budget", "elapsed_ms", "name", "outcome", "start_ms", "timeout_ms", "took_ms"}) {
			t.Errorf("a hop's keys %q", keys)
		}
	}
}

func TestFanoutConfigValidate(t *testing.T) {
	if err := DefaultFanout().Validate(); err != nil {
		t.Errorf("the default: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*FanoutConfig)
		want   string
	}{
		{"no deadline", func(c *FanoutConfig) { c.Deadline = 0 }, "deadline"},
		{"no fraud cap", func(c *FanoutConfig) { c.FraudCap = 0 }, "fraud-cap"},
		{"negative fraud latency", func(c *FanoutConfig) { c.FraudLatency = -time.Millisecond }, "fraud-latency"},
		{"a latency over a minute", func(c *FanoutConfig) { c.PaymentsLatency = 2 * time.Minute }, "payments-latency"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultFanout()
			tc.change(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

func hopNamesOf(r ReplayRun) []string {
	var names []string
	for _, h := range r.Hops {
		names = append(names, h.Name)
	}
	return names
}

func sortedKeys[V any](m map[string]V) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
