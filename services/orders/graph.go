package orders

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
	catalogv1 "github.com/mercado-lab/mercado/proto/catalog/v1"
	paymentsv1 "github.com/mercado-lab/mercado/proto/payments/v1"
	shippingv1 "github.com/mercado-lab/mercado/proto/shipping/v1"
)

// The checkout's dependencies and what the failure of each does to it,
// declared once (docs/criticality.md). The allocation rules they follow:
//
//   - critical: its failure fails the request; it gets the generous cap;
//   - optional: a short cap and a default value on expiry, so the answer
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

// Dependency is one of the checkout's dependencies: everything orders
// says about it, in one row. The chains, the connections, the cap flags,
// Server-Timing's hop names, GET /admin/graph and `budget check`'s model
// are all read from the table (graph).
type Dependency struct {
	// Name is the dependency's name in hops, metrics and client chains.
	Name string
	// Method is the gRPC method the checkout calls; Call is the same as
	// the docs write it, "catalog.ReserveStock".
	Method, Call string
	Criticality  Criticality
	// Cap is the call's own timeout, clipped to the budget in budgeted
	// mode: there the call's timeout is min(cap, remaining − margin).
	Cap time.Duration
	// Flag is the flag that sets Cap; empty when Cap is fixed.
	Flag string
	// Retried says whether orders, the one layer that retries in
	// budgeted mode, retries the call within the budget.
	Retried bool
	// Hedged says whether, with the hedging mechanism on, a slow call is
	// sent a second time beside the first: only a call that changes
	// nothing, so that two at once cost load and nothing else.
	Hedged bool
	// Mechanism is the switch that makes a dependency other than
	// critical; off, it is critical and in line.
	Mechanism string
	// OnFailure says what the dependency's failure does, as declared.
	OnFailure string

	// addr is the address the call is dialled at, capVar the setting
	// Cap is read from, def its default and usage the flag's help.
	addr   *string
	capVar *time.Duration
	def    time.Duration
	usage  string
}

// Graph is the checkout's dependencies under cfg, in the order a checkout
// meets them.
func Graph(cfg Config) []Dependency { return graph(&cfg) }

// graph is the table, its rows bound to c's settings. The fraud screen
// and the audit trail are served by payments, the estimate by shipping,
// but each is a dependency of its own: its own cap, bulkhead and breaker,
// so a slow screen does not take the charges' slots, nor a hung quote open
// the bookings' breaker. The optional estimate gets one try in its short
// cap, and the audit queue does its own retrying, with backoff, outside
// any request; the rest are retried within the budget.
func graph(c *Config) []Dependency {
	audit := AuditTimeout
	ds := []Dependency{
		{Name: "catalog", Method: catalogv1.CatalogService_ReserveStock_FullMethodName, Criticality: Critical,
			addr: &c.CatalogAddr, capVar: &c.CatalogCap, def: DefaultCatalogCap, Flag: "catalog-cap", usage: "own timeout of each call to catalog", Retried: true,
			OnFailure: "the checkout fails and nothing is charged"},
		{Name: "fraud", Method: paymentsv1.PaymentsService_ScreenOrder_FullMethodName, Criticality: Critical,
			addr: &c.PaymentsAddr, capVar: &c.FraudCap, def: DefaultFraudCap, Flag: "fraud-cap", usage: "own timeout of each call to payments' fraud screen", Retried: true, Hedged: true,
			OnFailure: "the checkout fails and nothing is charged; a declined order is never charged"},
		{Name: "payments", Method: paymentsv1.PaymentsService_CreateCharge_FullMethodName, Criticality: Critical,
			addr: &c.PaymentsAddr, capVar: &c.PaymentsCap, def: DefaultPaymentsCap, Flag: "payments-cap", usage: "own timeout of each call to payments", Retried: true,
			OnFailure: "the checkout fails, or is left payment_pending for the reconciler when the charge's outcome is unknown"},
		{Name: "shipping", Method: shippingv1.ShippingService_CreateShipment_FullMethodName, Criticality: Deferred, Mechanism: "outbox",
			addr: &c.ShippingAddr, capVar: &c.ShippingCap, def: DefaultShippingCap, Flag: "shipping-cap", usage: "own timeout of each call to shipping", Retried: true,
			OnFailure: "the order is confirmed with its shipment pending, and the outbox books it later"},
		{Name: estimateDep, Method: shippingv1.ShippingService_EstimateDelivery_FullMethodName, Criticality: Optional, Mechanism: "criticality",
			addr: &c.ShippingAddr, capVar: &c.EstimateCap, def: DefaultEstimateCap, Flag: "estimate-cap", usage: "own timeout of the optional delivery estimate (budgeted: the answer's default on expiry)",
			OnFailure: fmt.Sprintf("the answer carries the default delivery estimate (%s) and degraded: [%q]", DefaultDeliveryEstimate, PartDeliveryEstimate)},
		{Name: auditDep, Method: paymentsv1.PaymentsService_RecordAudit_FullMethodName, Criticality: FireForward, Mechanism: "criticality",
			addr: &c.PaymentsAddr, capVar: &audit,
			OnFailure: "the queue's worker tries again with backoff while the event lives; nothing waits for it"},
	}
	for i := range ds {
		ds[i].Cap = *ds[i].capVar
		ds[i].Call = callName(ds[i].Method)
	}
	return ds
}

// callName writes a full gRPC method name, "/mercado.catalog.v1.CatalogService/ReserveStock",
// as "catalog.ReserveStock".
func callName(method string) string {
	pkg, _, _ := strings.Cut(strings.TrimPrefix(method, "/mercado."), ".")
	return pkg + "." + path.Base(method)
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
	CapMS       int64       `json:"cap_ms"`
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
		dv := DependencyView{Name: d.Name, Call: d.Call, Criticality: d.Criticality, CapMS: d.Cap.Milliseconds(),
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
