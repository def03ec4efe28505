package orders_test

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/services/orders"
)

// TestPlaceOrderModeSwitchMidRequest: a checkout runs wholly in the mode
// its request arrived in (the snapshot its server took, carried in its
// context), whatever is switched while it runs. The switch comes while
// shipping is being called, and shipping fails: the outbox, the
// idempotency key's claim and its completion all follow the starting mode.
func TestPlaceOrderModeSwitchMidRequest(t *testing.T) {
	shippingErr := status.Error(codes.DeadlineExceeded, "carrier did not answer in time")
	for _, tc := range []struct {
		name     string
		from, to mode.Mode
		want     []string
		status   orders.Status
	}{
		{
			name: "budgeted to naive", from: mode.Budgeted, to: mode.Naive,
			want:   []string{"keys.Claim", "store.Create", "catalog.Reserve", "payments.Charge", "shipping.Ship", "store.Update:confirmed", "keys.Complete"},
			status: orders.StatusConfirmed,
		},
		{
			name: "naive to budgeted", from: mode.Naive, to: mode.Budgeted,
			want:   []string{"store.Create", "catalog.Reserve", "payments.Charge", "shipping.Ship", "catalog.Release", "store.Update:failed"},
			status: orders.StatusFailed,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newShop(t)
			s.settings.Store(settingsOf(tc.from))
			ctx, _ := s.settings.Snapshot(context.Background()) // as the server chain does
			s.shipping.err = shippingErr
			s.shipping.during = func() { s.settings.Switch(settingsOf(tc.to)) }

			o, _ := s.svc.PlaceOrder(ctx, request())
			if got := s.settings.Load().Mode; got != tc.to {
				t.Fatalf("the switch did not happen: %v in force", got)
			}
			if got := s.log.get(); !slices.Equal(got, tc.want) {
				t.Errorf("calls = %q, want %q: all of the checkout %s", got, tc.want, tc.from)
			}
			if got := s.store.orders[o.ID].Status; got != tc.status {
				t.Errorf("stored order %q, want %q", got, tc.status)
			}
		})
	}
}
