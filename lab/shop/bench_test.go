package shop_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/postgres/pgtest"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/lab/shop"
)

// BenchmarkCheckout drives POST /api/checkout through the real shop — HTTP
// into the gateway, gRPC through orders to catalog, payments and shipping
// — in budgeted mode with no simulated faults, so what it measures is
// Mercado's own machinery and its store: the memory stores, or PostgreSQL
// (skipped without MERCADO_TEST_DATABASE_URL). Each checkout has its own
// Idempotency-Key, as a client's would. It reports checkouts/s besides
// ns/op; see docs/performance.md for a run.
//
//	go test -run '^$' -bench Checkout -benchtime 5s ./lab/shop/
func BenchmarkCheckout(b *testing.B) {
	b.Run("memory", func(b *testing.B) { benchmarkCheckout(b, shop.EphemeralConfig()) })
	b.Run("postgres", func(b *testing.B) {
		cfg := shop.EphemeralConfig()
		cfg.Shared.DatabaseURL, cfg.Shared.DBMaxConns = pgtest.NewDatabase(b).URL, 10
		benchmarkCheckout(b, cfg)
	})
}

// BenchmarkCheckoutMechanisms prices each mechanism when nothing is
// wrong: the memory-store checkout in naive mode, in budgeted mode, and in
// budgeted mode with one mechanism switched off at a time. The difference
// is what that mechanism costs per checkout (docs/performance.md).
//
//	go test -run '^$' -bench CheckoutMechanisms -benchtime 5s -count 3 ./lab/shop/
func BenchmarkCheckoutMechanisms(b *testing.B) {
	for _, tc := range []struct {
		name, mode, mechanisms string
	}{
		{"naive", "naive", ""},
		{"budgeted", "budgeted", ""},
		{"budgeted-no-idempotency", "budgeted", "idempotency=off"},
		{"budgeted-no-outbox", "budgeted", "outbox=off"},
		{"budgeted-no-bulkheads-breakers", "budgeted", "bulkheads=off,breakers=off"},
		{"budgeted-no-deadline", "budgeted", "edge_deadline=off,clip_to_budget=off,admission=off"},
		{"budgeted-no-retries", "budgeted", "retries=off"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := shop.EphemeralConfig()
			m, err := mode.Parse(tc.mode)
			if err != nil {
				b.Fatal(err)
			}
			cfg.Shared.Mode, cfg.Shared.Margin, cfg.Shared.Floor = m, serve.DefaultMargin, serve.DefaultFloor
			if tc.mechanisms != "" {
				var o mode.Overrides
				if err := o.Set(tc.mechanisms); err != nil {
					b.Fatal(err)
				}
				cfg.Shared.Overrides = o
			}
			benchmarkCheckout(b, cfg)
		})
	}
}

func benchmarkCheckout(b *testing.B, cfg shop.Config) {
	s, err := shop.Start(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Stop() })
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	const body = `{"customer":"bench","items":[{"sku":"mug-stoneware","qty":1}],"address":"1 Bench St"}`
	var (
		seq    atomic.Int64
		failed atomic.Int64
	)
	b.SetParallelism(4) // 4 clients per core: enough to keep every hop busy
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodPost, s.GatewayURL()+"/api/checkout", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", `"bench-`+strconv.FormatInt(seq.Add(1), 10)+`"`)
			resp, err := client.Do(req)
			if err != nil {
				failed.Add(1)
				continue
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				if failed.Add(1) == 1 {
					b.Logf("first failure: %d %s", resp.StatusCode, got)
				}
			}
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "checkouts/s")
	if n := failed.Load(); n > 0 {
		b.Errorf("%d of %d checkouts did not answer 201", n, b.N)
	}
}
