package faults

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The methods whose work the services simulate, by the name a fault spec
// gives them: the gRPC method's short name, or the gateway's route. The
// services call Work with these, and every way of setting a fault (the
// --fault flags, the admin API, mercado fault, scenario files) accepts
// these alone, besides AllMethods.
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

// simulated is every simulated method: whose it is, and the hop its work
// is recorded as in a request's Server-Timing. The gateway's own work is
// "gateway" and orders' final write "finish", as in the 800 ms waterfall;
// the others are named after whose work they are.
var simulated = []struct{ service, method, hop string }{
	{ServiceGateway, GatewayCheckout, "gateway"},
	{ServiceOrders, OrdersFinish, "finish"},
	{ServiceCatalog, CatalogListProducts, "catalog"},
	{ServiceCatalog, CatalogGetProduct, "catalog"},
	{ServiceCatalog, CatalogReserveStock, "catalog"},
	{ServiceCatalog, CatalogReleaseStock, "catalog"},
	{ServiceCatalog, CatalogExportCatalog, "catalog"},
	{ServicePayments, PaymentsCreateCharge, "psp"},
	{ServicePayments, PaymentsScreenOrder, "screen"},
	{ServicePayments, PaymentsRecordAudit, "audit"},
	{ServiceShipping, ShippingCreateShipment, "carrier"},
	{ServiceShipping, ShippingEstimateDelivery, "carrier.estimate"},
}

// batchRPCs are the gRPC methods that do another's simulated work, by the
// method whose work it is: a batch of audit entries is one write of the
// trail, as RecordAudit's.
var batchRPCs = map[string]string{"RecordAudits": PaymentsRecordAudit}

// WorkOf returns the simulated method whose work the gRPC method rpc (its
// short name) does: rpc itself, or the one a batch RPC shares.
func WorkOf(rpc string) string {
	if m, ok := batchRPCs[rpc]; ok {
		return m
	}
	return rpc
}

// Methods returns the methods whose work service simulates, in the order
// its API lists them; none for a service Mercado does not have.
func Methods(service string) []string {
	var out []string
	for _, m := range simulated {
		if m.service == service {
			out = append(out, m.method)
		}
	}
	return out
}

// hopName is the hop method's work is recorded as: its own name for a
// method none of the services simulate (a test's).
func hopName(method string) string {
	for _, m := range simulated {
		if m.method == method {
			return m.hop
		}
	}
	return method
}

// CheckMethod reports a method that service does not simulate, naming the
// ones it does. Names are case-sensitive, as gRPC's are; a name that
// differs from a real one only in case is pointed at it.
func CheckMethod(service, method string) error {
	known := Methods(service)
	if method == AllMethods || slices.Contains(known, method) {
		return nil
	}
	if len(known) == 0 {
		return fmt.Errorf("unknown service %q (want %s)", service, ServiceList())
	}
	want := "want " + strings.Join(known, ", ") + " or " + AllMethods
	for _, m := range known {
		if strings.EqualFold(m, method) {
			return fmt.Errorf("unknown method %q for %s: names are case-sensitive, did you mean %s? (%s)", method, service, m, want)
		}
	}
	return fmt.Errorf("unknown method %q for %s (%s)", method, service, want)
}

// CheckMethods reports the first method of s, in name order, that service
// does not simulate (see CheckMethod).
func (s Set) CheckMethods(service string) error {
	for _, m := range slices.Sorted(maps.Keys(s)) {
		if err := CheckMethod(service, m); err != nil {
			return err
		}
	}
	return nil
}
