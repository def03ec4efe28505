package serve

import (
	"time"

	"github.com/mercado-lab/mercado/internal/budgetcheck"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/resilience"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// BudgetOptions describe a service's budget contract, which its admin
// API serves at GET /admin/budget.
type BudgetOptions struct {
	// Calls are the service's outbound calls under the settings in
	// force; nil: it makes none (a leaf).
	Calls func(mode.Settings) []budgetcheck.Call
	// Work maps a route to the simulated method that is its own work
	// (orders' "Checkout" to "Finish"); each method faults.Methods lists
	// for the service is a route of its own work too.
	Work map[string]string
	// Accepts is the longest deadline accepted for a class; nil: a gRPC
	// server's (resilience.AcceptedDeadline, the default budgets).
	Accepts func(mode.Settings, deadline.Class) time.Duration
	// Edge is the edge's budgets and write timeout under the settings in
	// force (the gateway's); nil: not the edge.
	Edge func(mode.Settings) *budgetcheck.Edge
}

// SetBudget describes the service's contract. Call it before the
// service starts.
func (k *Kit) SetBudget(o BudgetOptions) { k.budget = o }

// Contract is the service's budget contract now: its needs from the hop
// histograms where its calls have had traffic (from its floor where not),
// its own work from the simulated faults in force, and its promise from
// its caps, attempts and the classes' maxima.
func (k *Kit) Contract() budgetcheck.Contract {
	s := k.Settings.Load()
	var calls []budgetcheck.Call
	if k.budget.Calls != nil {
		calls = k.budget.Calls(s)
	}
	for i, c := range calls {
		st := k.Metrics.HopStats(c.Dep)
		// A capped call lasts its cap at most: a p99 past it is the
		// histogram's interpolation inside a wide bucket.
		if c.Cap > 0 && st.P99 > c.Cap {
			st.P99 = c.Cap
		}
		calls[i].ObservedP99, calls[i].TimedOut, calls[i].Observed = st.P99, st.TimedOut, st.Calls
	}
	accepts := map[deadline.Class]time.Duration{}
	for _, c := range []deadline.Class{deadline.Interactive, deadline.Background, deadline.Batch} {
		if k.budget.Accepts != nil {
			accepts[c] = k.budget.Accepts(s, c)
		} else {
			accepts[c] = resilience.AcceptedDeadline(s, deadline.Budgets{}, c)
		}
	}
	own := map[string]time.Duration{}
	for _, m := range faults.Methods(k.Name) {
		own[m] = work(k.Faults.Spec(m))
	}
	for route, m := range k.budget.Work {
		own[route] = work(k.Faults.Spec(m))
		if route != m {
			delete(own, m)
		}
	}
	c := budgetcheck.Publish(k.Name, s, accepts, calls, own)
	if k.budget.Edge != nil {
		c.Edge = budgetcheck.PublishEdge(*k.budget.Edge(s))
	}
	return c
}

// work is the longest one call of a simulated method's work takes, as
// configured: its latency, delay and hang, and its p99 when drawn.
func work(s faults.Spec) time.Duration {
	return s.Latency + s.Delay + s.Hang + s.P99
}
