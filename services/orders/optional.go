package orders

import (
	"context"
	"errors"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/resilience"
	"github.com/mercado-lab/mercado/internal/telemetry"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// The delivery estimate is the checkout's optional dependency (graph.go):
// it gets a short cap and a default value on expiry, so the response
// degrades rather than fails.
//
// With the Criticality mechanism on, the estimate is asked as the checkout
// starts, beside the critical path, with its own cap (--estimate-cap,
// clipped to the budget like every call) and its own bulkhead and breaker.
// The answer never waits for it: when the critical path is done, an
// estimate that has come back is used, and one that has not — still
// running, failed, timed out, refused by an open breaker — is replaced by
// DefaultDeliveryEstimate, and the answer is marked degraded. So the
// estimate can never push the checkout past its deadline, nor make it
// any slower than the critical path.
//
// A call still running when the answer goes keeps its timeout (it holds the
// request's deadline, not its cancellation): its outcome still reaches the
// breaker, which opens on a hung estimate and spares the carrier the calls
// that follow. Off, the estimate is critical and in line, after the
// booking: its failure fails the checkout.

// estimateDep is the estimate's name in the criticality table, its
// metrics and its hop.
const estimateDep = "estimate"

// quote is one checkout's delivery estimate: asked in the background
// (criticality on), or to be asked in line when the order is confirmed.
type quote struct {
	inLine bool
	done   chan struct{}
	est    DeliveryEstimate
	err    error
}

// askEstimate starts the checkout's delivery estimate for o.
func (s *Service) askEstimate(ctx context.Context, o Order) *quote {
	if treats(s.settings.For(ctx).Mechanisms, estimateDep) != Optional {
		return &quote{inLine: true}
	}
	q := &quote{done: make(chan struct{})}
	// The request's values (its mode snapshot, its hop recorder, its span)
	// and its deadline, but not its cancellation: the answer leaving does
	// not cut the call's timeout short.
	ectx := context.WithoutCancel(ctx)
	cancel := context.CancelFunc(func() {})
	if dl, ok := ctx.Deadline(); ok {
		ectx, cancel = context.WithDeadline(ectx, dl)
	}
	go func() {
		defer close(q.done)
		defer cancel()
		q.est, q.err = s.shipping.Estimate(ectx, o)
	}()
	return q
}

// apply puts the estimate on o, once the critical path is done. In line,
// it asks for it now, and its failure is the checkout's; in the background,
// it takes what has come back and degrades to the default otherwise,
// without waiting.
func (q *quote) apply(ctx context.Context, s *Service, o Order) (Order, error) {
	if q.inLine {
		est, err := s.shipping.Estimate(ctx, o)
		if err != nil {
			return o, apperr.FromGRPC(err, "estimating the delivery")
		}
		o.DeliveryEstimate = est
		return o, nil
	}
	reason := telemetry.DegradedLate
	select {
	case <-q.done:
		if q.err == nil {
			o.DeliveryEstimate = q.est
			return o, nil
		}
		reason = degradedReason(q.err)
	default:
	}
	o.DeliveryEstimate = DefaultDeliveryEstimate
	o.Degraded = append(o.Degraded, PartDeliveryEstimate)
	s.metrics.Degraded(ctx, estimateDep, reason)
	return o, nil
}

// degradedReason says why an optional call that came back gave no answer.
func degradedReason(err error) string {
	var rej *resilience.Rejection
	switch {
	case errors.As(err, &rej) && (rej.Reason == resilience.ReasonBreakerOpen || rej.Reason == resilience.ReasonBulkheadFull):
		return telemetry.DegradedRejected
	case errors.Is(err, deadline.ErrCallTimeout):
		return telemetry.DegradedTimeout
	case errors.Is(err, deadline.ErrBudgetExhausted), errors.Is(err, deadline.ErrInsufficientBudget), errors.As(err, &rej):
		return telemetry.DegradedBudget
	}
	return telemetry.DegradedError
}
