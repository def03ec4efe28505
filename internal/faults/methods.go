package faults

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mercado-lab/mercado/internal/sim"
)

// simulated is every simulated method: whose it is, and the hop its work
// is recorded as in a request's Server-Timing. The gateway's own work is
// "gateway" and orders' final write "finish", as in the 800 ms waterfall;
// the others are named after whose work they are.
var simulated = []struct{ service, method, hop string }{
	{sim.ServiceGateway, sim.GatewayCheckout, "gateway"},
	{sim.ServiceOrders, sim.OrdersFinish, "finish"},
	{sim.ServiceCatalog, sim.CatalogListProducts, "catalog"},
	{sim.ServiceCatalog, sim.CatalogGetProduct, "catalog"},
	{sim.ServiceCatalog, sim.CatalogReserveStock, "catalog"},
	{sim.ServiceCatalog, sim.CatalogReleaseStock, "catalog"},
	{sim.ServiceCatalog, sim.CatalogExportCatalog, "catalog"},
	{sim.ServiceCatalog, sim.CatalogCommit, "catalog.commit"},
	{sim.ServicePayments, sim.PaymentsCreateCharge, "psp"},
	{sim.ServicePayments, sim.PaymentsScreenOrder, "screen"},
	{sim.ServicePayments, sim.PaymentsRecordAudit, "audit"},
	{sim.ServiceShipping, sim.ShippingCreateShipment, "carrier"},
	{sim.ServiceShipping, sim.ShippingEstimateDelivery, "carrier.estimate"},
}

// batchRPCs are the gRPC methods that do another's simulated work, by the
// method whose work it is: a batch of audit entries is one write of the
// trail, as RecordAudit's.
var batchRPCs = map[string]string{"RecordAudits": sim.PaymentsRecordAudit}

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

// namedOnly are the methods that only a spec naming them applies to,
// never their service's AllMethods spec. The catalog's commit is its
// store's, not one of its calls: "every method slow" must not also make
// every reservation hold its products' locks longer.
var namedOnly = map[string]bool{sim.CatalogCommit: true}

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
