package catalog_test

import (
	"context"
	"sync"
	"testing"

	"github.com/mercado-lab/mercado/internal/postgres/pgtest"
	"github.com/mercado-lab/mercado/services/catalog"
)

// pgStoreForTest returns stores on PostgreSQL, each on a database of its
// own (see pgtest), or skips t when no server is configured.
func pgStoreForTest(t *testing.T) newStoreFunc {
	pgtest.AdminURL(t)
	return func(t *testing.T, seed []catalog.Product) catalog.Store {
		pool, _ := pgtest.Open(t, 8)
		ctx := context.Background()
		if err := catalog.Migrate(ctx, pool); err != nil {
			t.Fatal(err)
		}
		s, err := catalog.NewPGStore(pool)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Seed(ctx, seed); err != nil {
			t.Fatal(err)
		}
		return s
	}
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
	if _, err := s.Reserve(ctx, "o1", []catalog.Line{{SKU: "paper", Qty: 4}}); err != nil {
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
