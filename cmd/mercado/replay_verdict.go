package main

import (
	"fmt"
	"net/http"

	"github.com/mercado-lab/mercado/lab"
	"github.com/mercado-lab/mercado/loadtest/report"
)

// The replays' claims: what each replay's lesson says the run shows, at
// the replay's defaults. A replay whose every try was decided by a stall
// of this process rather than the budget (lab/stalls.go) is INVALID.

// replayTodo is what to do about an INVALID replay.
const replayTodo = "Close other programs and run it again"

// over and within are a checkout's verdicts as the replays name them.
const (
	over   = "OVER"
	within = "WITHIN"
)

// verdictClaim is the claim that a checkout ended want (OVER or WITHIN
// the client's deadline).
func verdictClaim(who, want, got string, totalMS, deadlineMS int64) report.Claim {
	return report.Claim{Name: fmt.Sprintf("%s ends %s the client's deadline", who, map[string]string{over: "over", within: "within"}[want]),
		Pass: got == want, Got: fmt.Sprintf("%s, %d ms against %d ms", got, totalMS, deadlineMS)}
}

// replayRun is one of a replay's runs, and why a stall decided its
// every try ("" when one try was undisturbed).
type replayRun struct{ name, disturbed string }

// stalled are the runs a stall decided on every try, each "name run: why".
func stalled(runs ...replayRun) []string {
	var out []string
	for _, r := range runs {
		if r.disturbed != "" {
			out = append(out, r.name+" run: "+r.disturbed)
		}
	}
	return out
}

// lesson7Claims: naive ends over the deadline, budgeted within it.
func lesson7Claims(r lab.Lesson7Result) ([]report.Claim, []string) {
	return []report.Claim{
		verdictClaim("naive", over, r.Naive.Verdict, r.Naive.TotalMS, r.Naive.DeadlineMS),
		verdictClaim("budgeted", within, r.Budgeted.Verdict, r.Budgeted.TotalMS, r.Budgeted.DeadlineMS),
	}, stalled(replayRun{"naive", r.Naive.Disturbed}, replayRun{"budgeted", r.Budgeted.Disturbed})
}

// fanoutClaims: naive in series ends over the deadline; budgeted, in
// series and in parallel, within it.
func fanoutClaims(r lab.FanoutResult) ([]report.Claim, []string) {
	ns, bs, bp := r.NaiveSequential, r.BudgetedSequential, r.BudgetedParallel
	return []report.Claim{
			verdictClaim("naive in series", over, ns.Verdict, ns.TotalMS, ns.DeadlineMS),
			verdictClaim("budgeted in series", within, bs.Verdict, bs.TotalMS, bs.DeadlineMS),
			verdictClaim("budgeted in parallel", within, bp.Verdict, bp.TotalMS, bp.DeadlineMS),
		}, stalled(replayRun{"naive in series", ns.Disturbed}, replayRun{"budgeted in series", bs.Disturbed},
			replayRun{"budgeted in parallel", bp.Disturbed})
}

// waterfallClaims: the client gets 202 processing within its budget, the
// reconciler settles the order confirmed, and the customer is charged
// once.
func waterfallClaims(r lab.WaterfallResult) ([]report.Claim, []string) {
	return []report.Claim{
		{Name: "the client gets 202 processing within its budget",
			Pass: r.HTTPStatus == http.StatusAccepted && r.Status == "processing" && r.TotalMS <= r.BudgetMS,
			Got:  fmt.Sprintf("HTTP %d %q after %d ms (budget %d ms)", r.HTTPStatus, r.Status, r.TotalMS, r.BudgetMS)},
		{Name: "the reconciler settles the order confirmed", Pass: r.FinalOrderStatus == "confirmed",
			Got: fmt.Sprintf("the order ended %s", r.FinalOrderStatus)},
		{Name: "the customer is charged once", Pass: r.ChargesTaken == 1 && r.DuplicateCharges == 0,
			Got: fmt.Sprintf("%d charges, %d duplicate", r.ChargesTaken, r.DuplicateCharges)},
	}, stalled(replayRun{"the checkout", r.Disturbed})
}
