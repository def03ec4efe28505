package faults

import (
	"strings"

	"github.com/mercado-lab/mercado/internal/sim"
)

// Services returns the names of the shop's services, edge first, in the
// order a checkout meets them.
func Services() []string {
	return []string{sim.ServiceGateway, sim.ServiceOrders, sim.ServiceCatalog, sim.ServicePayments, sim.ServiceShipping}
}

// ServiceList is the names for a message: "gateway, orders, catalog,
// payments or shipping".
func ServiceList() string {
	names := Services()
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
