package orders_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	mercado "github.com/mercado-lab/mercado/lab/shop"
	ordersv1 "github.com/mercado-lab/mercado/proto/orders/v1"
)

// startOrders runs the whole shop on loopback, so that a well-formed
// checkout can reach catalog, and returns a client of orders.
func startOrders(t *testing.T) ordersv1.OrdersServiceClient {
	t.Helper()
	s, err := mercado.Start(context.Background(), mercado.EphemeralConfig(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("starting the shop: %v", err)
	}
	cc, err := grpc.NewClient(s.Orders.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		_ = s.Stop()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cc.Close()
		if err := s.Stop(); err != nil {
			t.Errorf("stopping the shop: %v", err)
		}
	})
	return ordersv1.NewOrdersServiceClient(cc)
}

// The bad-input matrix of orders' gRPC API, called directly.
func TestGRPCBadInput(t *testing.T) {
	c := startOrders(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	items := func(n int) []*ordersv1.Item {
		out := make([]*ordersv1.Item, n)
		for i := range out {
			out[i] = &ordersv1.Item{Sku: "tea-sencha", Qty: 1}
		}
		return out
	}
	place := func(change func(*ordersv1.PlaceOrderRequest)) func() error {
		return func() error {
			req := &ordersv1.PlaceOrderRequest{Customer: "ada", Address: "1 Loop Rd", Items: items(1), IdempotencyKey: "k", RequestId: "k"}
			change(req)
			_, err := c.PlaceOrder(ctx, req)
			return err
		}
	}
	getOrder := func(id string) func() error {
		return func() error { _, err := c.GetOrder(ctx, &ordersv1.GetOrderRequest{OrderId: id}); return err }
	}
	for _, tc := range []struct {
		name string
		call func() error
		code codes.Code
		msg  string
	}{
		{"PlaceOrder: no customer", place(func(r *ordersv1.PlaceOrderRequest) { r.Customer = "" }), codes.InvalidArgument, "customer must be 1 to 500 bytes"},
		{"PlaceOrder: customer over 500 bytes", place(func(r *ordersv1.PlaceOrderRequest) { r.Customer = strings.Repeat("c", 501) }), codes.InvalidArgument, "customer must be 1 to 500 bytes"},
		{"PlaceOrder: no address", place(func(r *ordersv1.PlaceOrderRequest) { r.Address = "" }), codes.InvalidArgument, "address must be 1 to 500 bytes"},
		{"PlaceOrder: address over 500 bytes", place(func(r *ordersv1.PlaceOrderRequest) { r.Address = strings.Repeat("a", 501) }), codes.InvalidArgument, "address must be 1 to 500 bytes"},
		{"PlaceOrder: no items", place(func(r *ordersv1.PlaceOrderRequest) { r.Items = nil }), codes.InvalidArgument, "1 to 50 items, got 0"},
		{"PlaceOrder: 51 items", place(func(r *ordersv1.PlaceOrderRequest) { r.Items = items(51) }), codes.InvalidArgument, "1 to 50 items, got 51"},
		{"PlaceOrder: empty sku", place(func(r *ordersv1.PlaceOrderRequest) { r.Items[0].Sku = "" }), codes.InvalidArgument, "items[0].sku must be 1 to 64"},
		{"PlaceOrder: sku over 64", place(func(r *ordersv1.PlaceOrderRequest) { r.Items[0].Sku = strings.Repeat("s", 65) }), codes.InvalidArgument, "items[0].sku must be 1 to 64"},
		{"PlaceOrder: qty 0", place(func(r *ordersv1.PlaceOrderRequest) { r.Items[0].Qty = 0 }), codes.InvalidArgument, "items[0].qty must be 1 to 1000, got 0"},
		{"PlaceOrder: negative qty", place(func(r *ordersv1.PlaceOrderRequest) { r.Items[0].Qty = -7 }), codes.InvalidArgument, "got -7"},
		{"PlaceOrder: huge qty", place(func(r *ordersv1.PlaceOrderRequest) { r.Items[0].Qty = 1 << 62 }), codes.InvalidArgument, "items[0].qty must be 1 to 1000"},
		{"PlaceOrder: idempotency key over 255", place(func(r *ordersv1.PlaceOrderRequest) { r.IdempotencyKey = strings.Repeat("k", 256) }), codes.InvalidArgument, "idempotency_key is longer than 255"},
		{"PlaceOrder: request id over 255", place(func(r *ordersv1.PlaceOrderRequest) { r.RequestId = strings.Repeat("r", 256) }), codes.InvalidArgument, "request_id is longer than 255"},
		{"PlaceOrder: unknown sku", place(func(r *ordersv1.PlaceOrderRequest) {
			r.Items[0].Sku, r.IdempotencyKey, r.RequestId = "no-such-thing", "unknown-sku", "unknown-sku"
		}), codes.NotFound, `unknown sku "no-such-thing"`},
		{"GetOrder: no id", getOrder(""), codes.InvalidArgument, "order_id must be 1 to 64 bytes"},
		{"GetOrder: id over 64", getOrder(strings.Repeat("o", 65)), codes.InvalidArgument, "order_id must be 1 to 64 bytes"},
		{"GetOrder: unknown id", getOrder("ord_0000000000000000"), codes.NotFound, "ord_0000000000000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			s := status.Convert(err)
			if s.Code() != tc.code || !strings.Contains(s.Message(), tc.msg) {
				t.Errorf("status = %v %q, want %v containing %q", s.Code(), s.Message(), tc.code, tc.msg)
			}
			for _, l := range []string{"rpc error", ".go:", "panic", "runtime", "SELECT", "postgres", "desc ="} {
				if strings.Contains(s.Message(), l) {
					t.Errorf("message %q leaks %q", s.Message(), l)
				}
			}
		})
	}
}
