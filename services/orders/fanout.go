package orders

import (
	"context"

	"golang.org/x/sync/errgroup"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/mode"
)

// The fan-out: before the charge, a checkout needs its stock reserved and
// the order screened for fraud, and neither needs the other's answer.
//
// Parallel (budgeted): both calls start at once under the request's one
// context, so they share one remaining budget — each call's timeout is
// min(its cap, remaining − margin) from the same deadline — and the step
// costs the slower of the two, not their sum. The first critical failure
// (both are critical) cancels its sibling, errgroup-style: a declined
// screen does not wait for the reservation, nor an out-of-stock answer
// for the screen.
//
// Sequential (naive): reserve, then screen, as a chain written one call
// per line runs them; the step costs the sum.
//
// Either way nothing is lost: a reservation the order holds when the
// step fails is released by fail, and one whose answer never came (its
// call was cancelled, or timed out) is marked StockHeld, for the worker
// to give back (ReleaseHeldStock).

// prepare reserves o's stock and screens o, as the mode's Fanout says.
// It returns o with what the reservation gave it (its id, priced items
// and total) whether or not the step failed, so that fail gives back
// whatever is held.
func (s *Service) prepare(ctx context.Context, o Order) (Order, error) {
	if s.settings.For(ctx).Mechanisms.Fanout != mode.FanoutParallel {
		o, err := s.reserve(ctx, o)
		if err != nil {
			return o, err
		}
		return o, s.screen(ctx, o)
	}
	g, gctx := errgroup.WithContext(ctx)
	reserved := o
	g.Go(func() error {
		var err error
		reserved, err = s.reserve(gctx, o)
		return err
	})
	g.Go(func() error { return s.screen(gctx, o) })
	err := g.Wait() // the first failure; the sibling's is its cancellation
	return reserved, err
}

// reserve asks catalog to hold o's stock.
func (s *Service) reserve(ctx context.Context, o Order) (Order, error) {
	res, err := s.catalog.Reserve(ctx, o.ID, o.Items)
	if err != nil {
		// No answer is not no reservation: catalog may have taken the
		// stock before the answer was lost. The worker finds out.
		o.StockHeld = transient(err)
		return o, apperr.FromGRPC(err, "reserving stock")
	}
	o.ReservationID, o.Items, o.TotalCents = res.ID, res.Items, res.TotalCents
	return o, nil
}

// screen asks the fraud screen about o. A declined order is refused as a
// declined payment is: a conflict, not to be retried as it is.
func (s *Service) screen(ctx context.Context, o Order) error {
	sc, err := s.fraud.Screen(ctx, o)
	if err != nil {
		return apperr.FromGRPC(err, "screening for fraud")
	}
	if !sc.Approved {
		return apperr.New(apperr.Conflict, "screening: the order was declined by the fraud screen")
	}
	return nil
}
