package orders

import (
	"testing"

	ordersv1 "github.com/mercado-lab/mercado/proto/orders/v1"
	paymentsv1 "github.com/mercado-lab/mercado/proto/payments/v1"
)

// Every order status has its own value on the wire, and every value the
// contract defines but the unspecified one is some order's status.
func TestStatusToProto(t *testing.T) {
	seen := map[ordersv1.OrderStatus]Status{}
	for _, s := range []Status{StatusPending, StatusPaymentPending, StatusConfirmed, StatusFailed} {
		p := statusToProto(s)
		if p == ordersv1.OrderStatus_ORDER_STATUS_UNSPECIFIED {
			t.Errorf("%q has no wire value", s)
		}
		if other, dup := seen[p]; dup {
			t.Errorf("%q and %q both map to %v", s, other, p)
		}
		seen[p] = s
	}
	for v := range ordersv1.OrderStatus_name {
		if p := ordersv1.OrderStatus(v); p != ordersv1.OrderStatus_ORDER_STATUS_UNSPECIFIED && seen[p] == "" {
			t.Errorf("wire value %v is no order's status", p)
		}
	}
}

// A shipment is pending or booked once its order is confirmed, and has no
// status before.
func TestShipmentStatusToProto(t *testing.T) {
	for s, want := range map[ShipmentStatus]ordersv1.ShipmentStatus{
		ShipmentPending: ordersv1.ShipmentStatus_SHIPMENT_STATUS_PENDING,
		ShipmentBooked:  ordersv1.ShipmentStatus_SHIPMENT_STATUS_BOOKED,
		"":              ordersv1.ShipmentStatus_SHIPMENT_STATUS_UNSPECIFIED,
	} {
		if got := shipmentStatusToProto(s); got != want {
			t.Errorf("shipmentStatusToProto(%q) = %v, want %v", s, got, want)
		}
	}
	if n := len(ordersv1.ShipmentStatus_name); n != 3 {
		t.Errorf("the contract has %d shipment statuses, this test knows 3", n)
	}
}

// What payments says of a charge reads as orders' own status; a value this
// version does not know is none of them, so it is never taken for a
// success.
func TestChargeStatusFromProto(t *testing.T) {
	for p, want := range map[paymentsv1.ChargeStatus]ChargeStatus{
		paymentsv1.ChargeStatus_CHARGE_STATUS_PENDING:     ChargePending,
		paymentsv1.ChargeStatus_CHARGE_STATUS_SUCCEEDED:   ChargeSucceeded,
		paymentsv1.ChargeStatus_CHARGE_STATUS_FAILED:      ChargeFailed,
		paymentsv1.ChargeStatus_CHARGE_STATUS_UNSPECIFIED: "",
		paymentsv1.ChargeStatus(99):                       "",
	} {
		if got := chargeStatusFromProto(p); got != want {
			t.Errorf("chargeStatusFromProto(%v) = %q, want %q", p, got, want)
		}
	}
	if n := len(paymentsv1.ChargeStatus_name); n != 4 {
		t.Errorf("the contract has %d charge statuses, this test knows 4", n)
	}
}
