package orders

import (
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/resilience"
	"github.com/mercado-lab/mercado/internal/resilience/bulkhead"
	"github.com/mercado-lab/mercado/internal/serve"
	catalogv1 "github.com/mercado-lab/mercado/proto/catalog/v1"
	paymentsv1 "github.com/mercado-lab/mercado/proto/payments/v1"
	shippingv1 "github.com/mercado-lab/mercado/proto/shipping/v1"
)

// hopNames name each outbound method in Server-Timing and the lab's
// tables: the checkout chain's three calls by their dependency, the rest
// by dependency and verb.
var hopNames = map[string]string{
	catalogv1.CatalogService_ReserveStock_FullMethodName:     "catalog",
	catalogv1.CatalogService_ReleaseStock_FullMethodName:     "catalog.release",
	paymentsv1.PaymentsService_CreateCharge_FullMethodName:   "payments",
	paymentsv1.PaymentsService_GetCharge_FullMethodName:      "payments.get",
	shippingv1.ShippingService_CreateShipment_FullMethodName: "shipping",
}

func hopName(method string) string {
	if n, ok := hopNames[method]; ok {
		return n
	}
	return method
}

// dependencies are the policies of orders' three dependencies.
type dependencies struct {
	catalog, payments, shipping *resilience.Outbound
}

// newDependencies builds the policy of each dependency: its own cap, and
// the mechanisms in force. In naive mode the three share one outbound pool
// (the vendor is not on a pool of its own) and every call is retried
// blind; in budgeted mode each has its own bulkhead and breaker, and this
// layer — the only one that retries — retries within the budget. Every
// call orders makes is idempotent: a reservation, a charge and a shipment
// are each keyed by the order.
func newDependencies(kit *serve.Kit, cfg Config) dependencies {
	shared := resilience.NewPoolRef(bulkhead.Settings{
		Name: "outbound", Capacity: cfg.Resilience.Workers, MaxWait: -1,
	}, kit.Metrics)
	kit.Settings.OnSwitch(func(mode.Settings) { shared.Reset() })
	dep := func(name string, cap time.Duration) *resilience.Outbound {
		return kit.Outbound(resilience.OutboundOptions{
			Name: name, Cap: cap, HopName: hopName, Shared: shared,
			NaiveRetries: true, BudgetedRetries: true,
			Idempotent: func(string) bool { return true },
		})
	}
	return dependencies{
		catalog:  dep("catalog", cfg.CatalogCap),
		payments: dep("payments", cfg.PaymentsCap),
		shipping: dep("shipping", cfg.ShippingCap),
	}
}
