package lab

import (
	"fmt"
	"io"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
)

// The replays' tables: a line for each of orders' calls in each run, and
// the sum that set a call's timeout when the budget clipped it.

// measuredAbove says, under a replay's tables, that none of their figures
// was computed.
const measuredAbove = "Every figure above was measured on real services over loopback gRPC and HTTP."

// writeTable writes a replay's tables: the client's deadline and what
// else the lesson sets out (intro), a table for each run in the order of
// the ways, then notes.
func (rp replay) writeTable(w io.Writer, runs []ReplayRun, intro, notes []string) {
	fmt.Fprintf(w, "Client deadline for checkout = %d ms\n", rp.deadline.Milliseconds())
	for _, line := range intro {
		fmt.Fprintln(w, line)
	}
	for i, run := range runs {
		fmt.Fprintln(w)
		rp.writeRun(w, rp.ways[i], run)
	}
	fmt.Fprintln(w)
	for _, line := range notes {
		fmt.Fprintln(w, line)
	}
}

// writeRun writes one run's table: a line a call, then the client's
// verdict. A naive call's timeout is its own cap, and says so: cap=.
func (rp replay) writeRun(w io.Writer, wy way, run ReplayRun) {
	fmt.Fprintln(w, wy.heading)
	label := "timeout"
	if wy.mode == mode.Naive {
		label = "cap"
	}
	for _, h := range run.Hops {
		switch h.Outcome {
		case "skipped":
			fmt.Fprintf(w, "  %-9s not called: %s  (skipped)\n", h.Name, h.Note)
			continue
		case "unknown":
			fmt.Fprintf(w, "  %-9s %s\n", h.Name, h.Note)
			continue
		}
		clipped := ""
		if h.ClippedByBudget {
			clipped = "\n            " + rp.clip(h) + "  <- clipped by the budget"
		}
		if rp.showStart {
			fmt.Fprintf(w, "  %-9s %s=%5d ms  start=%5d ms  took %5d ms (%s)%s\n",
				h.Name, label, h.TimeoutMS, h.StartMS, h.TookMS, h.Outcome, clipped)
		} else {
			fmt.Fprintf(w, "  %-9s %s=%5d ms  took %5d ms (%s)  elapsed=%5d ms%s\n",
				h.Name, label, h.TimeoutMS, h.TookMS, h.Outcome, h.ElapsedMS, clipped)
		}
	}
	verdict := "WITHIN"
	if run.Verdict == "OVER" {
		verdict = "OVER (past the client's deadline)"
	}
	fmt.Fprintf(w, "  total elapsed = %d ms vs deadline %d ms  -> %s   [HTTP %d]\n", run.TotalMS, run.DeadlineMS, verdict, run.HTTPStatus)
	fmt.Fprintf(w, "  %s\n", run.Predicted)
	for i, why := range run.MeasuredAgain {
		fmt.Fprintf(w, "  (try %d was measured again: %s)\n", i+1, why)
	}
	if run.Disturbed != "" {
		fmt.Fprintf(w, "  (all %d tries ended so; this one: %s)\n", maxTries, run.Disturbed)
	}
}

// clip writes out how the budget set the timeout of h, a call it clipped
// (clipSum).
func (rp replay) clip(h ReplayHop) string {
	return clipSum(rp.hop(h.Name).cap, rp.deadline, rp.margin, h.StartMS, h.TimeoutMS)
}

// clipSum writes out, in the lesson's terms, how the budget set a call's
// timeout when it clipped it: min(cap, deadline − spent − margins) with
// every term measured. A call orders makes keeps back two margins: the
// gateway's, on its call to orders, and orders' own. before is when the
// call started, counted from the request's arrival at orders; the way
// there is the rest of what the budget had spent — the request's way from
// the client to orders.
func clipSum(cap, deadline, margin time.Duration, before, timeout int64) string {
	d, m, c := deadline.Milliseconds(), margin.Milliseconds(), cap.Milliseconds()
	way := max(d-2*m-timeout-before, 0)
	return fmt.Sprintf("min(%d, %d − %d before it − %d on the way − 2 × %d margin) = %d ms", c, d, before, way, m, timeout)
}
