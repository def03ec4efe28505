package orders_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/services/orders"
)

// fanoutShop is a shop over fakes in mode m with fanout f, catalog taking
// catalog and the fraud screen fraud.
func fanoutShop(t *testing.T, m mode.Mode, f mode.Fanout, catalog, fraud time.Duration) *shop {
	t.Helper()
	s := newShop(t)
	st := settingsOf(m)
	st.Mechanisms.Fanout = f
	s.settings.Store(st)
	s.catalog.delay, s.fraud.delay = catalog, fraud
	return s
}

// Parallel, the reservation and the screen start together under one
// deadline — the same remaining budget — and the step costs the slower
// of the two; sequential, the screen starts when the reservation is done
// and the step costs the sum. The fakes run on synctest's clock, so the
// durations are exact.
func TestFanoutSharesOneBudgetAndCostsTheSlowerBranch(t *testing.T) {
	const catalog, fraud = 250 * time.Millisecond, 300 * time.Millisecond
	for _, tc := range []struct {
		name   string
		fanout mode.Fanout
		// wantGap is how long after the reservation the screen starts;
		// wantTook how long the checkout takes.
		wantGap, wantTook time.Duration
	}{
		{"parallel", mode.FanoutParallel, 0, fraud},
		{"sequential", mode.FanoutSequential, catalog, catalog + fraud},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := fanoutShop(t, mode.Budgeted, tc.fanout, catalog, fraud)
				ctx, cancel := context.WithTimeout(context.Background(), 900*time.Millisecond)
				defer cancel()
				start := time.Now()
				o, err := s.svc.PlaceOrder(ctx, request())
				took := time.Since(start)
				if err != nil || o.Status != orders.StatusConfirmed {
					t.Fatalf("PlaceOrder = %v, %v; want a confirmed order", o.Status, err)
				}
				if took != tc.wantTook {
					t.Errorf("the checkout took %v, want %v", took, tc.wantTook)
				}
				if gap := s.fraud.at[0].Sub(s.catalog.reserveAt[0]); gap != tc.wantGap {
					t.Errorf("the screen started %v after the reservation, want %v", gap, tc.wantGap)
				}
				// Both branches see the request's deadline; in parallel the
				// same remaining budget, in series what the first left.
				rc, fc := s.catalog.reserveCtx[0], s.fraud.seen[0]
				if !rc.hasDeadline || !fc.hasDeadline {
					t.Fatalf("a branch ran without the request's deadline: catalog %+v, fraud %+v", rc, fc)
				}
				if got, want := rc.deadlineIn-fc.deadlineIn, tc.wantGap; got != want {
					t.Errorf("catalog saw %v left, the screen %v: a difference of %v, want %v", rc.deadlineIn, fc.deadlineIn, got, want)
				}
				if o.ReservationID != "res-1" || o.TotalCents == 0 {
					t.Errorf("the order lost its reservation: %+v", o)
				}
			})
		})
	}
}

// The first critical failure cancels its sibling at once, and nothing is
// lost: a reservation taken is given back, one whose answer never came is
// marked for the worker, and the checkout fails with the failure that came
// first.
func TestFanoutFirstFailureCancelsItsSibling(t *testing.T) {
	for _, tc := range []struct {
		name              string
		catalog, fraud    time.Duration
		setup             func(*shop)
		wantTook          time.Duration
		wantCode          codes.Code
		wantFailure       string
		wantRelease, held bool
		wantCharged       int
	}{
		{
			name: "declined while the stock is being reserved", catalog: 250 * time.Millisecond, fraud: 10 * time.Millisecond,
			setup:    func(s *shop) { s.fraud.decline = true },
			wantTook: 10 * time.Millisecond, wantCode: codes.FailedPrecondition,
			wantFailure: "screening: the order was declined by the fraud screen", held: true,
		},
		{
			name: "declined after the stock was reserved", catalog: 10 * time.Millisecond, fraud: 100 * time.Millisecond,
			setup:    func(s *shop) { s.fraud.decline = true },
			wantTook: 100 * time.Millisecond, wantCode: codes.FailedPrecondition,
			wantFailure: "screening: the order was declined by the fraud screen", wantRelease: true,
		},
		{
			name: "out of stock while the screen runs", catalog: 10 * time.Millisecond, fraud: 300 * time.Millisecond,
			setup:    func(s *shop) { s.catalog.reserveErr = serviceStatus(codes.FailedPrecondition, "out of stock") },
			wantTook: 10 * time.Millisecond, wantCode: codes.FailedPrecondition,
			wantFailure: "reserving stock: out of stock",
		},
		{
			name: "the screen unavailable", catalog: 50 * time.Millisecond, fraud: 20 * time.Millisecond,
			setup:    func(s *shop) { s.fraud.err = serviceStatus(codes.Unavailable, "fraud screen unavailable") },
			wantTook: 20 * time.Millisecond, wantCode: codes.Unavailable,
			wantFailure: "screening for fraud: fraud screen unavailable", held: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := fanoutShop(t, mode.Budgeted, mode.FanoutParallel, tc.catalog, tc.fraud)
				tc.setup(s)
				start := time.Now()
				o, err := s.svc.PlaceOrder(context.Background(), request())
				took := time.Since(start)
				if err == nil {
					t.Fatal("PlaceOrder succeeded, want an error")
				}
				if took != tc.wantTook {
					t.Errorf("the checkout took %v, want %v: the sibling was not cancelled", took, tc.wantTook)
				}
				if got := apperr.GRPCCode(err); got != tc.wantCode {
					t.Errorf("GRPCCode(err) = %v, want %v (err %v)", got, tc.wantCode, err)
				}
				stored := s.store.orders[o.ID]
				if stored.Status != orders.StatusFailed || stored.Failure != tc.wantFailure {
					t.Errorf("stored order: %q %q, want failed %q", stored.Status, stored.Failure, tc.wantFailure)
				}
				if got := slices.Equal(s.catalog.releases(), []string{"res-1"}); got != tc.wantRelease {
					t.Errorf("released %v, want res-1 released: %v", s.catalog.releases(), tc.wantRelease)
				}
				if stored.StockHeld != tc.held {
					t.Errorf("StockHeld = %v, want %v (a reservation cut short is left for the worker)", stored.StockHeld, tc.held)
				}
				if n := len(s.payments.charged); n != 0 {
					t.Errorf("%d charges after a failed step, want none", n)
				}
			})
		})
	}
}

// Sequential, a declined screen comes after the reservation, which is
// given back; a failed reservation is not followed by a screen.
func TestFanoutSequential(t *testing.T) {
	s := fanoutShop(t, mode.Naive, mode.FanoutSequential, 0, 0)
	s.fraud.decline = true
	o, err := s.svc.PlaceOrder(context.Background(), request())
	if apperr.GRPCCode(err) != codes.FailedPrecondition {
		t.Fatalf("PlaceOrder = %v, want a declined order", err)
	}
	if got := s.catalog.releases(); !slices.Equal(got, []string{"res-1"}) {
		t.Errorf("released %v, want res-1", got)
	}
	if s.store.orders[o.ID].StockHeld {
		t.Error("a released reservation is marked held")
	}

	s = fanoutShop(t, mode.Naive, mode.FanoutSequential, 0, 0)
	s.catalog.reserveErr = serviceStatus(codes.FailedPrecondition, "out of stock")
	if _, err := s.svc.PlaceOrder(context.Background(), request()); err == nil {
		t.Fatal("PlaceOrder succeeded out of stock")
	}
	if n := len(s.fraud.screened); n != 0 {
		t.Errorf("the screen was asked %d times after the reservation failed, want 0", n)
	}
}
