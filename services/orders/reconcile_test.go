package orders_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/services/orders"
)

// idle is longer than the reconciler and the outbox wait (1 s) before they
// touch an order, so that they never race the request still handling it.
const idle = 2 * time.Second

// workerShop is a Service over the memory stores and fake dependencies, for
// the background workers, which find their work through Store.List.
type workerShop struct {
	svc      *orders.Service
	store    *orders.MemStore
	catalog  *fakeCatalog
	payments *fakePayments
	shipping *fakeShipping
}

func newWorkerShop(t *testing.T) *workerShop {
	t.Helper()
	log := &callLog{}
	w := &workerShop{
		store: orders.NewMemStore(), catalog: &fakeCatalog{log: log},
		payments: &fakePayments{log: log}, shipping: &fakeShipping{log: log},
	}
	svc, err := orders.NewService(orders.Deps{
		Store: w.store, Keys: orders.NewMemKeys(w.store), Catalog: w.catalog, Payments: w.payments, Fraud: &fakeFraud{}, Shipping: w.shipping, Audit: &fakeAudit{},
		Settings: mode.NewLive(settingsOf(mode.Budgeted)), Log: discard(),
	})
	if err != nil {
		t.Fatal(err)
	}
	w.svc = svc
	return w
}

// pendingOrder places an order whose charge timed out.
func (w *workerShop) pendingOrder(t *testing.T) orders.Order {
	t.Helper()
	w.payments.set(func(p *fakePayments) {
		p.err = status.Error(codes.DeadlineExceeded, "payment provider did not answer in time")
	})
	o, err := w.svc.PlaceOrder(context.Background(), request())
	if err != nil || o.Status != orders.StatusPaymentPending {
		t.Fatalf("PlaceOrder = %+v, %v; want payment_pending", o, err)
	}
	w.payments.set(func(p *fakePayments) { p.err = nil })
	return o
}

func (w *workerShop) get(t *testing.T, id string) orders.Order {
	t.Helper()
	o, err := w.store.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// The reconciler settles a payment_pending order by asking payments under
// the order's own key, and never mints a new one.
func TestReconcile(t *testing.T) {
	notFound := status.Error(codes.NotFound, "no charge under payment key")
	tests := []struct {
		name         string
		got          orders.Charge
		getErr       error
		voided       orders.Charge
		wantVoid     bool
		wantSettled  int
		wantStatus   orders.Status
		wantShipment orders.ShipmentStatus
		wantCharge   string
		wantRelease  bool
		wantFailure  string
	}{
		{
			name: "charged: confirmed and shipped", got: orders.Charge{ID: "ch-9", Status: "succeeded"},
			wantSettled: 1, wantStatus: orders.StatusConfirmed, wantShipment: orders.ShipmentBooked, wantCharge: "ch-9",
		},
		{
			name: "failed: failed and stock released", got: orders.Charge{ID: "ch-9", Status: "failed"},
			wantSettled: 1, wantStatus: orders.StatusFailed, wantRelease: true, wantFailure: "charging: no charge was made",
		},
		{
			name: "still pending at the provider: untouched", got: orders.Charge{ID: "ch-9", Status: "pending"},
			wantSettled: 0, wantStatus: orders.StatusPaymentPending,
		},
		{
			name: "never reached payments: voided, failed and released", getErr: notFound,
			voided: orders.Charge{ID: "ch-void", Status: "failed"}, wantVoid: true,
			wantSettled: 1, wantStatus: orders.StatusFailed, wantRelease: true, wantFailure: "charging: no charge was made",
		},
		{
			// The charge landed between Get and Void: Void returns it.
			name: "charged just before the void: confirmed", getErr: notFound,
			voided: orders.Charge{ID: "ch-9", Status: "succeeded"}, wantVoid: true,
			wantSettled: 1, wantStatus: orders.StatusConfirmed, wantShipment: orders.ShipmentBooked, wantCharge: "ch-9",
		},
		{
			name: "payments unreachable: untouched", getErr: status.Error(codes.Unavailable, "connection refused"),
			wantSettled: 0, wantStatus: orders.StatusPaymentPending,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				w := newWorkerShop(t)
				o := w.pendingOrder(t)
				w.payments.set(func(p *fakePayments) { p.got, p.getErr, p.voided = tt.got, tt.getErr, tt.voided })

				// Too recent: the request may still be handling it.
				if n, err := w.svc.Reconcile(ctx); n != 0 || err != nil || len(w.payments.gets) != 0 {
					t.Fatalf("Reconcile of a fresh order = %d, %v, asked payments %v; want it left alone", n, err, w.payments.gets)
				}

				time.Sleep(idle)
				n, err := w.svc.Reconcile(ctx)
				if err != nil || n != tt.wantSettled {
					t.Errorf("Reconcile = %d, %v; want %d settled", n, err, tt.wantSettled)
				}
				if !slices.Equal(w.payments.gets, []string{o.PaymentKey}) {
					t.Errorf("asked payments for %q, want the order's own key %q", w.payments.gets, o.PaymentKey)
				}
				wantVoids := []string(nil)
				if tt.wantVoid {
					wantVoids = []string{o.PaymentKey}
				}
				if !slices.Equal(w.payments.voids, wantVoids) {
					t.Errorf("voided %q, want %q", w.payments.voids, wantVoids)
				}
				if n := len(w.payments.charges()); n != 1 {
					t.Errorf("payments charged %d times, want only the checkout's 1", n)
				}

				got := w.get(t, o.ID)
				if got.Status != tt.wantStatus || got.ShipmentStatus != tt.wantShipment || got.ChargeID != tt.wantCharge || got.Failure != tt.wantFailure {
					t.Errorf("order = status %q shipment %q charge %q failure %q; want %q %q %q %q",
						got.Status, got.ShipmentStatus, got.ChargeID, got.Failure, tt.wantStatus, tt.wantShipment, tt.wantCharge, tt.wantFailure)
				}
				if got.PaymentKey != o.PaymentKey {
					t.Errorf("payment key changed from %q to %q", o.PaymentKey, got.PaymentKey)
				}
				if tt.wantStatus == orders.StatusPaymentPending && !got.UpdatedAt.Equal(o.UpdatedAt) {
					t.Errorf("an unsettled order was touched: updated %v, was %v", got.UpdatedAt, o.UpdatedAt)
				}
				if released := slices.Equal(w.catalog.releases(), []string{"res-1"}); released != tt.wantRelease {
					t.Errorf("released %v, want release of res-1: %v", w.catalog.releases(), tt.wantRelease)
				}
				if tt.wantShipment == orders.ShipmentBooked && (len(w.shipping.shipped) != 1 || w.shipping.shipped[0].ChargeID != tt.wantCharge) {
					t.Errorf("shipped %+v, want the order once with charge %q", w.shipping.shipped, tt.wantCharge)
				}
			})
		})
	}
}

