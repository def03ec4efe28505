package payments_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/services/payments"
)

// A charge left pending by a payments process that died — nobody is
// waiting for the provider's answer — is sent to the provider again under
// its key once it is older than ResendAfter, and settled; charges this
// process is still waiting for are left alone.
func TestResendPendingSettlesAbandonedCharges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		store := payments.NewMemStore()
		// The dead process's claim: pending, with no provider call behind it.
		if _, created, err := store.Claim(ctx, payments.Charge{PaymentKey: "pay_dead", OrderID: "ord_dead",
			AmountCents: 100, RequestID: "req-dead", Status: payments.StatusPending, CreatedAt: time.Now()}); !created || err != nil {
			t.Fatalf("Claim = %v, %v", created, err)
		}
		svc := newServiceWith(t, store, mode.Budgeted, faults.Set{"CreateCharge": {Latency: time.Minute}})
		// A live charge of this process, slow at the provider.
		live, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
		defer cancel()
		_, _ = svc.CreateCharge(live, payments.Charge{PaymentKey: "pay_live", OrderID: "ord_live", AmountCents: 100, RequestID: "req-live"})

		if n, err := svc.ResendPending(ctx); n != 0 || err != nil {
			t.Fatalf("ResendPending of young charges = %d, %v; want 0", n, err)
		}
		time.Sleep(payments.ResendAfter + time.Second)
		if n, err := svc.ResendPending(ctx); n != 1 || err != nil {
			t.Fatalf("ResendPending = %d, %v; want the abandoned charge alone resent", n, err)
		}
		if n, _ := svc.ResendPending(ctx); n != 0 {
			t.Errorf("ResendPending again = %d, want 0: the charge is being asked about already", n)
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		for _, key := range []string{"pay_dead", "pay_live"} {
			if got := statusOf(t, store, key); got != payments.StatusSucceeded {
				t.Errorf("%s = %s, want succeeded", key, got)
			}
		}
	})
}
