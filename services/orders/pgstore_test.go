package orders_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercado-lab/mercado/internal/apperr"
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

// PGKeys records a checkout's order with its key's claim, and its outcome
// with its answer, each in one statement: both or neither.
func TestPGOrderKeys(t *testing.T) {
	pool := pgMigrated(t)
	ctx := context.Background()
	k, err := orders.NewPGKeys(pool)
	if err != nil {
		t.Fatal(err)
	}
	s, err := orders.NewPGStore(pool)
	if err != nil {
		t.Fatal(err)
	}
	lease := storeClock.Add(orders.KeyLease)
	o := storeOrder("ord_1", orders.StatusPending, storeClock)
	o.IdempotencyKey = "key-1"
	rec, claimed, err := k.ClaimWithOrder(ctx, "key-1", "hash-a", storeClock, lease, o)
	if err != nil || !claimed || rec.TakenOver {
		t.Fatalf("ClaimWithOrder of a new key = %+v, %v, %v; want claimed", rec, claimed, err)
	}
	if got, err := s.Get(ctx, "ord_1"); err != nil || !sameStoredOrder(got, o) {
		t.Fatalf("the order recorded with the claim = %+v, %v; want %+v", got, err, o)
	}

	// Held: nothing claimed, no order recorded.
	other := storeOrder("ord_2", orders.StatusPending, storeClock)
	if _, claimed, err := k.ClaimWithOrder(ctx, "key-1", "hash-a", storeClock.Add(time.Second), lease, other); err != nil || claimed {
		t.Errorf("ClaimWithOrder of a held key = %v, %v; want not claimed", claimed, err)
	}
	if _, err := s.Get(ctx, "ord_2"); storeCode(err) != apperr.NotFound {
		t.Errorf("a held key's claim recorded its order: %v", err)
	}

	// Taken over once the lease ran out: claimed, but the order is left
	// for the caller to record after looking at the vanished holder's.
	third := storeOrder("ord_3", orders.StatusPending, lease)
	rec, claimed, err = k.ClaimWithOrder(ctx, "key-1", "hash-a", lease, lease.Add(orders.KeyLease), third)
	if err != nil || !claimed || !rec.TakenOver {
		t.Fatalf("ClaimWithOrder after the lease = %+v, %v, %v; want taken over", rec, claimed, err)
	}
	if _, err := s.Get(ctx, "ord_3"); storeCode(err) != apperr.NotFound {
		t.Errorf("a takeover recorded its order: %v", err)
	}

	// The outcome and the answer, together.
	o.Status, o.ChargeID, o.UpdatedAt = orders.StatusConfirmed, "ch-1", storeClock.Add(time.Second)
	answer := []byte(`{"order":{"ID":"ord_1"}}`)
	if answered, err := k.CompleteWithOrder(ctx, o, "key-1", answer); err != nil || !answered {
		t.Fatalf("CompleteWithOrder = %v, %v; want answered", answered, err)
	}
	if got, err := s.Get(ctx, "ord_1"); err != nil || !sameStoredOrder(got, o) {
		t.Errorf("the order after CompleteWithOrder = %+v, %v; want %+v", got, err, o)
	}
	late := storeClock.Add(time.Hour)
	if rec, claimed, err := k.Claim(ctx, "key-1", "hash-a", late, late.Add(orders.KeyLease)); err != nil || claimed || !rec.Completed || string(rec.Response) != string(answer) {
		t.Errorf("the key after CompleteWithOrder = %+v, %v, %v; want its answer", rec, claimed, err)
	}

	// An unknown order changes nothing; an unknown key still updates the order.
	if _, err := k.CompleteWithOrder(ctx, storeOrder("ord_nope", orders.StatusConfirmed, storeClock), "key-1", []byte("other")); storeCode(err) != apperr.NotFound {
		t.Errorf("CompleteWithOrder(unknown order) = %v, want NotFound", err)
	}
	if rec, _, _ := k.Claim(ctx, "key-1", "hash-a", late, late.Add(orders.KeyLease)); string(rec.Response) != string(answer) {
		t.Errorf("CompleteWithOrder(unknown order) changed the key's answer to %q", rec.Response)
	}
	o.Failure = "changed"
	if answered, err := k.CompleteWithOrder(ctx, o, "key-nope", answer); err != nil || answered {
		t.Errorf("CompleteWithOrder(unknown key) = %v, %v; want updated, not answered", answered, err)
	}
	if got, _ := s.Get(ctx, "ord_1"); got.Failure != "changed" {
		t.Errorf("CompleteWithOrder(unknown key) left the order as %+v", got)
	}
}