// The outbox books the shipments of confirmed orders that shipping failed
// at checkout, once shipping is back.
func TestFlushOutbox(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		w := newWorkerShop(t)
		w.shipping.setErr(status.Error(codes.Unavailable, "carrier down"))
		o, err := w.svc.PlaceOrder(ctx, request())
		if err != nil || o.Status != orders.StatusConfirmed || o.ShipmentStatus != orders.ShipmentPending {
			t.Fatalf("PlaceOrder = %+v, %v; want confirmed with the shipment pending", o, err)
		}
		if n, err := w.svc.FlushOutbox(ctx); n != 0 || err != nil || len(w.shipping.shipped) != 1 {
			t.Fatalf("FlushOutbox of a fresh order = %d, %v (%d ship calls); want it left alone", n, err, len(w.shipping.shipped))
		}

		time.Sleep(idle)
		if n, err := w.svc.FlushOutbox(ctx); n != 0 || err != nil {
			t.Errorf("FlushOutbox with shipping still down = %d, %v; want 0 booked", n, err)
		}
		if got := w.get(t, o.ID); got.Status != orders.StatusConfirmed || got.ShipmentStatus != orders.ShipmentPending {
			t.Errorf("after a failed attempt: %+v, want still confirmed, shipment pending", got)
		}

		w.shipping.setErr(nil)
		time.Sleep(idle)
		if n, err := w.svc.FlushOutbox(ctx); n != 1 || err != nil {
			t.Errorf("FlushOutbox = %d, %v; want 1 booked", n, err)
		}
		got := w.get(t, o.ID)
		if got.Status != orders.StatusConfirmed || got.ShipmentStatus != orders.ShipmentBooked || got.ShipmentID != "shp-1" || got.ChargeID != "ch-1" {
			t.Errorf("order = %+v, want confirmed, booked as shp-1, charge kept", got)
		}
		time.Sleep(idle)
		if n, _ := w.svc.FlushOutbox(ctx); n != 0 || len(w.shipping.shipped) != 3 {
			t.Errorf("FlushOutbox with nothing pending booked %d (%d ship calls in all), want 0 (3)", n, len(w.shipping.shipped))
		}
	})
}

// RunWorkers keeps reconciling and flushing until its context ends.
func TestRunWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorkerShop(t)
		pending := w.pendingOrder(t)
		w.shipping.setErr(status.Error(codes.Unavailable, "carrier down"))
		w.payments.set(func(p *fakePayments) { p.got = orders.Charge{ID: "ch-9", Status: "pending"} })
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			w.svc.RunWorkers(ctx, discard())
			close(done)
		}()

		// The provider answers, shipping comes back: the workers finish
		// the order on their own.
		time.Sleep(idle)
		w.payments.set(func(p *fakePayments) { p.got.Status = "succeeded" })
		time.Sleep(idle)
		if got := w.get(t, pending.ID); got.Status != orders.StatusConfirmed || got.ShipmentStatus != orders.ShipmentPending {
			t.Errorf("after the charge succeeded: %+v, want confirmed with the shipment pending", got)
		}
		w.shipping.setErr(nil)
		time.Sleep(2 * idle)
		if got := w.get(t, pending.ID); got.Status != orders.StatusConfirmed || got.ShipmentStatus != orders.ShipmentBooked || got.ChargeID != "ch-9" {
			t.Errorf("after shipping came back: %+v, want confirmed and booked", got)
		}

		cancel()
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Error("RunWorkers did not return when its context ended")
		}
	})
}
