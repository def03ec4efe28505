package shipping_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	shippingv1 "github.com/mercado-lab/mercado/proto/shipping/v1"
	"github.com/mercado-lab/mercado/services/shipping"
)

func startShipping(t *testing.T) shippingv1.ShippingServiceClient {
	t.Helper()
	cfg := shipping.DefaultConfig()
	cfg.Addr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	p, err := shipping.Start(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		cancel()
		t.Fatalf("Start: %v", err)
	}
	cc, err := grpc.NewClient(p.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cc.Close()
		cancel()
		if err := p.Wait(); err != nil {
			t.Errorf("shipping stopped with %v", err)
		}
	})
	return shippingv1.NewShippingServiceClient(cc)
}

func TestGRPC(t *testing.T) {
	c := startShipping(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	req := &shippingv1.CreateShipmentRequest{OrderId: "ord_1", Address: "1 Loop Rd", Items: []*shippingv1.Item{{Sku: "tea-sencha", Qty: 1}}}
	first, err := c.CreateShipment(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if first.GetShipmentId() == "" || first.GetOrderId() != "ord_1" || first.GetAddress() != "1 Loop Rd" || first.GetStatus() != shipping.StatusBooked {
		t.Errorf("CreateShipment = %v", first)
	}
	again, err := c.CreateShipment(ctx, req)
	if err != nil || again.GetShipmentId() != first.GetShipmentId() {
		t.Errorf("second CreateShipment for ord_1 = %v, %v; want shipment %q", again, err, first.GetShipmentId())
	}
	got, err := c.GetShipment(ctx, &shippingv1.GetShipmentRequest{ShipmentId: first.GetShipmentId()})
	if err != nil || got.GetOrderId() != "ord_1" {
		t.Errorf("GetShipment = %v, %v", got, err)
	}

	errs := []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"GetShipment unknown", func() error {
			_, err := c.GetShipment(ctx, &shippingv1.GetShipmentRequest{ShipmentId: "shp-404"})
			return err
		}, codes.NotFound},
		{"GetShipment without id", func() error {
			_, err := c.GetShipment(ctx, &shippingv1.GetShipmentRequest{})
			return err
		}, codes.InvalidArgument},
		{"CreateShipment without items", func() error {
			_, err := c.CreateShipment(ctx, &shippingv1.CreateShipmentRequest{OrderId: "ord_2", Address: "x"})
			return err
		}, codes.InvalidArgument},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); status.Code(err) != tt.want {
				t.Errorf("code = %v (%v), want %v", status.Code(err), err, tt.want)
			}
		})
	}
}
