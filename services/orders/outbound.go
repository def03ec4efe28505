package orders

import (
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/mercado-lab/mercado/internal/budgetcheck"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/resilience"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/pkg/resilience/breaker"
	"github.com/mercado-lab/mercado/pkg/resilience/bulkhead"
	catalogv1 "github.com/mercado-lab/mercado/proto/catalog/v1"
	paymentsv1 "github.com/mercado-lab/mercado/proto/payments/v1"
	shippingv1 "github.com/mercado-lab/mercado/proto/shipping/v1"
)

// hopNames name each outbound method in Server-Timing and the lab's
// tables: the checkout chain's four calls by their dependency, the rest
// by dependency and verb.
var hopNames = map[string]string{
	catalogv1.CatalogService_ReserveStock_FullMethodName:     "catalog",
	catalogv1.CatalogService_ReleaseStock_FullMethodName:     "catalog.release",
	paymentsv1.PaymentsService_CreateCharge_FullMethodName:   "payments",
	paymentsv1.PaymentsService_GetCharge_FullMethodName:      "payments.get",
	paymentsv1.PaymentsService_ScreenOrder_FullMethodName:    "fraud",
	shippingv1.ShippingService_CreateShipment_FullMethodName: "shipping",
	// The optional and the fire-forward dependency, by their names in
	// the criticality table (graph.go).
	shippingv1.ShippingService_EstimateDelivery_FullMethodName: estimateDep,
	paymentsv1.PaymentsService_RecordAudit_FullMethodName:      auditDep,
	paymentsv1.PaymentsService_RecordAudits_FullMethodName:     auditDep,
}

func hopName(method string) string {
	if n, ok := hopNames[method]; ok {
		return n
	}
	return method
}

// dependencies are the client chains of orders' dependencies: the
// interceptors to dial each with. The fraud screen and the audit trail are
// served by payments, the estimate by shipping, but each is a dependency
// of its own: its own cap, bulkhead and breaker, so a slow screen does not
// take the charges' slots, nor a hung quote open the bookings' breaker.
type dependencies struct {
	catalog, fraud, payments, shipping, estimate, audit grpc.UnaryClientInterceptor
}

// newDependencies builds the chain of each dependency
// (resilience.ClientChain: retries, pool, breaker, clip): its own cap, and
// the mechanisms of the mode each call's request runs in. In naive mode
// the four share one outbound pool (the vendor is not on a pool of its
// own) and every call is retried blind; in budgeted mode each has its own
// bulkhead and breaker, and this layer — the only one that retries —
// retries within the budget. Every call orders makes is idempotent: a
// reservation, a charge and a shipment are each keyed by the order.
func newDependencies(kit *serve.Kit, cfg Config) dependencies {
	r := cfg.Resilience
	shared := resilience.NewPoolRef(bulkhead.Settings{
		Name: "outbound", Capacity: r.Workers, MaxWait: -1,
	}, kit.Metrics)
	kit.Settings.OnSwitch(func(mode.Settings) { shared.Reset() })
	// Each call's timeout is computed in the chain's last step, by
	// deadline.Policy.Decide (pkg/deadline/budget.go): budgeted
	// min(cap, remaining − margin), naive the cap, fragile none.
	dep := func(name string, cap time.Duration, budgetedRetries bool) grpc.UnaryClientInterceptor {
		return resilience.ClientChain(resilience.NewOutbound(resilience.OutboundOptions{
			Name: name, Cap: cap, HopName: hopName,
			Settings: kit.Settings, Metrics: kit.Metrics, Tracing: kit.Tracing, Log: kit.Log,
			Shared:       shared,
			Bulkhead:     bulkhead.Settings{Capacity: r.Bulkhead, MaxWait: r.MaxWait},
			Breaker:      breaker.Settings{MinCalls: r.BreakerMinCalls, FailureRatio: r.BreakerRatio, Window: r.BreakerWindow, OpenFor: r.BreakerOpen},
			NaiveRetries: true, BudgetedRetries: budgetedRetries,
			Idempotent: func(string) bool { return true },
		}))
	}
	// The optional estimate gets one try in its short slice, and the audit
	// queue does its own retrying, with backoff, outside any request.
	return dependencies{
		catalog:  dep("catalog", cfg.CatalogCap, retriedInBudget("catalog")),
		fraud:    dep("fraud", cfg.FraudCap, retriedInBudget("fraud")),
		payments: dep("payments", cfg.PaymentsCap, retriedInBudget("payments")),
		shipping: dep("shipping", cfg.ShippingCap, retriedInBudget("shipping")),
		estimate: dep(estimateDep, cfg.EstimateCap, retriedInBudget(estimateDep)),
		audit:    dep(auditDep, AuditTimeout, retriedInBudget(auditDep)),
	}
}

// retriedInBudget says whether orders, the one layer that retries in
// budgeted mode, retries calls to dep: all but the optional estimate,
// which gets one try in its short slice, and the audit trail, whose queue
// does its own retrying outside any request.
func retriedInBudget(dep string) bool { return dep != estimateDep && dep != auditDep }

// capFlags name the flag that sets each dependency's cap (config.go);
// the audit write's is AuditTimeout, fixed.
var capFlags = map[string]string{
	"catalog": "--catalog-cap", "fraud": "--fraud-cap", "payments": "--payments-cap",
	"shipping": "--shipping-cap", estimateDep: "--estimate-cap",
}

// Calls are the checkout's calls (Graph) under the settings s, as
// `mercado budget check` and GET /admin/budget read them: each one's cap
// and flag, how many times it is tried, how the mechanisms in force treat
// it, and its place in the checkout — the reservation and the fraud
// screen in one stage, at once when the fan-out is parallel, then the
// charge, the booking, and the estimate and the audit write.
func (c Config) Calls(s mode.Settings) []budgetcheck.Call {
	var out []budgetcheck.Call
	parallel := s.Mechanisms.Fanout == mode.FanoutParallel
	for i, d := range Graph(c) {
		to, method, _ := strings.Cut(d.Call, ".")
		stage := i + 1
		if d.Name == "fraud" && parallel {
			stage = 1
		}
		crit := d.treatment(s.Mechanisms)
		out = append(out, budgetcheck.Call{
			From: "orders", To: to, Dep: d.Name, Setting: capFlags[d.Name], Cap: s.Cap(d.Slice),
			Attempts:    resilience.Attempts(s, true, retriedInBudget(d.Name)),
			Criticality: string(crit), Stage: stage, Parallel: stage == 1 && parallel,
			Route: "Checkout", Method: method,
		})
	}
	return out
}
