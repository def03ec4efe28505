package payments_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	paymentsv1 "github.com/mercado-lab/mercado/proto/payments/v1"
)

// The bad-input matrix of payments' gRPC API, called directly. None of
// the refused charges reaches the store.
func TestGRPCBadInput(t *testing.T) {
	c, _ := startPayments(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ok := func() *paymentsv1.ChargeRequest {
		return &paymentsv1.ChargeRequest{PaymentKey: "pay_1", OrderId: "ord_1", Customer: "ada", AmountCents: 100, RequestId: "r1"}
	}
	charge := func(change func(*paymentsv1.ChargeRequest)) func() error {
		return func() error {
			req := ok()
			change(req)
			_, err := c.CreateCharge(ctx, req)
			return err
		}
	}
	okScreen := func() *paymentsv1.ScreenOrderRequest {
		return &paymentsv1.ScreenOrderRequest{OrderId: "ord_1", Customer: "ada", Address: "1 Loop Rd",
			Items: []*paymentsv1.ScreenItem{{Sku: "tea-sencha", Qty: 2}}}
	}
	screen := func(change func(*paymentsv1.ScreenOrderRequest)) func() error {
		return func() error {
			req := okScreen()
			change(req)
			_, err := c.ScreenOrder(ctx, req)
			return err
		}
	}
	many := make([]*paymentsv1.ScreenItem, 51)
	for i := range many {
		many[i] = &paymentsv1.ScreenItem{Sku: "tea-sencha", Qty: 1}
	}
	for _, tc := range []struct {
		name string
		call func() error
		code codes.Code
		msg  string
	}{
		{"CreateCharge: no payment key", charge(func(r *paymentsv1.ChargeRequest) { r.PaymentKey = "" }), codes.InvalidArgument, "payment_key is required"},
		{"CreateCharge: payment key over 255", charge(func(r *paymentsv1.ChargeRequest) { r.PaymentKey = strings.Repeat("k", 256) }), codes.InvalidArgument, "payment_key is longer than 255"},
		{"CreateCharge: no order id", charge(func(r *paymentsv1.ChargeRequest) { r.OrderId = "" }), codes.InvalidArgument, "order_id is required"},
		{"CreateCharge: order id over 64", charge(func(r *paymentsv1.ChargeRequest) { r.OrderId = strings.Repeat("o", 65) }), codes.InvalidArgument, "order_id is longer than 64"},
		{"CreateCharge: customer over 500 bytes", charge(func(r *paymentsv1.ChargeRequest) { r.Customer = strings.Repeat("c", 501) }), codes.InvalidArgument, "customer is longer than 500"},
		{"CreateCharge: request id over 255", charge(func(r *paymentsv1.ChargeRequest) { r.RequestId = strings.Repeat("r", 256) }), codes.InvalidArgument, "request_id is longer than 255"},
		{"CreateCharge: zero amount", charge(func(r *paymentsv1.ChargeRequest) { r.AmountCents = 0 }), codes.InvalidArgument, "amount_cents must be positive, got 0"},
		{"CreateCharge: negative amount", charge(func(r *paymentsv1.ChargeRequest) { r.AmountCents = -100 }), codes.InvalidArgument, "amount_cents must be positive, got -100"},
		{"GetCharge: no key", func() error { _, err := c.GetCharge(ctx, &paymentsv1.GetChargeRequest{}); return err }, codes.InvalidArgument, "payment_key is required"},
		{"GetCharge: key over 255", func() error {
			_, err := c.GetCharge(ctx, &paymentsv1.GetChargeRequest{PaymentKey: strings.Repeat("k", 256)})
			return err
		}, codes.InvalidArgument, "payment_key is longer than 255"},
		{"GetCharge: unknown key", func() error {
			_, err := c.GetCharge(ctx, &paymentsv1.GetChargeRequest{PaymentKey: "pay_unknown"})
			return err
		}, codes.NotFound, "pay_unknown"},
		{"VoidCharge: no key", func() error { _, err := c.VoidCharge(ctx, &paymentsv1.VoidChargeRequest{}); return err }, codes.InvalidArgument, "payment_key is required"},
		{"VoidCharge: key over 255", func() error {
			_, err := c.VoidCharge(ctx, &paymentsv1.VoidChargeRequest{PaymentKey: strings.Repeat("k", 256)})
			return err
		}, codes.InvalidArgument, "payment_key is longer than 255"},
		{"ScreenOrder: no order id", screen(func(r *paymentsv1.ScreenOrderRequest) { r.OrderId = "" }), codes.InvalidArgument, "order_id is required"},
		{"ScreenOrder: order id over 64", screen(func(r *paymentsv1.ScreenOrderRequest) { r.OrderId = strings.Repeat("o", 65) }), codes.InvalidArgument, "order_id is longer than 64"},
		{"ScreenOrder: no customer", screen(func(r *paymentsv1.ScreenOrderRequest) { r.Customer = "" }), codes.InvalidArgument, "customer must be 1 to 500 bytes"},
		{"ScreenOrder: no address", screen(func(r *paymentsv1.ScreenOrderRequest) { r.Address = "" }), codes.InvalidArgument, "address must be 1 to 500 bytes"},
		{"ScreenOrder: no items", screen(func(r *paymentsv1.ScreenOrderRequest) { r.Items = nil }), codes.InvalidArgument, "an order needs 1 to 50 items, got 0"},
		{"ScreenOrder: 51 items", screen(func(r *paymentsv1.ScreenOrderRequest) { r.Items = many }), codes.InvalidArgument, "an order needs 1 to 50 items, got 51"},
		{"ScreenOrder: no sku", screen(func(r *paymentsv1.ScreenOrderRequest) { r.Items[0].Sku = "" }), codes.InvalidArgument, "items[0].sku must be 1 to 64"},
		{"ScreenOrder: zero qty", screen(func(r *paymentsv1.ScreenOrderRequest) { r.Items[0].Qty = 0 }), codes.InvalidArgument, "items[0].qty must be 1 to 1000, got 0"},
		{"ScreenOrder: qty over 1000", screen(func(r *paymentsv1.ScreenOrderRequest) { r.Items[0].Qty = 1001 }), codes.InvalidArgument, "items[0].qty must be 1 to 1000, got 1001"},
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
