package orders_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/services/orders"
)

// sweepShop is a Service whose checkouts can be cut off half way, as when
// orders' process dies: the order stays pending in the store and its key
// stays claimed.
type sweepShop struct {
	*workerShop
	keys *orders.MemKeys
}

func newSweepShop(t *testing.T, store orders.Store) *sweepShop {
	t.Helper()
	log := &callLog{}
	w := &workerShop{
		store: orders.NewMemStore(), catalog: &fakeCatalog{log: log},
		payments: &fakePayments{log: log}, shipping: &fakeShipping{log: log},
	}
	if store == nil {
		store = w.store
	}
	keys := orders.NewMemKeys(store)
	svc, err := orders.NewService(orders.Deps{
		Store: store, Keys: keys, Catalog: w.catalog, Payments: w.payments, Fraud: &fakeFraud{}, Shipping: w.shipping, Audit: &fakeAudit{},
		Settings: mode.NewLive(settingsOf(mode.Budgeted)), Log: discard(),
	})
	if err != nil {
		t.Fatal(err)
	}
	w.svc = svc
	return &sweepShop{workerShop: w, keys: keys}
}

// abandoned stores what a checkout cut off after its charge was sent
// leaves behind: a pending order, and its key claimed with no answer.
func (s *sweepShop) abandoned(t *testing.T) orders.Order {
	t.Helper()
	ctx := context.Background()
	req := request()
	now := time.Now()
	if _, claimed, err := s.keys.Claim(ctx, req.IdempotencyKey, req.Hash(), now, now.Add(orders.KeyLease)); !claimed || err != nil {
		t.Fatalf("Claim = %v, %v", claimed, err)
	}
	o := orders.Order{
		ID: "ord_abandoned", Status: orders.StatusPending, Customer: req.Customer, Items: req.Items,
		Address: req.Address, PaymentKey: "pay_ord_abandoned", RequestID: req.RequestID,
		IdempotencyKey: req.IdempotencyKey, CreatedAt: now, UpdatedAt: now,
	}
	if err := s.store.Create(ctx, o); err != nil {
		t.Fatal(err)
	}
	return o
}

// replay asks again with the checkout's key and body.
func (s *sweepShop) replay(t *testing.T) (orders.Order, error) {
	t.Helper()
	return s.svc.PlaceOrder(context.Background(), request())
}

// The sweeper settles an order left pending by a request that died, by
// asking payments under the order's own key, and answers the checkout's
// idempotency key so the client's retry gets the outcome.
func TestSweepAbandonedOrders(t *testing.T) {
	notFound := status.Error(codes.NotFound, "no charge under payment key")
	tests := []struct {
		name         string
		got          orders.Charge
		getErr       error
		voided       orders.Charge
		wantSettled  int
		wantStatus   orders.Status
		wantRelease  bool
		wantReplay   orders.Status // the order status a retry gets; "" for a fresh claim
		wantKeyState string        // "answered", "released" or "held"
	}{
		{
			name: "charged: confirmed, shipped, key answered", got: orders.Charge{ID: "ch-9", Status: "succeeded"},
			wantSettled: 1, wantStatus: orders.StatusConfirmed, wantReplay: orders.StatusConfirmed, wantKeyState: "answered",
		},
		{
			name: "never charged: voided, failed, stock released, key released", getErr: notFound,
			voided: orders.Charge{ID: "ch-void", Status: "failed"}, wantSettled: 1, wantStatus: orders.StatusFailed,
			wantRelease: true, wantKeyState: "released",
		},
		{
			name: "still pending at the provider: payment_pending, key answered", got: orders.Charge{ID: "ch-9", Status: "pending"},
			wantSettled: 1, wantStatus: orders.StatusPaymentPending, wantReplay: orders.StatusPaymentPending, wantKeyState: "answered",
		},
		{
			name: "payments unreachable: untouched, key held", getErr: status.Error(codes.Unavailable, "connection refused"),
			wantSettled: 0, wantStatus: orders.StatusPending, wantKeyState: "held",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				s := newSweepShop(t, nil)
				o := s.abandoned(t)
				s.payments.set(func(p *fakePayments) { p.got, p.getErr, p.voided = tt.got, tt.getErr, tt.voided })

				// Young: the request may still be running.
				time.Sleep(orders.AbandonedAfter - time.Second)
				if n, err := s.svc.Sweep(ctx); n != 0 || err != nil || len(s.payments.gets) != 0 {
					t.Fatalf("Sweep of a young order = %d, %v, asked payments %v; want it left alone", n, err, s.payments.gets)
				}

				time.Sleep(2 * time.Second)
				if n, err := s.svc.Sweep(ctx); n != tt.wantSettled || err != nil {
					t.Errorf("Sweep = %d, %v; want %d settled", n, err, tt.wantSettled)
				}
				if !slices.Equal(s.payments.gets, []string{o.PaymentKey}) {
					t.Errorf("asked payments for %q, want the order's own key %q", s.payments.gets, o.PaymentKey)
				}
				if len(s.payments.charges()) != 0 {
					t.Errorf("the sweeper charged %d times; it must never charge", len(s.payments.charges()))
				}
				got := s.get(t, o.ID)
				if got.Status != tt.wantStatus {
					t.Errorf("status = %q, want %q", got.Status, tt.wantStatus)
				}
				if released := len(s.catalog.releases()) > 0; released != tt.wantRelease {
					t.Errorf("stock released = %v (%v), want %v", released, s.catalog.releases(), tt.wantRelease)
				}

				// What the client's retry with the same key gets now.
				s.payments.set(func(p *fakePayments) { p.got, p.getErr = orders.Charge{}, nil })
				r, err := s.replay(t)
				switch tt.wantKeyState {
				case "answered":
					if err != nil || r.ID != o.ID || r.Status != tt.wantReplay {
						t.Errorf("retry = %+v, %v; want order %s %s replayed", r, err, o.ID, tt.wantReplay)
					}
				case "released":
					if err != nil || r.ID == o.ID || r.Status != orders.StatusConfirmed {
						t.Errorf("retry = %+v, %v; want a new order, confirmed", r, err)
					}
				case "held":
					if codeOf(err) != apperr.Conflict {
						t.Errorf("retry = %+v, %v; want the key in flight", r, err)
					}
				}
			})
		})
	}
}

