package shop_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/internal/timing"
	"github.com/mercado-lab/mercado/lab/shop"
)

// A checkout's Server-Timing shows the fan-out by its start offsets: with
// catalog and the fraud screen each taking 80 ms, the two hops overlap in
// budgeted mode (parallel) and run in series in naive mode (sequential);
// either way the charge starts once both have ended.
func TestServerTimingShowsTheFanout(t *testing.T) {
	const took = 80 * time.Millisecond
	for _, m := range []mode.Mode{mode.Budgeted, mode.Naive} {
		t.Run(string(m), func(t *testing.T) {
			cfg := shop.EphemeralConfig()
			cfg.Shared.Mode, cfg.Shared.Margin, cfg.Shared.Floor = m, serve.DefaultMargin, serve.DefaultFloor
			cfg.Catalog.Faults = faults.Set{sim.CatalogReserveStock: {Latency: took}}
			cfg.Payments.Faults = faults.Set{sim.PaymentsScreenOrder: {Latency: took}}
			s := startShop(t, cfg)
			resp, body, _ := checkout(t, s.GatewayURL(), "2000")
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("checkout: %d %s", resp.StatusCode, body)
			}
			header := resp.Header.Get("Server-Timing")
			hops, err := timing.Parse(header)
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]timing.Hop{}
			for _, h := range hops {
				byName[h.Name] = h
			}
			catalog, fraud, payments := byName["catalog"], byName["fraud"], byName["payments"]
			if catalog.Took < took || fraud.Took < took || payments.Outcome != "ok" {
				t.Fatalf("Server-Timing %q: want catalog and fraud of %v or more, and a charge", header, took)
			}
			end := func(h timing.Hop) time.Duration { return h.Start + h.Took }
			overlap := min(end(catalog), end(fraud)) - max(catalog.Start, fraud.Start)
			t.Logf("%s: overlap %v", header, overlap)
			// Offsets and durations travel to a tenth of a millisecond.
			const slack = 200 * time.Microsecond
			switch m {
			case mode.Budgeted:
				if overlap < took/2 {
					t.Errorf("catalog and fraud overlap by %v, want most of their %v", overlap, took)
				}
			case mode.Naive:
				if fraud.Start+slack < end(catalog) {
					t.Errorf("fraud starts at %v, before catalog ends at %v", fraud.Start, end(catalog))
				}
			}
			if payments.Start+slack < max(end(catalog), end(fraud)) {
				t.Errorf("payments starts at %v, before the fan-out ends at %v", payments.Start, max(end(catalog), end(fraud)))
			}
		})
	}
}
