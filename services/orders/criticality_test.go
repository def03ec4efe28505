package orders_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/services/orders"
)

// rebuild gives s a new Service over the same fakes, with change applied
// to its dependencies.
func (s *shop) rebuild(t *testing.T, change func(*orders.Deps)) {
	t.Helper()
	d := orders.Deps{
		Store: s.store, Keys: s.keys, Catalog: s.catalog, Payments: s.payments, Fraud: s.fraud, Shipping: s.shipping, Audit: s.audit,
		Settings: s.settings, Log: slog.New(slog.NewJSONHandler(s.logs, nil)),
	}
	if change != nil {
		change(&d)
	}
	svc, err := orders.NewService(d)
	if err != nil {
		t.Fatal(err)
	}
	s.svc = svc
}

// criticalityOff is budgeted mode with every dependency critical and in
// line (--mechanisms criticality=off).
func criticalityOff() mode.Settings {
	m := mode.Budgeted.Mechanisms()
	m.Criticality = false
	return mode.Settings{Mode: mode.Budgeted, Mechanisms: m}
}

// An optional call never extends the critical path: with the estimate
// hung, the checkout answers when the charge is done — not a moment
// later — with the default estimate and the degraded marker. In a
// synctest bubble time is exact, so "no later" is an equality.
func TestHungEstimateNeverExtendsTheCriticalPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const criticalPath = 250 * time.Millisecond
		s := newShop(t)
		s.shipping.estimateDelay = time.Hour // hung: only the deadline ends it
		s.payments.during = func() { time.Sleep(criticalPath) }
		ctx, cancel := context.WithTimeout(t.Context(), 900*time.Millisecond)
		defer cancel()

		start := time.Now()
		o, err := s.svc.PlaceOrder(ctx, request())
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		if took != criticalPath {
			t.Errorf("the checkout took %v with the estimate hung, want the critical path's %v", took, criticalPath)
		}
		if o.Status != orders.StatusConfirmed || o.DeliveryEstimate != orders.DefaultDeliveryEstimate ||
			!slices.Equal(o.Degraded, []string{orders.PartDeliveryEstimate}) {
			t.Errorf("order = %s, estimate %+v, degraded %v; want confirmed with the default estimate, degraded [delivery_estimate]",
				o.Status, o.DeliveryEstimate, o.Degraded)
		}
		stored, _ := s.store.Get(context.Background(), o.ID)
		if stored.DeliveryEstimate != orders.DefaultDeliveryEstimate || !slices.Equal(stored.Degraded, o.Degraded) {
			t.Errorf("stored order: estimate %+v, degraded %v; want what the answer said", stored.DeliveryEstimate, stored.Degraded)
		}
		// The hung call keeps the request's deadline, and ends with it
		// (synctest.Test fails on a goroutine left behind).
		time.Sleep(time.Second)
	})
}

// The estimate is asked as the checkout starts, beside the critical path:
// one that takes less than the critical path is in the answer, though the
// two together take longer than the critical path alone.
func TestEstimateRunsBesideTheCriticalPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const criticalPath, quote = 200 * time.Millisecond, 120 * time.Millisecond
		s := newShop(t)
		s.shipping.estimateDelay = quote
		s.payments.during = func() { time.Sleep(criticalPath) }
		start := time.Now()
		o, err := s.svc.PlaceOrder(t.Context(), request())
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != criticalPath {
			t.Errorf("took %v, want %v: the quote runs beside the chain, not after it", took, criticalPath)
		}
		if o.DeliveryEstimate != (orders.DeliveryEstimate{MinBusinessDays: 1, MaxBusinessDays: 2}) || len(o.Degraded) != 0 {
			t.Errorf("estimate %+v, degraded %v; want shipping's quote, nothing degraded", o.DeliveryEstimate, o.Degraded)
		}
	})
}

// A failed estimate degrades the answer; it never fails the checkout.
func TestFailedEstimateDegrades(t *testing.T) {
	s := newShop(t)
	s.shipping.estimateErr = status.Error(codes.Unavailable, "carrier down")
	o, err := s.svc.PlaceOrder(t.Context(), request())
	if err != nil {
		t.Fatalf("PlaceOrder with the estimate failing: %v, want a confirmed order", err)
	}
	if o.Status != orders.StatusConfirmed || o.DeliveryEstimate != orders.DefaultDeliveryEstimate || !slices.Equal(o.Degraded, []string{"delivery_estimate"}) {
		t.Errorf("order %s, estimate %+v, degraded %v", o.Status, o.DeliveryEstimate, o.Degraded)
	}
}

