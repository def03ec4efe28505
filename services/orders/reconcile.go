package orders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/postgres"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// Background work timings: how often the workers look, how long an order
// must have been left alone before they touch it (so they never race the
// request that is still handling it), and how long one piece of work may
// take.
const (
	workerEvery   = 250 * time.Millisecond
	settleAfter   = time.Second
	workerTimeout = 2 * time.Second
	workerBatch   = 100
)

// AbandonedAfter is how long an order may stay pending before the sweeper
// takes it for abandoned: longer than any request lives (the edge's
// largest budget, 10 s, and the bookkeeping after it, 2 s), so the sweeper
// never races a live request; shorter than the key lease (30 s), so the
// sweeper answers the key before a client's retry could take it over.
const AbandonedAfter = 15 * time.Second

// Reconcile settles orders whose charge's outcome is unknown, by asking
// payments under the order's own payment key:
//
//   - charged: the order goes on to shipping and is confirmed;
//   - failed: the order fails and its stock is released;
//   - still pending: left for the next round;
//   - no charge at all: the key is voided, so a charge attempt still on
//     its way can never take money later, and the order fails.
func (s *Service) Reconcile(ctx context.Context) (settled int, err error) {
	pending, err := s.store.List(ctx, Filter{Status: StatusPaymentPending, UpdatedBefore: s.now().Add(-settleAfter), Limit: workerBatch})
	if err != nil {
		return 0, err
	}
	for _, o := range pending {
		wctx, cancel := s.unitOfWork(ctx)
		done, err := s.settle(wctx, o)
		cancel()
		if err != nil {
			s.log.Warn("reconciling an order", "order_id", o.ID, "err", err)
			continue
		}
		if done {
			settled++
		}
	}
	return settled, nil
}

func (s *Service) settle(ctx context.Context, o Order) (bool, error) {
	ch, err := s.payments.Get(ctx, o.PaymentKey)
	if apperr.GRPCCode(err) == codes.NotFound {
		ch, err = s.payments.Void(ctx, o.PaymentKey)
	}
	if err != nil {
		return false, err
	}
	switch ch.Status {
	case ChargeSucceeded:
		o.ChargeID = ch.ID
		_, err := s.ship(ctx, o, nil)
		return err == nil, err
	case ChargeFailed:
		_, _ = s.fail(ctx, o, apperr.New(apperr.Conflict, "charging: no charge was made"))
		return true, nil
	}
	return false, nil // still pending at the provider
}

// Sweep settles orders abandoned in pending: the request handling them
// died with its process, or lost its database, before it could record an
// outcome. Each one's stock may be held and its money taken; Sweep finds
// out under the order's own keys (recover) and answers the checkout's
// idempotency key, so the client's retry gets the outcome rather than a
// second order.
func (s *Service) Sweep(ctx context.Context) (settled int, err error) {
	stale, err := s.store.List(ctx, Filter{Status: StatusPending, UpdatedBefore: s.now().Add(-AbandonedAfter), Limit: workerBatch})
	if err != nil {
		return 0, err
	}
	for _, o := range stale {
		wctx, cancel := s.unitOfWork(ctx)
		o, err := s.recover(wctx, o)
		if err == nil {
			s.answerKey(wctx, o)
			settled++
		} else {
			s.log.Warn("sweeping an abandoned order", "order_id", o.ID, "err", err)
		}
		cancel()
	}
	return settled, nil
}

// recover settles an abandoned pending order:
//
//   - its charge under its payment key succeeded: it is confirmed and
//     shipped, as the request would have done;
//   - there is no charge: the key is voided, so a charge still on its way
//     can never take money later, and the order fails;
//   - the charge failed: the order fails;
//   - the charge is still pending at the provider: the order becomes
//     payment_pending, for the reconciler.
//
// Its stock is found by asking catalog to reserve for the order again:
// catalog holds one reservation per order and returns it, released or
// not. A failed order's stock is released; when catalog refuses (out of
// stock), the order never held any.
func (s *Service) recover(ctx context.Context, o Order) (Order, error) {
	ch, err := s.payments.Get(ctx, o.PaymentKey)
	if apperr.GRPCCode(err) == codes.NotFound {
		ch, err = s.payments.Void(ctx, o.PaymentKey)
	}
	if err != nil {
		return o, fmt.Errorf("asking payments: %w", err)
	}
	res, err := s.catalog.Reserve(ctx, o.ID, o.Items)
	switch {
	case err == nil:
		o.ReservationID, o.Items, o.TotalCents = res.ID, res.Items, res.TotalCents
	case ch.Status == ChargeSucceeded || transient(err):
		return o, fmt.Errorf("finding the order's stock: %w", err)
	}
	switch ch.Status {
	case ChargeSucceeded:
		o.ChargeID = ch.ID
		o, err := s.ship(ctx, o, nil)
		if errors.Is(err, errUnrecorded) {
			return o, err
		}
		return o, nil
	case ChargeFailed:
		o, _ = s.fail(ctx, o, apperr.New(apperr.Conflict, "the checkout was cut off before anything was charged"))
		return o, nil
	}
	o.Status = StatusPaymentPending
	return s.save(ctx, o)
}

// transient reports an error that says nothing about the request: the
// callee was not reached, or did not answer in time.
func transient(err error) bool {
	switch apperr.GRPCCode(err) {
	case codes.InvalidArgument, codes.NotFound, codes.FailedPrecondition, codes.AlreadyExists, codes.Aborted, codes.OutOfRange:
		return false
	}
	return true
}

