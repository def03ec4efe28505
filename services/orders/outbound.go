package orders

import (
	"context"
	"time"

	"google.golang.org/grpc"

	"github.com/mercado-lab/mercado/internal/dial"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/timing"
	"github.com/mercado-lab/mercado/pkg/deadline"
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

// dialDependency connects to one dependency through the deadline client
// interceptor: every call is bounded by the dependency's cap and, when
// the settings clip to the budget, by what is left of the caller's budget.
// Each call is recorded as a hop of the request it belongs to.
func dialDependency(target string, cap time.Duration, settings *mode.Live) (*grpc.ClientConn, error) {
	return dial.Conn(target, deadline.UnaryClientInterceptor(deadline.ClientOptions{
		Policy: settings.Policy,
		Cap:    func(string) time.Duration { return cap },
		Hooks:  deadline.Hooks{OnCall: recordHop},
	}))
}

// recordHop adds a finished call to the request's hop record, if any.
func recordHop(ctx context.Context, c deadline.CallInfo) {
	rec := timing.FromContext(ctx)
	if rec == nil {
		return
	}
	name, ok := hopNames[c.Method]
	if !ok {
		name = c.Method
	}
	rec.Add(timing.Hop{Name: name, Timeout: c.Timeout, Took: c.Took, Outcome: string(c.Outcome)})
}
