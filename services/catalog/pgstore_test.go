package catalog_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mercado-lab/mercado/internal/postgres/pgtest"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/services/catalog"
)

// pgStoreForTest returns stores on PostgreSQL, each on a database of its
// own (see pgtest), or skips t when no server is configured.
func pgStoreForTest(t *testing.T) newStoreFunc {
	pgtest.AdminURL(t)
	return func(t *testing.T, seed []catalog.Product) catalog.Store { return openPGStore(t, 8, seed) }
}

// openPGStore is a store on a database of its own, with a pool of
// maxConns, migrated and seeded.
func openPGStore(tb testing.TB, maxConns int, seed []catalog.Product) *catalog.PGStore {
	pool, _ := pgtest.Open(tb, maxConns)
	ctx := context.Background()
	if err := catalog.Migrate(ctx, pool); err != nil {
		tb.Fatal(err)
	}
	s, err := catalog.NewPGStore(pool)
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.Seed(ctx, seed); err != nil {
		tb.Fatal(err)
	}
	return s
}

// Migrations run from three replicas at once, then again, leave one
// schema; seeding again never refills the stock.
func TestMigrateConcurrentlyThenAgain(t *testing.T) {
	pool, _ := pgtest.Open(t, 8)
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := catalog.Migrate(ctx, pool); err != nil {
				t.Errorf("concurrent Migrate: %v", err)
			}
		})
	}
	wg.Wait()
	if err := catalog.Migrate(ctx, pool); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	s, err := catalog.NewPGStore(pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Seed(ctx, products()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve(ctx, "o1", []catalog.Line{{SKU: "paper", Qty: 4}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Seed(ctx, products()); err != nil {
		t.Fatal(err)
	}
	if got := stock(t, s, "paper"); got != 6 {
		t.Errorf("paper stock after seeding again = %d, want 6 (seeding never refills)", got)
	}
}

func TestNewPGStoreNeedsAPool(t *testing.T) {
	if _, err := catalog.NewPGStore(nil); err == nil {
		t.Error("NewPGStore(nil) succeeded")
	}
}

// BenchmarkReserveOneProduct reserves one product from many orders at
// once, as every checkout of a popular product does: each waits for that
// product's row lock, so the figure is how long a reservation holds it
// (go test -bench ReserveOneProduct -benchtime 5s ./services/catalog/,
// with MERCADO_TEST_DATABASE_URL set).
func BenchmarkReserveOneProduct(b *testing.B) {
	pgtest.AdminURL(b)
	s := openPGStore(b, serve.DefaultDBMaxConns, []catalog.Product{{SKU: "mug", Name: "Mug", PriceCents: 1200, Stock: 1 << 40}})
	ctx := context.Background()
	var next atomic.Int64
	b.SetParallelism(8) // 16 orders at once on 2 cores, for the service's pool of 4
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := "o" + strconv.FormatInt(next.Add(1), 10)
			if _, err := s.Reserve(ctx, id, []catalog.Line{{SKU: "mug", Qty: 1}}, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reservations/s")
}
