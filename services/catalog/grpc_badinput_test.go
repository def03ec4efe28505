package catalog_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	catalogv1 "github.com/mercado-lab/mercado/proto/catalog/v1"
)

// checkStatus checks err is a status with code whose message contains msg
// and tells nothing of the inside.
func checkStatus(t *testing.T, err error, code codes.Code, msg string) {
	t.Helper()
	s := status.Convert(err)
	if s.Code() != code || !strings.Contains(s.Message(), msg) {
		t.Errorf("status = %v %q, want %v containing %q", s.Code(), s.Message(), code, msg)
	}
	for _, l := range []string{"rpc error", ".go:", "panic", "runtime", "goroutine", "SELECT", "postgres"} {
		if strings.Contains(s.Message(), l) {
			t.Errorf("message %q leaks %q", s.Message(), l)
		}
	}
}

// The bad-input matrix of catalog's gRPC API, called directly.
func TestGRPCBadInput(t *testing.T) {
	c := startCatalog(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	long := strings.Repeat("x", 65)
	lines := func(n int) []*catalogv1.Line {
		out := make([]*catalogv1.Line, n)
		for i := range out {
			out[i] = &catalogv1.Line{Sku: "tea-sencha", Qty: 1}
		}
		return out
	}
	reserve := func(orderID string, ls ...*catalogv1.Line) error {
		_, err := c.ReserveStock(ctx, &catalogv1.ReserveStockRequest{OrderId: orderID, Lines: ls})
		return err
	}
	for _, tc := range []struct {
		name string
		call func() error
		code codes.Code
		msg  string
	}{
		{"GetProduct: empty sku", func() error { _, err := c.GetProduct(ctx, &catalogv1.GetProductRequest{}); return err },
			codes.InvalidArgument, "sku is required"},
		{"GetProduct: sku over 64", func() error { _, err := c.GetProduct(ctx, &catalogv1.GetProductRequest{Sku: long}); return err },
			codes.InvalidArgument, "sku is longer than 64 characters"},
		{"GetProduct: unknown sku", func() error {
			_, err := c.GetProduct(ctx, &catalogv1.GetProductRequest{Sku: "no-such-thing"})
			return err
		}, codes.NotFound, `unknown sku "no-such-thing"`},
		{"ReserveStock: empty order id", func() error { return reserve("", lines(1)...) }, codes.InvalidArgument, "order_id is required"},
		{"ReserveStock: order id over 64", func() error { return reserve(long, lines(1)...) }, codes.InvalidArgument, "order_id is longer than 64"},
		{"ReserveStock: no lines", func() error { return reserve("o1") }, codes.InvalidArgument, "1 to 50 lines, got 0"},
		{"ReserveStock: 51 lines", func() error { return reserve("o1", lines(51)...) }, codes.InvalidArgument, "1 to 50 lines, got 51"},
		{"ReserveStock: empty sku", func() error { return reserve("o1", &catalogv1.Line{Qty: 1}) }, codes.InvalidArgument, "lines[0].sku is required"},
		{"ReserveStock: sku over 64", func() error { return reserve("o1", &catalogv1.Line{Sku: long, Qty: 1}) }, codes.InvalidArgument, "lines[0].sku is longer than 64"},
		{"ReserveStock: qty 0", func() error { return reserve("o1", &catalogv1.Line{Sku: "tea-sencha"}) }, codes.InvalidArgument, "lines[0].qty must be 1 to 1000, got 0"},
		{"ReserveStock: negative qty", func() error { return reserve("o1", &catalogv1.Line{Sku: "tea-sencha", Qty: -3}) }, codes.InvalidArgument, "got -3"},
		{"ReserveStock: huge qty", func() error { return reserve("o1", &catalogv1.Line{Sku: "tea-sencha", Qty: 1 << 62}) }, codes.InvalidArgument, "lines[0].qty must be 1 to 1000"},
		{"ReserveStock: unknown sku", func() error { return reserve("o1", &catalogv1.Line{Sku: "no-such-thing", Qty: 1}) }, codes.NotFound, `unknown sku "no-such-thing"`},
		{"ReleaseStock: empty id", func() error { _, err := c.ReleaseStock(ctx, &catalogv1.ReleaseStockRequest{}); return err },
			codes.InvalidArgument, "reservation_id is required"},
		{"ReleaseStock: id over 64", func() error {
			_, err := c.ReleaseStock(ctx, &catalogv1.ReleaseStockRequest{ReservationId: long})
			return err
		}, codes.InvalidArgument, "reservation_id is longer than 64"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkStatus(t, tc.call(), tc.code, tc.msg) })
	}
}

// A request over the 1 MiB message limit is refused by the server before
// any handler runs: ResourceExhausted.
func TestGRPCMessageTooLarge(t *testing.T) {
	c := startCatalog(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.GetProduct(ctx, &catalogv1.GetProductRequest{Sku: strings.Repeat("s", 2<<20)})
	if got := status.Code(err); got != codes.ResourceExhausted {
		t.Errorf("a 2 MiB request: %v, want ResourceExhausted", err)
	}
}