// answerKey stores the outcome of a swept order under the checkout's
// idempotency key, as the request would have: a failure that took no
// money releases the key, so the client's retry tries afresh.
func (s *Service) answerKey(ctx context.Context, o Order) {
	if o.IdempotencyKey == "" {
		return
	}
	var err error
	switch {
	case o.Status == StatusFailed && o.ChargeID == "":
		err = s.keys.Release(ctx, o.IdempotencyKey)
	case o.Status == StatusFailed:
		failure := "order " + o.ID + ": " + o.Failure
		b, _ := json.Marshal(storedAnswer{Code: codes.FailedPrecondition, Message: failure, Public: failure})
		err = s.keys.Complete(ctx, o.IdempotencyKey, b)
	case o.Status == StatusConfirmed || o.Status == StatusPaymentPending:
		b, _ := json.Marshal(storedAnswer{Order: o})
		err = s.keys.Complete(ctx, o.IdempotencyKey, b)
	default:
		return
	}
	if err != nil && apperr.GRPCCode(err) != codes.NotFound {
		s.log.Error("answering the idempotency key of a swept order", "order_id", o.ID, "key", o.IdempotencyKey, "err", err)
	}
}

// resume answers a checkout whose key was taken over from a holder that
// vanished: if that holder left an order that may have taken money, the
// order is settled and is the answer (done), and nothing new is placed.
// When every order under the key failed without a charge, the checkout is
// placed afresh. An abandoned order is settled here, under the request's
// budget, when the sweeper has not got to it yet.
func (s *Service) resume(ctx context.Context, key string) (o Order, done bool, err error) {
	prev, err := s.store.ByIdempotencyKey(ctx, key)
	if err != nil {
		return Order{}, false, err
	}
	for _, o := range prev {
		if o.Status == StatusPending {
			if o, err = s.recover(ctx, o); err != nil {
				return Order{}, false, err
			}
		}
		if o.Status == StatusConfirmed || o.Status == StatusPaymentPending || o.ChargeID != "" {
			s.answerKey(ctx, o)
			if o.Status == StatusFailed {
				return o, true, &orderError{id: o.ID, err: apperr.New(apperr.Conflict, "%s", o.Failure)}
			}
			return o, true, nil
		}
	}
	return Order{}, false, nil
}

// ReleaseHeldStock gives back the stock of failed orders whose release
// failed when they failed (catalog was down, or the database): stock is
// never lost to an order that will not ship.
func (s *Service) ReleaseHeldStock(ctx context.Context) (released int, err error) {
	held, err := s.store.List(ctx, Filter{Status: StatusFailed, StockHeld: true,
		UpdatedBefore: s.now().Add(-settleAfter), Limit: workerBatch})
	if err != nil {
		return 0, err
	}
	for _, o := range held {
		wctx, cancel := s.unitOfWork(ctx)
		err := s.releaseHeld(wctx, o)
		if err == nil {
			o.StockHeld, o.UpdatedAt = false, s.now()
			err = s.store.Update(wctx, o)
		}
		cancel()
		if err != nil {
			s.log.Warn("giving back the stock of a failed order", "order_id", o.ID, "err", err)
			continue
		}
		released++
	}
	return released, nil
}

// releaseHeld gives back a failed order's stock. When the order never
// learnt its reservation (catalog's answer was lost), catalog is asked to
// reserve for the order again, which returns the reservation it holds for
// the order if any, and that is released; a refusal means it holds none.
func (s *Service) releaseHeld(ctx context.Context, o Order) error {
	id := o.ReservationID
	if id == "" {
		res, err := s.catalog.Reserve(ctx, o.ID, o.Items)
		if err != nil {
			if transient(err) {
				return err
			}
			return nil
		}
		id = res.ID
	}
	if err := s.catalog.Release(ctx, id); err != nil && apperr.GRPCCode(err) != codes.NotFound {
		return err
	}
	return nil
}

// FlushOutbox books the shipments of confirmed orders whose shipment is
// still pending: shipping, off the critical path.
func (s *Service) FlushOutbox(ctx context.Context) (booked int, err error) {
	waiting, err := s.store.List(ctx, Filter{Status: StatusConfirmed, ShipmentStatus: ShipmentPending,
		UpdatedBefore: s.now().Add(-settleAfter), Limit: workerBatch})
	if err != nil {
		return 0, err
	}
	for _, o := range waiting {
		wctx, cancel := s.unitOfWork(ctx)
		o, err := s.ship(wctx, o, nil)
		cancel()
		if err == nil && o.ShipmentStatus == ShipmentBooked {
			booked++
		}
	}
	return booked, nil
}

// RunWorkers runs the reconciler, the sweeper, the outbox and the key
// reaper until ctx ends. Their commits are deferred ones: no checkout
// waits for them (postgres.Deferred). Their calls are background work
// (deadline.Background): a pool sheds them before a shopper's, and they
// are judged by the background breakers, so a reconciler asking payments
// about charges it can answer does not hold the breaker shoppers' charges
// pass closed while the charges fail.
func (s *Service) RunWorkers(ctx context.Context, log *slog.Logger) {
	ctx = deadline.WithClass(postgres.Deferred(ctx), deadline.Background)
	tick := time.NewTicker(workerEvery)
	defer tick.Stop()
	lastReap := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := s.Reconcile(ctx); err != nil && ctx.Err() == nil {
			log.Warn("reconciler", "err", err)
		}
		if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			log.Warn("sweeper", "err", err)
		}
		if _, err := s.ReleaseHeldStock(ctx); err != nil && ctx.Err() == nil {
			log.Warn("releasing held stock", "err", err)
		}
		if _, err := s.FlushOutbox(ctx); err != nil && ctx.Err() == nil {
			log.Warn("outbox", "err", err)
		}
		if time.Since(lastReap) > time.Minute {
			lastReap = time.Now()
			if _, err := s.ReapKeys(ctx); err != nil && ctx.Err() == nil {
				log.Warn("reaping idempotency keys", "err", err)
			}
		}
	}
}
