package orders

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
)

// The checkout's dependencies and what the failure of each does to it,
// declared once (docs/criticality.md). The allocation rules they follow:
//
//   - critical: its failure fails the request; it gets the generous slice;
//   - optional: a short slice and a default value on expiry, so the answer
//     degrades rather than fails (optional.go);
//   - deferred: needed, but not before the answer; the outbox does it
//     later (Service.ship, FlushOutbox);
//   - fire-forward: off the request path entirely, in a queue with its own
//     lifetime (audit.go).
//
// A dependency that is not critical is so only while the mechanism that
// makes it so is on: the outbox for the shipment, Criticality for the
// estimate and the audit. With it off, as in naive mode, the dependency is
// critical and in line: the chain calls every step in turn, and any
// step's failure fails the checkout.

// Criticality is what a dependency's failure does to the checkout.
type Criticality string

// The criticalities.
const (
	Critical    Criticality = "critical"
	Optional    Criticality = "optional"
	Deferred    Criticality = "deferred"
	FireForward Criticality = "fire_forward"
)

// Dependency is one of the checkout's dependencies.
type Dependency struct {
	// Name is the dependency's name in hops, metrics and client chains.
	Name string
	// Call is the method the checkout calls.
	Call        string
	Criticality Criticality
	// Slice is the call's own cap, clipped to the budget in budgeted mode.
	Slice time.Duration
	// Mechanism is the switch that makes a dependency other than
	// critical; off, it is critical and in line.
	Mechanism string
	// OnFailure says what the dependency's failure does, as declared.
	OnFailure string
}

// Graph is the checkout's dependencies under cfg, in the order a checkout
// meets them.
func Graph(cfg Config) []Dependency {
	return []Dependency{
		{Name: "catalog", Call: "catalog.ReserveStock", Criticality: Critical, Slice: cfg.CatalogCap,
			OnFailure: "the checkout fails and nothing is charged"},
		{Name: "fraud", Call: "payments.ScreenOrder", Criticality: Critical, Slice: cfg.FraudCap,
			OnFailure: "the checkout fails and nothing is charged; a declined order is never charged"},
		{Name: "payments", Call: "payments.CreateCharge", Criticality: Critical, Slice: cfg.PaymentsCap,
			OnFailure: "the checkout fails, or is left payment_pending for the reconciler when the charge's outcome is unknown"},
		{Name: "shipping", Call: "shipping.CreateShipment", Criticality: Deferred, Slice: cfg.ShippingCap, Mechanism: "outbox",
			OnFailure: "the order is confirmed with its shipment pending, and the outbox books it later"},
		{Name: estimateDep, Call: "shipping.EstimateDelivery", Criticality: Optional, Slice: cfg.EstimateCap, Mechanism: "criticality",
			OnFailure: fmt.Sprintf("the answer carries the default delivery estimate (%s) and degraded: [%q]", DefaultDeliveryEstimate, PartDeliveryEstimate)},
		{Name: auditDep, Call: "payments.RecordAudit", Criticality: FireForward, Slice: AuditTimeout, Mechanism: "criticality",
			OnFailure: "the queue's worker tries again with backoff while the event lives; nothing waits for it"},
	}
}

// String is the window as the docs write it: "3–5 business days".
func (e DeliveryEstimate) String() string {
	return fmt.Sprintf("%d–%d business days", e.MinBusinessDays, e.MaxBusinessDays)
}

// treatment is what m does with d: its declared criticality while the
// mechanism behind it is on, critical otherwise.
func (d Dependency) treatment(m mode.Mechanisms) Criticality {
	on := true
	switch d.Mechanism {
	case "outbox":
		on = m.Outbox
	case "criticality":
		on = m.Criticality
	}
	if !on {
		return Critical
	}
	return d.Criticality
}

// declared is the table under the zero Config, for treats: criticalities
// and mechanisms, which no setting changes, so a checkout asking how one
// dependency is treated need not build (and format) the table again.
var declared = Graph(Config{})

// treats says what the mechanisms of m do with the named dependency.
func treats(m mode.Mechanisms, name string) Criticality {
	for _, d := range declared {
		if d.Name == name {
			return d.treatment(m)
		}
	}
	return Critical
}

// GraphView is GET /admin/graph: the table, and what the mode in force
// does with each dependency.
type GraphView struct {
	Service      string           `json:"service"`
	Mode         mode.Mode        `json:"mode"`
	Dependencies []DependencyView `json:"dependencies"`
}

// DependencyView is one dependency as the admin API shows it.
type DependencyView struct {
	Name        string      `json:"name"`
	Call        string      `json:"call"`
	Criticality Criticality `json:"criticality"`
	SliceMS     int64       `json:"slice_ms"`
	Mechanism   string      `json:"mechanism,omitempty"`
	// Now is what the mode in force does with it: its criticality, or
	// critical when the mechanism behind it is off.
	Now       Criticality `json:"now"`
	OnFailure string      `json:"on_failure"`
	// LifetimeMS is a fire-forward event's lifetime; Default an optional
	// dependency's default value.
	LifetimeMS int64  `json:"lifetime_ms,omitempty"`
	Default    string `json:"default,omitempty"`
}

// graphView is the view of g under s.
func graphView(cfg Config, audit AuditSettings, s mode.Settings) GraphView {
	v := GraphView{Service: "orders", Mode: s.Mode}
	for _, d := range Graph(cfg) {
		dv := DependencyView{Name: d.Name, Call: d.Call, Criticality: d.Criticality, SliceMS: d.Slice.Milliseconds(),
			Mechanism: d.Mechanism, Now: d.treatment(s.Mechanisms), OnFailure: d.OnFailure}
		switch d.Criticality {
		case Optional:
			dv.Default = DefaultDeliveryEstimate.String()
		case FireForward:
			dv.LifetimeMS = audit.orDefaults().Lifetime.Milliseconds()
		}
		if dv.Now == Critical && d.Criticality != Critical {
			dv.OnFailure = "critical and in line (" + d.Mechanism + " off): the checkout fails"
		}
		v.Dependencies = append(v.Dependencies, dv)
	}
	return v
}

// graphHandler serves GET /admin/graph.
func graphHandler(cfg Config, audit AuditSettings, settings *mode.Live) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(graphView(cfg, audit, settings.Load()))
	})
}