// With criticality off (naive's way), the estimate is critical and in
// line: asked after the booking, waited for, and its failure fails the
// checkout.
func TestEstimateInLineWithCriticalityOff(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings mode.Settings
	}{
		{"naive", settingsOf(mode.Naive)},
		{"budgeted with criticality=off", criticalityOff()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const quote = 120 * time.Millisecond
				s := newShop(t)
				s.settings.Store(tc.settings)
				s.shipping.estimateDelay = quote
				start := time.Now()
				o, err := s.svc.PlaceOrder(t.Context(), request())
				if err != nil {
					t.Fatal(err)
				}
				if took := time.Since(start); took != quote {
					t.Errorf("took %v, want the quote's %v, waited for in line", took, quote)
				}
				if len(o.Degraded) != 0 || o.DeliveryEstimate.MinBusinessDays != 1 {
					t.Errorf("estimate %+v, degraded %v", o.DeliveryEstimate, o.Degraded)
				}
			})

			s := newShop(t)
			s.settings.Store(tc.settings)
			s.shipping.estimateErr = status.Error(codes.Unavailable, "carrier down")
			o, err := s.svc.PlaceOrder(t.Context(), request())
			if err == nil || o.Status != orders.StatusFailed || !strings.Contains(o.Failure, "estimating the delivery") {
				t.Errorf("PlaceOrder with the estimate failing = %s %q, %v; want the checkout failed by the estimate", o.Status, o.Failure, err)
			}
		})
	}
}

// The audit event leaves the request: with the trail down the checkout
// is confirmed at once, and the queue's worker writes the event once the
// trail is back.
func TestAuditIsFireForward(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newShop(t)
		s.rebuild(t, func(d *orders.Deps) {
			d.AuditQueue = orders.AuditSettings{Workers: 1, BaseBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}
		})
		stop := s.svc.StartAudit()
		s.audit.err = status.Error(codes.Unavailable, "trail down")
		start := time.Now()
		o, err := s.svc.PlaceOrder(t.Context(), request())
		if err != nil || o.Status != orders.StatusConfirmed {
			t.Fatalf("PlaceOrder with the trail down = %s, %v; want confirmed", o.Status, err)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("the checkout took %v with the trail down, want no wait at all", took)
		}
		time.Sleep(time.Second)
		if s.audit.count() != 0 {
			t.Fatal("an event was recorded while the trail was down")
		}
		s.audit.set(func(a *fakeAudit) { a.err = nil })
		time.Sleep(time.Second) // at most MaxBackoff before the next attempt
		if s.audit.count() != 1 {
			t.Errorf("the trail holds %d events after it came back, want the checkout's 1", s.audit.count())
		}
		if s.audit.attempts < 3 {
			t.Errorf("%d attempts, want the worker to have retried while the trail was down", s.audit.attempts)
		}
		stop(time.Second)
	})
}

// With criticality off the audit write is in line, and its failure fails
// the checkout — after the charge.
func TestAuditInLineWithCriticalityOff(t *testing.T) {
	s := newShop(t)
	s.settings.Store(settingsOf(mode.Naive))
	if _, err := s.svc.PlaceOrder(t.Context(), request()); err != nil {
		t.Fatal(err)
	}
	if s.audit.count() != 1 {
		t.Errorf("naive checkout: the trail holds %d events, want 1 written in line", s.audit.count())
	}
	s.audit.err = status.Error(codes.Unavailable, "trail down")
	req := request()
	req.IdempotencyKey, req.RequestID = "key-2", "req-2"
	o, err := s.svc.PlaceOrder(t.Context(), req)
	if err == nil || o.Status != orders.StatusFailed || !strings.Contains(o.Failure, "audit") || o.ChargeID == "" {
		t.Errorf("naive checkout with the trail down = %s %q (charge %q), %v; want failed by the audit write, the money taken",
			o.Status, o.Failure, o.ChargeID, err)
	}
}

// A full queue drops the event, and says so in the log.
func TestAuditQueueFullDropsLoudly(t *testing.T) {
	s := newShop(t)
	s.rebuild(t, func(d *orders.Deps) { d.AuditQueue = orders.AuditSettings{Capacity: 1} })
	// No workers: the first event fills the queue.
	for i, key := range []string{"key-1", "key-2"} {
		req := request()
		req.IdempotencyKey, req.RequestID = key, key
		if o, err := s.svc.PlaceOrder(t.Context(), req); err != nil || o.Status != orders.StatusConfirmed {
			t.Fatalf("checkout %d = %s, %v; a full audit queue must not fail it", i, o.Status, err)
		}
	}
	if logs := s.logs.String(); strings.Count(logs, "the queue is full") != 1 {
		t.Errorf("log = %s; want one line for the one event dropped", logs)
	}
}