// A retry that takes over the key of a holder that died (its lease ran
// out) settles the order the holder left instead of placing a second one:
// one checkout, one charge.
func TestTakeoverResumesAbandonedOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSweepShop(t, nil)
		o := s.abandoned(t)
		s.payments.set(func(p *fakePayments) { p.got = orders.Charge{ID: "ch-9", Status: "succeeded"} })
		time.Sleep(orders.KeyLease + time.Second)

		r, err := s.replay(t)
		if err != nil || r.ID != o.ID || r.Status != orders.StatusConfirmed || r.ChargeID != "ch-9" {
			t.Fatalf("retry after the lease = %+v, %v; want the abandoned order %s confirmed with ch-9", r, err, o.ID)
		}
		if n := len(s.payments.charges()); n != 0 {
			t.Errorf("%d new charges, want none", n)
		}
		again, err := s.replay(t)
		if err != nil || again.ID != o.ID {
			t.Errorf("second retry = %+v, %v; want order %s replayed", again, err, o.ID)
		}
	})
}

// failingUpdates is a store whose updates fail, as when the database goes
// away in the middle of a checkout.
type failingUpdates struct{ *orders.MemStore }

func (f failingUpdates) Update(ctx context.Context, o orders.Order) error {
	return apperr.New(apperr.Unavailable, "updating an order: connection refused")
}

// When the order's outcome cannot be recorded after the charge, the key
// stays held: a retry is told the checkout is in flight, never charged
// again, until the sweeper settles the order.
func TestPlaceOrderUnrecordedKeepsKey(t *testing.T) {
	s := newSweepShop(t, failingUpdates{orders.NewMemStore()})
	if _, err := s.replay(t); err == nil {
		t.Fatal("PlaceOrder succeeded with a store that cannot update")
	}
	_, err := s.replay(t)
	if codeOf(err) != apperr.Conflict {
		t.Errorf("retry = %v; want the key still in flight", err)
	}
	if n := len(s.payments.charges()); n != 1 {
		t.Errorf("%d charges, want 1", n)
	}
}

// A failed order whose stock catalog could not take back keeps it marked,
// and the worker gives it back once catalog answers: no stock is lost.
func TestReleaseHeldStock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		w := newWorkerShop(t)
		w.catalog.releaseErr = status.Error(codes.Unavailable, "catalog is down")
		w.payments.set(func(p *fakePayments) { p.err = status.Error(codes.FailedPrecondition, "card declined") })
		if _, err := w.svc.PlaceOrder(ctx, request()); err == nil {
			t.Fatal("PlaceOrder succeeded with a declined card")
		}
		failed, _ := w.store.List(ctx, orders.Filter{Status: orders.StatusFailed, StockHeld: true})
		if len(failed) != 1 {
			t.Fatalf("%d failed orders holding stock, want 1", len(failed))
		}
		time.Sleep(idle)
		if n, err := w.svc.ReleaseHeldStock(ctx); n != 0 || err != nil {
			t.Errorf("ReleaseHeldStock while catalog is down = %d, %v; want 0", n, err)
		}
		w.catalog.mu.Lock()
		w.catalog.releaseErr = nil
		w.catalog.mu.Unlock()
		time.Sleep(idle)
		if n, err := w.svc.ReleaseHeldStock(ctx); n != 1 || err != nil {
			t.Errorf("ReleaseHeldStock = %d, %v; want 1", n, err)
		}
		if o := w.get(t, failed[0].ID); o.StockHeld || o.Status != orders.StatusFailed {
			t.Errorf("order = %+v, want failed with its stock given back", o)
		}
	})
}
