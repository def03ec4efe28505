package shipping_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	shippingv1 "github.com/mercado-lab/mercado/proto/shipping/v1"
)

// The bad-input matrix of shipping's gRPC API, called directly.
func TestGRPCBadInput(t *testing.T) {
	c := startShipping(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	items := func(n int) []*shippingv1.Item {
		out := make([]*shippingv1.Item, n)
		for i := range out {
			out[i] = &shippingv1.Item{Sku: "tea-sencha", Qty: 1}
		}
		return out
	}
	create := func(change func(*shippingv1.CreateShipmentRequest)) func() error {
		return func() error {
			req := &shippingv1.CreateShipmentRequest{OrderId: "ord_1", Address: "1 Loop Rd", Items: items(1)}
			change(req)
			_, err := c.CreateShipment(ctx, req)
			return err
		}
	}
	for _, tc := range []struct {
		name string
		call func() error
		code codes.Code
		msg  string
	}{
		{"CreateShipment: no order id", create(func(r *shippingv1.CreateShipmentRequest) { r.OrderId = "" }), codes.InvalidArgument, "order_id is required"},
		{"CreateShipment: order id over 64", create(func(r *shippingv1.CreateShipmentRequest) { r.OrderId = strings.Repeat("o", 65) }), codes.InvalidArgument, "order_id is longer than 64"},
		{"CreateShipment: no address", create(func(r *shippingv1.CreateShipmentRequest) { r.Address = "" }), codes.InvalidArgument, "address is required"},
		{"CreateShipment: address over 500 bytes", create(func(r *shippingv1.CreateShipmentRequest) { r.Address = strings.Repeat("a", 501) }), codes.InvalidArgument, "address is longer than 500"},
		{"CreateShipment: no items", create(func(r *shippingv1.CreateShipmentRequest) { r.Items = nil }), codes.InvalidArgument, "1 to 50 items, got 0"},
		{"CreateShipment: 51 items", create(func(r *shippingv1.CreateShipmentRequest) { r.Items = items(51) }), codes.InvalidArgument, "1 to 50 items, got 51"},
		{"CreateShipment: empty sku", create(func(r *shippingv1.CreateShipmentRequest) { r.Items[0].Sku = "" }), codes.InvalidArgument, "items[0].sku must be 1 to 64"},
		{"CreateShipment: sku over 64", create(func(r *shippingv1.CreateShipmentRequest) { r.Items[0].Sku = strings.Repeat("s", 65) }), codes.InvalidArgument, "items[0].sku must be 1 to 64"},
		{"CreateShipment: qty 0", create(func(r *shippingv1.CreateShipmentRequest) { r.Items[0].Qty = 0 }), codes.InvalidArgument, "items[0].qty must be 1 to 1000, got 0"},
		{"CreateShipment: negative qty", create(func(r *shippingv1.CreateShipmentRequest) { r.Items[0].Qty = -1 }), codes.InvalidArgument, "got -1"},
		{"CreateShipment: huge qty", create(func(r *shippingv1.CreateShipmentRequest) { r.Items[0].Qty = 1 << 62 }), codes.InvalidArgument, "items[0].qty must be 1 to 1000"},
		{"GetShipment: no id", func() error { _, err := c.GetShipment(ctx, &shippingv1.GetShipmentRequest{}); return err }, codes.InvalidArgument, "shipment_id is required"},
		{"GetShipment: id over 64", func() error {
			_, err := c.GetShipment(ctx, &shippingv1.GetShipmentRequest{ShipmentId: strings.Repeat("s", 65)})
			return err
		}, codes.InvalidArgument, "shipment_id is longer than 64"},
		{"GetShipment: unknown id", func() error {
			_, err := c.GetShipment(ctx, &shippingv1.GetShipmentRequest{ShipmentId: "shp_unknown"})
			return err
		}, codes.NotFound, "shp_unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			s := status.Convert(err)
			if s.Code() != tc.code || !strings.Contains(s.Message(), tc.msg) {
				t.Errorf("status = %v %q, want %v containing %q", s.Code(), s.Message(), tc.code, tc.msg)
			}
			for _, l := range []string{"rpc error", ".go:", "panic", "runtime", "SELECT", "postgres"} {
				if strings.Contains(s.Message(), l) {
					t.Errorf("message %q leaks %q", s.Message(), l)
				}
			}
		})
	}
}
