package payments

import (
	"context"
	"log/slog"
	"time"

	"github.com/mercado-lab/mercado/internal/postgres"
)

// A charge stays pending while the provider works on it. The process
// asking the provider may die first — killed, or its machine lost — and
// then nobody is left to record the provider's answer: the charge would
// stay pending for ever, and the order waiting on it payment_pending.
// So every payments process looks, now and then, for charges pending
// longer than ResendAfter that it is not asking about itself, and asks the
// provider again under the same payment key. Providers deduplicate on the
// key, so asking again cannot charge twice; only the first answer is
// recorded (Settle changes a pending charge only).
const (
	// ResendAfter is longer than the provider takes to answer on a good
	// day, so a replica rarely asks about a charge another is still
	// waiting for; when it does, no harm is done.
	ResendAfter = 5 * time.Second
	resendEvery = time.Second
	resendBatch = 100
)

// ResendPending asks the provider again about the charges pending longer
// than ResendAfter that this process is not asking about, and says how
// many it sent. Each answer is recorded in the background.
func (s *Service) ResendPending(ctx context.Context) (int, error) {
	pending, err := s.store.Pending(ctx, s.now().Add(-ResendAfter), resendBatch)
	if err != nil {
		return 0, err
	}
	sent := 0
	for _, c := range pending {
		if _, asking := s.asking.LoadOrStore(c.PaymentKey, true); asking {
			continue
		}
		go s.charge(context.WithoutCancel(ctx), c, make(chan result, 1))
		sent++
	}
	return sent, nil
}

// RunWorkers resends abandoned charges until ctx ends. Their commits are
// deferred ones: no checkout waits for them (postgres.Deferred).
func (s *Service) RunWorkers(ctx context.Context, log *slog.Logger) {
	ctx = postgres.Deferred(ctx)
	tick := time.NewTicker(resendEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if n, err := s.ResendPending(ctx); err != nil && ctx.Err() == nil {
			log.Warn("resending pending charges", "err", err)
		} else if n > 0 {
			log.Info("asked the provider again about abandoned charges", "charges", n)
		}
	}
}
