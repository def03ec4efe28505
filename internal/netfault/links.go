package netfault

import (
	"fmt"
	"slices"
	"strings"
)

// The links of the shop, named caller-callee: every connection one
// service opens to another.
const (
	GatewayOrders  = "gateway-orders"
	GatewayCatalog = "gateway-catalog"
	OrdersCatalog  = "orders-catalog"
	OrdersPayments = "orders-payments"
	OrdersShipping = "orders-shipping"
)

// Links are the shop's links, edge first.
func Links() []string {
	return []string{GatewayOrders, GatewayCatalog, OrdersCatalog, OrdersPayments, OrdersShipping}
}

// LinkList is Links for a message: "gateway-orders, ..., orders-shipping".
func LinkList() string { return strings.Join(Links(), ", ") }

// CheckLink refuses a name that is not one of Links, naming them. The
// name is quoted only when it is short and plain, so that a refusal never
// echoes much of a client's text.
func CheckLink(name string) error {
	if slices.Contains(Links(), name) {
		return nil
	}
	if len(name) > 40 || strings.ContainsFunc(name, func(r rune) bool { return !('a' <= r && r <= 'z' || r == '-') }) {
		return fmt.Errorf("unknown link (want one of %s)", LinkList())
	}
	return fmt.Errorf("unknown link %q (want one of %s)", name, LinkList())
}
