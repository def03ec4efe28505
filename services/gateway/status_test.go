package gateway

import (
	"testing"

	ordersv1 "github.com/mercado-lab/mercado/proto/orders/v1"
)

// The public API keeps its words for an order's status whatever the wire
// carries (docs/api.md), and leaves the shipment status out until there
// is one.
func TestStatusText(t *testing.T) {
	for p, want := range map[ordersv1.OrderStatus]string{
		ordersv1.OrderStatus_ORDER_STATUS_PENDING:         "pending",
		ordersv1.OrderStatus_ORDER_STATUS_PAYMENT_PENDING: "payment_pending",
		ordersv1.OrderStatus_ORDER_STATUS_CONFIRMED:       "confirmed",
		ordersv1.OrderStatus_ORDER_STATUS_FAILED:          "failed",
		ordersv1.OrderStatus_ORDER_STATUS_UNSPECIFIED:     "",
	} {
		if got := statusText(p); got != want {
			t.Errorf("statusText(%v) = %q, want %q", p, got, want)
		}
	}
	if n := len(ordersv1.OrderStatus_name); n != 5 {
		t.Errorf("the contract has %d order statuses, this test knows 5", n)
	}
	for p, want := range map[ordersv1.ShipmentStatus]string{
		ordersv1.ShipmentStatus_SHIPMENT_STATUS_PENDING:     "pending",
		ordersv1.ShipmentStatus_SHIPMENT_STATUS_BOOKED:      "booked",
		ordersv1.ShipmentStatus_SHIPMENT_STATUS_UNSPECIFIED: "",
	} {
		if got := shipmentStatusText(p); got != want {
			t.Errorf("shipmentStatusText(%v) = %q, want %q", p, got, want)
		}
	}
}
