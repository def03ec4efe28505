package faults

import "strings"

// The shop's services, by the one name each has everywhere in Mercado:
// `mercado serve <name>`, a fault's service (the --<name>-fault flags,
// `mercado fault <name>`, a scenario's keys), the admin API's and the
// metrics' service, and the name Methods takes. They sit beside the
// methods each simulates because a fault names both.
const (
	ServiceGateway  = "gateway"
	ServiceOrders   = "orders"
	ServiceCatalog  = "catalog"
	ServicePayments = "payments"
	ServiceShipping = "shipping"
)

// Services returns the names of the shop's services, edge first, in the
// order a checkout meets them.
func Services() []string {
	return []string{ServiceGateway, ServiceOrders, ServiceCatalog, ServicePayments, ServiceShipping}
}

// ServiceList is the names for a message: "gateway, orders, catalog,
// payments or shipping".
func ServiceList() string {
	names := Services()
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
