package shipping_test

import (
	"context"
	"sync"
	"testing"

	"github.com/mercado-lab/mercado/internal/postgres/pgtest"
	"github.com/mercado-lab/mercado/services/shipping"
)

// pgStoreForTest returns stores on PostgreSQL, each on a database of its
// own (see pgtest), or skips t when no server is configured.
func pgStoreForTest(t *testing.T) newStoreFunc {
	pgtest.AdminURL(t)
	return func(t *testing.T) shipping.Store {
		pool, _ := pgtest.Open(t, 8)
		if err := shipping.Migrate(context.Background(), pool); err != nil {
			t.Fatal(err)
		}
		s, err := shipping.NewPGStore(pool)
		if err != nil {
			t.Fatal(err)
		}
		return s
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
			if err := shipping.Migrate(ctx, pool); err != nil {
				t.Errorf("concurrent Migrate: %v", err)
			}
		})
	}
	wg.Wait()
	if err := shipping.Migrate(ctx, pool); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	s, err := shipping.NewPGStore(pool)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, storeShipment("ord_1")); err != nil {
		t.Errorf("Create after migrating: %v", err)
	}
}

func TestNewPGStoreNeedsAPool(t *testing.T) {
	if _, err := shipping.NewPGStore(nil); err == nil {
		t.Error("NewPGStore(nil) succeeded")
	}
}
