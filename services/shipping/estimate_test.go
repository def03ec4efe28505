package shipping_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/sim"
	shippingv1 "github.com/mercado-lab/mercado/proto/shipping/v1"
	"github.com/mercado-lab/mercado/services/shipping"
)

// A quote is the carrier's window and books nothing.
func TestEstimateDelivery(t *testing.T) {
	store := shipping.NewMemStore()
	svc := newService(t, store, nil, mode.Budgeted)
	got, err := svc.EstimateDelivery(t.Context(), "1 Loop Rd", []shipping.Item{{SKU: "tea-sencha", Qty: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if got.MinBusinessDays < 1 || got.MaxBusinessDays < got.MinBusinessDays {
		t.Errorf("EstimateDelivery = %+v, want a window of at least one business day", got)
	}
	// The store holds no shipment for the quote: booking one afterwards
	// creates the order's first.
	sh, err := svc.CreateShipment(t.Context(), shipment("quote"))
	if err != nil || sh.ID == "" {
		t.Errorf("CreateShipment after a quote = %+v, %v", sh, err)
	}
}

// The quote has its own fault method: a hang there leaves bookings alone,
// and ends with the caller's context in budgeted mode.
func TestEstimateDeliveryHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 150 * time.Millisecond
		svc := newService(t, shipping.NewMemStore(), faults.Set{sim.ShippingEstimateDelivery: {Hang: time.Minute}}, mode.Budgeted)
		ctx, cancel := context.WithTimeout(t.Context(), timeout)
		defer cancel()
		start := time.Now()
		_, err := svc.EstimateDelivery(ctx, "1 Loop Rd", []shipping.Item{{SKU: "tea-sencha", Qty: 1}})
		if took := time.Since(start); took != timeout {
			t.Errorf("a hung quote took %v, want the caller's %v", took, timeout)
		}
		var e *apperr.Error
		if !errors.As(err, &e) || e.Code != apperr.Timeout {
			t.Errorf("error = %v, want a timeout", err)
		}
		if _, err := svc.CreateShipment(t.Context(), shipment("ord_1")); err != nil {
			t.Errorf("CreateShipment while quotes hang: %v", err)
		}
	})
}

func TestEstimateDeliveryGRPC(t *testing.T) {
	c := startShipping(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := c.EstimateDelivery(ctx, &shippingv1.EstimateDeliveryRequest{
		Address: "1 Loop Rd", Items: []*shippingv1.Item{{Sku: "tea-sencha", Qty: 1}}})
	if err != nil || got.GetMinBusinessDays() < 1 || got.GetMaxBusinessDays() < got.GetMinBusinessDays() {
		t.Errorf("EstimateDelivery = %v, %v", got, err)
	}
	for _, tc := range []struct {
		name string
		req  *shippingv1.EstimateDeliveryRequest
		msg  string
	}{
		{"no address", &shippingv1.EstimateDeliveryRequest{Items: []*shippingv1.Item{{Sku: "tea-sencha", Qty: 1}}}, "address is required"},
		{"no items", &shippingv1.EstimateDeliveryRequest{Address: "1 Loop Rd"}, "1 to 50 items, got 0"},
		{"qty 0", &shippingv1.EstimateDeliveryRequest{Address: "1 Loop Rd", Items: []*shippingv1.Item{{Sku: "tea-sencha"}}}, "items[0].qty must be 1 to 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.EstimateDelivery(ctx, tc.req)
			st := status.Convert(err)
			if st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), tc.msg) {
				t.Errorf("EstimateDelivery(%v) = %v, want InvalidArgument with %q", tc.req, err, tc.msg)
			}
		})
	}
}
