package orders_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercado-lab/mercado/internal/postgres/pgtest"
	"github.com/mercado-lab/mercado/services/orders"
)

// pgMigrated returns a pool on a database of t's own (see pgtest) with the
// orders' schema in it.
func pgMigrated(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, _ := pgtest.Open(t, 8)
	if err := orders.Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	return pool
}

// pgStoreForTest returns stores on PostgreSQL, each on a database of its
// own, or skips t when no server is configured.
func pgStoreForTest(t *testing.T) newStoreFunc {
	pgtest.AdminURL(t)
	return func(t *testing.T) orders.Store {
		s, err := orders.NewPGStore(pgMigrated(t))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// pgKeysForTest returns key stores on PostgreSQL, each with its order
// store on a database of their own, or skips t when no server is
// configured.
func pgKeysForTest(t *testing.T) newKeysFunc {
	pgtest.AdminURL(t)
	return func(t *testing.T) (claimKeys, orders.Store) {
		pool := pgMigrated(t)
		k, err := orders.NewPGKeys(pool)
		if err != nil {
			t.Fatal(err)
		}
		s, err := orders.NewPGStore(pool)
		if err != nil {
			t.Fatal(err)
		}
		return k, s
	}
}

// Migrations run from three replicas at once, then again, leave one
// schema that works.
func TestMigrateConcurrentlyThenAgain(t *testing.T) {
	pool, _ := pgtest.Open(t, 8)
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := orders.Migrate(ctx, pool); err != nil {
				t.Errorf("concurrent Migrate: %v", err)
			}
		})
	}
	wg.Wait()
	if err := orders.Migrate(ctx, pool); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	s, err := orders.NewPGStore(pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, storeOrder("ord_1", orders.StatusPending, storeClock)); err != nil {
		t.Errorf("Create after migrating: %v", err)
	}
}

func TestNewPGStoresNeedAPool(t *testing.T) {
	if _, err := orders.NewPGStore(nil); err == nil {
		t.Error("NewPGStore(nil) succeeded")
	}
	if _, err := orders.NewPGKeys(nil); err == nil {
		t.Error("NewPGKeys(nil) succeeded")
	}
}
