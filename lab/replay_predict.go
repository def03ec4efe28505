package lab

import (
	"fmt"
	"math"
	"time"

	"github.com/mercado-lab/mercado/internal/budget"
	"github.com/mercado-lab/mercado/internal/mode"
)

// ReplayPrediction is what `mercado budget predict` says of a replay's
// checkout, from the lesson's hops alone: each taking its work every
// time, with its cap and the way's clipping.
type ReplayPrediction struct {
	TotalMS int64 `json:"total_ms"`
	// Verdict is WITHIN when the answer comes by the deadline, else OVER;
	// CutShort says a critical call ended at its timeout (or was not
	// started, under the floor): the answer is an error, or a 202 whose
	// charge is settled later.
	Verdict  string `json:"verdict"`
	CutShort bool   `json:"cut_short"`
}

// predict composes the lesson's hops as the way runs them: in series, but
// catalog and the fraud screen at once when orders runs them so. Only in
// budgeted mode is the booking deferred, waited for up to its timeout and
// then left to the outbox; in naive mode it is critical. A call's timeout
// keeps back the gateway's margin and orders' (keepBack).
func (rp replay) predict(w way) ReplayPrediction {
	parallel := w.fanout == mode.FanoutParallel || (w.fanout == "" && w.mode.Mechanisms().Fanout == mode.FanoutParallel)
	f := budget.File{Target: rp.deadline, Edge: rp.edge, Own: rp.own, Margin: rp.keepBack(), Floor: rp.floor}
	for _, h := range rp.hops {
		c := &budget.Call{Name: h.name, P99: h.work, Cap: h.cap, Criticality: budget.Critical}
		if h.name == "shipping" && w.mode == mode.Budgeted {
			c.Criticality = budget.Optional
		}
		n := budget.Node{Call: c}
		if h.name == "fraud" && parallel && len(f.Graph.Seq) > 0 && f.Graph.Seq[len(f.Graph.Seq)-1].Call != nil &&
			f.Graph.Seq[len(f.Graph.Seq)-1].Call.Name == "catalog" {
			atOnce(&f.Graph, n)
			continue
		}
		f.Graph.Seq = append(f.Graph.Seq, n)
	}
	p := budget.Predict(f).In(w.mode == mode.Budgeted)
	out := ReplayPrediction{TotalMS: int64(math.Round(p.P50Ms)), Verdict: "WITHIN", CutShort: p.FailedShare > 0.5}
	if out.TotalMS > rp.deadline.Milliseconds() {
		out.Verdict = "OVER"
	}
	return out
}

// keepBack is what the gateway and orders keep back together from each
// of orders' calls: both margins, or orders' own where the lesson sets
// one.
func (rp replay) keepBack() time.Duration {
	if rp.ordersMargin > 0 {
		return rp.margin + rp.ordersMargin
	}
	return 2 * rp.margin
}

// String says the prediction in the tables' words.
func (p ReplayPrediction) String() string {
	return "predicted from the lesson's hops (mercado budget predict): answered at " + p.summary()
}

// summary is "1340 ms, a critical call cut short -> OVER".
func (p ReplayPrediction) summary() string {
	cut := ""
	if p.CutShort {
		cut = ", a critical call cut short"
	}
	return fmt.Sprintf("%d ms%s -> %s", p.TotalMS, cut, p.Verdict)
}
