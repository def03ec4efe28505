package lab

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/mercado-lab/mercado/internal/budget"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/loadtest"
)

// predictCheckouts puts on each phase's checkout figures in res what
// `mercado budget predict` composes from the hops orders made in that
// phase: the checkout's call graph as orders reports it (GET
// /admin/budget: each call's place, criticality, cap and the floor), each
// call's distribution its hop histogram over the phase, the target the
// checkout's deadline. Only orders' calls are composed: the gateway's and
// orders' own work are not in the prediction, so where they take time
// (a busy machine, the database's commits) the run is slower than it.
// margin is every service's, kept back once by the gateway and once by
// orders.
func predictCheckouts(ctx context.Context, gatewayAdmin string, sc loadtest.Scenario, margin time.Duration, res *loadtest.Results) error {
	hops, err := budget.ObserveHops(ctx, gatewayAdmin, "")
	if errors.Is(err, budget.ErrNoTraffic) {
		return nil
	}
	if err != nil {
		return err
	}
	var floor time.Duration
	for _, c := range hops.Calls {
		floor = max(floor, c.Floor)
	}
	for i := range res.Modes {
		m := &res.Modes[i]
		if m.Mechanisms == nil {
			continue
		}
		for j := range m.Phases {
			p := &m.Phases[j]
			k := slices.IndexFunc(p.Classes, func(s loadtest.Summary) bool { return s.Class == "checkout" })
			if k < 0 || p.Classes[k].Requests == 0 {
				continue
			}
			f := budget.File{Target: sc.DeadlineOf("checkout"), Margin: 2 * margin, Floor: floor,
				Graph: checkoutGraph(hops.Calls, *m.Mechanisms, p.Server.HopDurations)}
			if len(f.Graph.Seq) == 0 {
				continue
			}
			pred := budget.Predict(f).In(m.Mechanisms.ClipToBudget)
			p.Classes[k].Predicted = &loadtest.Predicted{P50MS: pred.P50Ms, P99MS: pred.P99Ms, MissShare: pred.MissShare}
		}
	}
	return nil
}

// checkoutGraph is the checkout as orders makes it under mechanisms m:
// its calls stage by stage, a stage's calls at once when it runs them so.
// Orders' words become the prediction's by what orders waits for: a
// critical call fails the checkout past its timeout; a deferred one (the
// booking) is waited for up to its timeout and then handed to the outbox,
// as the prediction treats an optional call; an optional one (the
// estimate) is never waited for, as a fire-forward one. A call with no
// histogram took no time in the span. Without caps, a call waits as long
// as it takes.
func checkoutGraph(calls []budget.HopObservation, m mode.Mechanisms, hists map[string]loadtest.Histogram) budget.Node {
	var ours []budget.HopObservation
	for _, c := range calls {
		if c.From == "orders" && c.Route == "Checkout" {
			ours = append(ours, c)
		}
	}
	slices.SortStableFunc(ours, func(a, b budget.HopObservation) int { return cmp.Compare(a.Stage, b.Stage) })
	var g budget.Node
	for i, c := range ours {
		call := &budget.Call{Name: c.To, Cap: c.Cap, Measured: histogram(hists["orders/"+c.To]), Criticality: budget.Critical}
		if !m.Caps || call.Cap <= 0 {
			call.Cap = time.Hour
		}
		switch c.Criticality {
		case string(budget.Deferred):
			call.Criticality = budget.Optional
		case string(budget.Optional), string(budget.FireForward):
			call.Criticality = budget.FireForward
		}
		if i > 0 && c.Stage == ours[i-1].Stage {
			atOnce(&g, budget.Node{Call: call})
			continue
		}
		g.Seq = append(g.Seq, budget.Node{Call: call})
	}
	return g
}

// atOnce puts n in g's last stage, to run at the same time as what is
// there.
func atOnce(g *budget.Node, n budget.Node) {
	last := &g.Seq[len(g.Seq)-1]
	if last.Call != nil {
		*last = budget.Node{Par: []budget.Node{{Call: last.Call}}}
	}
	last.Par = append(last.Par, n)
}

// histogram is h as the prediction reads a hop histogram: cumulative
// counts by upper bound in seconds. Empty when h counted nothing.
func histogram(h loadtest.Histogram) *dto.Histogram {
	out := &dto.Histogram{SampleCount: new(uint64)}
	if h.Total() <= 0 {
		return out
	}
	*out.SampleCount = uint64(math.Round(h.Total()))
	for i, b := range h.Bounds {
		out.Bucket = append(out.Bucket, &dto.Bucket{UpperBound: new(b), CumulativeCount: new(uint64(math.Round(h.Counts[i])))})
	}
	return out
}
