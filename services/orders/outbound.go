package orders

import (
	"time"

	"google.golang.org/grpc"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/resilience"
	"github.com/mercado-lab/mercado/internal/resilience/breaker"
	"github.com/mercado-lab/mercado/internal/resilience/bulkhead"
	"github.com/mercado-lab/mercado/internal/serve"
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
	// min(cap, remaining − margin), naive the cap.
	dep := func(name string, cap time.Duration, budgetedRetries bool) grpc.UnaryClientInterceptor {
		return resilience.ClientChain(resilience.NewOutbound(resilience.OutboundOptions{
			Name: name, Cap: cap, HopName: hopName,
			Settings: kit.Settings, Metrics: kit.Metrics, Tracing: kit.Tracing, Log: kit.Log,
			Shared:       shared,
			Bulkhead:     bulkhead.Settings{Capacity: r.Bulkhead, MaxWait: r.MaxWait},
			Breaker:      breaker.Settings{Window: r.BreakerWindow, FailureRatio: r.BreakerRatio, OpenFor: r.BreakerOpen},
			NaiveRetries: true, BudgetedRetries: budgetedRetries,
			Idempotent: func(string) bool { return true },
		}))
	}
	// The optional estimate gets one try in its short slice, and the audit
	// queue does its own retrying, with backoff, outside any request.
	return dependencies{
		catalog:  dep("catalog", cfg.CatalogCap, true),
		fraud:    dep("fraud", cfg.FraudCap, true),
		payments: dep("payments", cfg.PaymentsCap, true),
		shipping: dep("shipping", cfg.ShippingCap, true),
		estimate: dep(estimateDep, cfg.EstimateCap, false),
		audit:    dep(auditDep, AuditTimeout, false),
	}
}
