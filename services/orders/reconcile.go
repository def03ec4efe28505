package orders

import (
	"context"
	"log/slog"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/mercado-lab/mercado/internal/apperr"
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
		wctx, cancel := context.WithTimeout(ctx, workerTimeout)
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
	case "succeeded":
		o.ChargeID = ch.ID
		_, err := s.ship(ctx, o)
		return err == nil, err
	case "failed":
		_, _ = s.fail(ctx, o, apperr.New(apperr.Conflict, "charging: no charge was made"))
		return true, nil
	}
	return false, nil // still pending at the provider
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
		wctx, cancel := context.WithTimeout(ctx, workerTimeout)
		o, err := s.ship(wctx, o)
		cancel()
		if err == nil && o.ShipmentStatus == ShipmentBooked {
			booked++
		}
	}
	return booked, nil
}

// RunWorkers runs the reconciler, the outbox and the key reaper until ctx
// ends.
func (s *Service) RunWorkers(ctx context.Context, log *slog.Logger) {
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
