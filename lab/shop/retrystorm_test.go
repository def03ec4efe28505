package shop_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/lab/driver"
	"github.com/mercado-lab/mercado/lab/shop"
)

// A payments service that refuses every charge before doing anything:
// each layer retries what it is told was not done. Naive, the gateway's
// three tries of orders each make orders' three tries of payments — nine
// calls for one checkout; budgeted, only orders retries, within the
// budget. Either way the checkout answers 503 (nothing was charged, try
// again) rather than 202, no charge is made, and the key is free: once
// payments takes charges again, the same key charges once.
func TestRefusingPaymentsMultipliesOnlyInNaiveMode(t *testing.T) {
	for _, tt := range []struct {
		mode     mode.Mode
		min, max float64 // charges payments was asked for, for the one checkout
	}{
		{mode.Naive, 9, 9},
		{mode.Budgeted, 1, 3},
	} {
		t.Run(string(tt.mode), func(t *testing.T) {
			cfg := shop.EphemeralConfig()
			cfg.Shared.Mode = tt.mode
			cfg.Payments.Faults = faults.Set{sim.PaymentsCreateCharge: {RefuseRate: 1}}
			s := startShop(t, cfg)
			d := drive(s)
			ctx := context.Background()
			before, err := d.Counters(ctx)
			if err != nil {
				t.Fatal(err)
			}
			c := &http.Client{Timeout: 10 * time.Second}
			a, err := postCheckout(ctx, c, s.GatewayURL(), "storm-1", checkoutBody, "2000")
			if err != nil {
				t.Fatal(err)
			}
			if a.code != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" {
				t.Fatalf("checkout = %d %s (Retry-After %q), want 503 with Retry-After: nothing was charged",
					a.code, a.body, a.header.Get("Retry-After"))
			}
			after, err := d.Counters(ctx)
			if err != nil {
				t.Fatal(err)
			}
			const charge = sim.ServicePayments + "/" + sim.PaymentsCreateCharge
			calls := after.Methods[charge] - before.Methods[charge]
			if calls < tt.min || calls > tt.max {
				t.Errorf("payments received %v charges for one checkout, want %v to %v", calls, tt.min, tt.max)
			}
			if ch, err := d.Charges(ctx); err != nil || ch.Charges != 0 {
				t.Errorf("charges = %+v, %v; want none: every try was refused", ch, err)
			}

			if err := d.PutFaults(ctx, nil); err != nil {
				t.Fatal(err)
			}
			a, err = postCheckout(ctx, c, s.GatewayURL(), "storm-1", checkoutBody, "2000")
			if err != nil {
				t.Fatal(err)
			}
			if a.code != http.StatusCreated {
				t.Fatalf("the same checkout once payments is back = %d %s, want 201", a.code, a.body)
			}
			if ch, err := d.Charges(ctx); err != nil || ch.Succeeded != 1 || ch.Duplicates != 0 {
				t.Errorf("charges = %+v, %v; want one", ch, err)
			}
		})
	}
}

func drive(s *shop.Shop) *driver.Driver {
	admin := map[string]string{}
	for _, p := range s.Processes() {
		admin[p.Name] = "http://" + p.AdminAddr
	}
	return driver.New(s.GatewayURL(), admin, "")
}