// Shutdown writes out what the queue holds within the drain timeout; what
// cannot be written by then is dropped and logged.
func TestAuditQueueDrainsOnStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newShop(t)
		s.rebuild(t, func(d *orders.Deps) { d.AuditQueue = orders.AuditSettings{Workers: 2} })
		s.audit.delay = 100 * time.Millisecond
		stop := s.svc.StartAudit()
		for i := range 10 {
			req := request()
			req.IdempotencyKey, req.RequestID = "key-"+string(rune('a'+i)), "req-"+string(rune('a'+i))
			if _, err := s.svc.PlaceOrder(t.Context(), req); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		stop(10 * time.Second)
		// The 10 were queued at once: each worker took what was waiting
		// when it was free, so two rounds of writes of 100 ms at most.
		if took := time.Since(start); took > 200*time.Millisecond {
			t.Errorf("stop took %v, want the 10 events written in at most two rounds of batches, 200 ms", took)
		}
		if s.audit.count() != 10 {
			t.Errorf("the trail holds %d events after the drain, want 10", s.audit.count())
		}
		if n := len(s.audit.batches); n > 4 {
			t.Errorf("%d writes for 10 events on 2 workers, want at most 4 batches", n)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		s := newShop(t)
		s.rebuild(t, func(d *orders.Deps) { d.AuditQueue = orders.AuditSettings{Workers: 1} })
		s.audit.err = status.Error(codes.Unavailable, "trail down")
		stop := s.svc.StartAudit()
		for _, key := range []string{"key-1", "key-2", "key-3"} {
			req := request()
			req.IdempotencyKey, req.RequestID = key, key
			if _, err := s.svc.PlaceOrder(t.Context(), req); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		stop(2 * time.Second)
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("stop with the trail down took %v, want the drain timeout, 2s", took)
		}
		// Whether the worker took them in one batch or more, none of the
		// three was written.
		if logs := s.logs.String(); !strings.Contains(logs, "drain timeout ended before every event was written") || !strings.Contains(logs, `"events_left":3`) {
			t.Errorf("log = %s; want the drain's end with the 3 events unwritten", logs)
		}
		// After the stop, an event is dropped and logged, never queued.
		req := request()
		req.IdempotencyKey, req.RequestID = "key-4", "key-4"
		if _, err := s.svc.PlaceOrder(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(s.logs.String(), "the service is stopping") {
			t.Error("an event after the stop was not logged as dropped")
		}
	})
}

// An event that cannot be written within its lifetime is given up, and
// the log says which order's it was.
func TestAuditEventLifetime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newShop(t)
		s.rebuild(t, func(d *orders.Deps) {
			d.AuditQueue = orders.AuditSettings{Workers: 1, Lifetime: 2 * time.Second, BaseBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond}
		})
		s.audit.err = status.Error(codes.Unavailable, "trail down")
		stop := s.svc.StartAudit()
		defer stop(time.Second)
		o, err := s.svc.PlaceOrder(t.Context(), request())
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if logs := s.logs.String(); !strings.Contains(logs, "its lifetime ran out") || !strings.Contains(logs, o.ID) {
			t.Errorf("log = %s; want the event of %s given up", logs, o.ID)
		}
		if s.audit.attempts < 3 {
			t.Errorf("%d attempts within the lifetime, want several", s.audit.attempts)
		}
	})
}

// One audit event per completed checkout, whichever path completes it: the
// reconciler confirming a payment_pending order sends one; the outbox
// booking the shipment of an order confirmed long ago sends none. (With
// criticality off the write is in line, so the fake counts it at once.)
func TestAuditOncePerCompletedCheckout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		w := newWorkerShop(t)
		audit := &fakeAudit{}
		svc, err := orders.NewService(orders.Deps{
			Store: w.store, Keys: orders.NewMemKeys(w.store), Catalog: w.catalog, Payments: w.payments, Fraud: &fakeFraud{},
			Shipping: w.shipping, Audit: audit, Settings: mode.NewLive(criticalityOff()), Log: discard(),
		})
		if err != nil {
			t.Fatal(err)
		}
		w.svc = svc

		w.shipping.setErr(status.Error(codes.Unavailable, "carrier down"))
		o, err := w.svc.PlaceOrder(ctx, request())
		if err != nil || o.ShipmentStatus != orders.ShipmentPending {
			t.Fatalf("PlaceOrder = %+v, %v; want confirmed, shipment pending", o, err)
		}
		w.shipping.setErr(nil)
		time.Sleep(idle)
		if n, err := w.svc.FlushOutbox(ctx); n != 1 || err != nil {
			t.Fatalf("FlushOutbox = %d, %v; want 1 booked", n, err)
		}
		if audit.count() != 1 || audit.attempts != 1 {
			t.Errorf("after the checkout and the outbox's booking: %d events in %d writes, want the checkout's 1", audit.count(), audit.attempts)
		}

		req := request()
		req.IdempotencyKey, req.RequestID = "key-2", "req-2"
		w.payments.set(func(p *fakePayments) {
			p.err = status.Error(codes.DeadlineExceeded, "payment provider did not answer in time")
		})
		pending, err := w.svc.PlaceOrder(ctx, req)
		if err != nil || pending.Status != orders.StatusPaymentPending {
			t.Fatalf("PlaceOrder = %+v, %v; want payment_pending", pending, err)
		}
		w.payments.set(func(p *fakePayments) { p.err, p.got = nil, orders.Charge{ID: "ch-9", Status: "succeeded"} })
		time.Sleep(idle)
		if n, err := w.svc.Reconcile(ctx); n != 1 || err != nil {
			t.Fatalf("Reconcile = %d, %v; want 1 settled", n, err)
		}
		if audit.count() != 2 {
			t.Errorf("after the reconciler confirmed the second order: %d events, want 2", audit.count())
		}
	})
}
