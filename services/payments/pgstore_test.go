package payments_test

import (
	"context"
	"sync"
	"testing"

	"github.com/mercado-lab/mercado/internal/postgres/pgtest"
	"github.com/mercado-lab/mercado/services/payments"
)

// pgStoreForTest returns stores on PostgreSQL, each on a database of its
// own (see pgtest), or skips t when no server is configured.
func pgStoreForTest(t *testing.T) newStoreFunc {
	pgtest.AdminURL(t)
	return func(t *testing.T) payments.Store {
		pool, _ := pgtest.Open(t, 8)
		if err := payments.Migrate(context.Background(), pool); err != nil {
			t.Fatal(err)
		}
		s, err := payments.NewPGStore(pool)
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
			if err := payments.Migrate(ctx, pool); err != nil {
				t.Errorf("concurrent Migrate: %v", err)
			}
		})
	}
	wg.Wait()
	if err := payments.Migrate(ctx, pool); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	s, err := payments.NewPGStore(pool)
	if err != nil {
		t.Fatal(err)
	}
	if _, created, err := s.Record(ctx, storeCharge("pay_1", "req_1")); err != nil || !created {
		t.Errorf("Record after migrating = %v, %v", created, err)
	}
}

func TestNewPGStoreNeedsAPool(t *testing.T) {
	if _, err := payments.NewPGStore(nil); err == nil {
		t.Error("NewPGStore(nil) succeeded")
	}
}
