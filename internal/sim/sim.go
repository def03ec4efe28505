// Package sim is the seam between a service and the lab: the one thing a
// service is handed to simulate its work, and the names and the error
// that the service and the lab's tooling share.
//
// A service does its simulated work (its own, or its vendor's: payments'
// payment provider, shipping's carrier) through a [Simulator], calling
// Work with one of the method names below, and tells a simulated failure
// ([ErrInjected]) from others. The lab's tooling (internal/faults)
// provides the Simulator and decides how long each method's work takes
// and whether it fails. The services import this package and no tooling;
// layering_test.go checks both sides.
package sim

import (
	"context"

	"github.com/mercado-lab/mercado/internal/apperr"
)

// Simulator simulates the work of a service's methods, by name.
type Simulator interface {
	// Work does method's simulated work under ctx. It returns nil when
	// the work is done, ErrInjected when a fault chose to fail it, and
	// another error when the work was cut short: by ctx (its cause), if
	// the mode in force honours cancellation, or by the service
	// stopping.
	Work(ctx context.Context, method string) error
}

// ErrInjected is the error of simulated work that a fault (its error
// rate) chose to fail: the dependency is unavailable.
var ErrInjected error = &apperr.Error{Code: apperr.Unavailable, Message: "simulated failure (fault error-rate)"}

// The shop's services, by the one name each has everywhere in Mercado:
// `mercado serve <name>`, a fault's service (the --<name>-fault flags,
// `mercado fault <name>`, a scenario's keys), the admin API's and the
// metrics' service, and the name faults.Methods takes. They sit beside
// the methods each simulates because a fault names both.
const (
	ServiceGateway  = "gateway"
	ServiceOrders   = "orders"
	ServiceCatalog  = "catalog"
	ServicePayments = "payments"
	ServiceShipping = "shipping"
)

// The methods whose work the services simulate, by the name a fault spec
// gives them: the gRPC method's short name, or the gateway's route. The
// services call Work with these, and every way of setting a fault (the
// --fault flags, the admin API, mercado fault, scenario files) accepts
// these alone, besides faults.AllMethods.
const (
	// GatewayCheckout is the gateway's own work on a checkout (auth,
	// parsing) before it calls orders.
	GatewayCheckout = "Checkout"
	// OrdersFinish is orders' final write of a checkout.
	OrdersFinish = "Finish"

	CatalogListProducts = "ListProducts"
	CatalogGetProduct   = "GetProduct"
	CatalogReserveStock = "ReserveStock"
	CatalogReleaseStock = "ReleaseStock"
	// CatalogCommit is the store's commit of a reservation, made while the
	// reservation holds its products' locks: a slow disk under the
	// database makes it long, and every other checkout of those products
	// waits for it (the flash sale).
	CatalogCommit = "Commit"
	// CatalogExportCatalog is the work of one page of a catalogue export.
	CatalogExportCatalog = "ExportCatalog"

	// PaymentsCreateCharge is the payment provider's answer to a charge.
	PaymentsCreateCharge = "CreateCharge"
	// PaymentsScreenOrder is the fraud vendor's answer to a screening.
	PaymentsScreenOrder = "ScreenOrder"
	// PaymentsRecordAudit is payments' write of a checkout to its audit
	// trail: the destination of orders' fire-forward audit queue.
	PaymentsRecordAudit = "RecordAudit"
	// ShippingCreateShipment is the carrier's answer to a booking.
	ShippingCreateShipment = "CreateShipment"
	// ShippingEstimateDelivery is the carrier's delivery quote: the
	// checkout's optional call.
	ShippingEstimateDelivery = "EstimateDelivery"
)
