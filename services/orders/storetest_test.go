package orders_test

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/services/orders"
)

// The contracts of orders.Store and orders.Keys (see their doc comments),
// run against every implementation: the memory stores and PostgreSQL
// (pgstore_test.go). Run them with -race.

type (
	newStoreFunc func(t *testing.T) orders.Store
	// newKeysFunc returns a key store and the order store it records its
	// keys' orders in.
	newKeysFunc func(t *testing.T) (claimKeys, orders.Store)
)

// claimKeys is a key store with Claim, the claim without an order, with
// which the contract puts keys in the states it checks.
type claimKeys interface {
	orders.Keys
	Claim(ctx context.Context, key, hash string, now, leaseUntil time.Time) (orders.KeyRecord, bool, error)
}

func testStore(t *testing.T, newStore newStoreFunc) {
	for _, tc := range []struct {
		name string
		test func(*testing.T, newStoreFunc)
	}{
		{"CreateAndGet", contractCreateAndGet},
		{"Update", contractUpdate},
		{"List", contractList},
		{"ListFollowsUpdates", contractListFollowsUpdates},
		{"ByIdempotencyKey", contractByIdempotencyKey},
		{"CreateConcurrent", contractCreateConcurrent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.test(t, newStore)
		})
	}
}

func testKeys(t *testing.T, newKeys newKeysFunc) {
	for _, tc := range []struct {
		name string
		test func(*testing.T, newKeysFunc)
	}{
		{"Claim", contractKeysClaim},
		{"Takeover", contractKeysTakeover},
		{"Complete", contractKeysComplete},
		{"Release", contractKeysRelease},
		{"Reap", contractKeysReap},
		{"ClaimConcurrent", contractKeysClaimConcurrent},
		{"TakeoverConcurrent", contractKeysTakeoverConcurrent},
		{"ReapConcurrent", contractKeysReapConcurrent},
		{"WithOrder", contractKeysWithOrder},
		{"WithOrderConcurrent", contractKeysWithOrderConcurrent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.test(t, newKeys)
		})
	}
}

// storeClock is the store tests' clock: microseconds, what PostgreSQL keeps.
var storeClock = time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC)

func storeCode(err error) apperr.Code {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func storeOrder(id string, status orders.Status, updated time.Time) orders.Order {
	return orders.Order{
		ID: id, Status: status, Customer: "ana", Address: "1 Main St",
		Items:      []orders.Item{{SKU: "tea", Qty: 2, UnitPriceCents: 1250}, {SKU: "mug", Qty: 1, UnitPriceCents: 1800}},
		PaymentKey: "pay_" + id, ReservationID: "res-1", TotalCents: 4300, ChargeID: "ch-1",
		ShipmentID: "shp-1", ShipmentStatus: orders.ShipmentBooked, RequestID: "req_" + id, Failure: "",
		CreatedAt: storeClock, UpdatedAt: updated,
	}
}

// sameStoredOrder compares orders field by field, times by the instant.
func sameStoredOrder(a, b orders.Order) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) || !a.UpdatedAt.Equal(b.UpdatedAt) {
		return false
	}
	a.CreatedAt, b.CreatedAt, a.UpdatedAt, b.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	return reflect.DeepEqual(a, b)
}

func contractCreateAndGet(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	s := newStore(t)
	o := storeOrder("ord_1", orders.StatusConfirmed, storeClock)
	if err := s.Create(ctx, o); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "ord_1")
	if err != nil || !sameStoredOrder(got, o) {
		t.Fatalf("Get = %+v, %v; want %+v", got, err, o)
	}
	// The caller's copy is its own.
	got.Items[0].Qty = 99
	if again, _ := s.Get(ctx, "ord_1"); again.Items[0].Qty != 2 {
		t.Errorf("changing a returned order changed the stored one")
	}
	if err := s.Create(ctx, storeOrder("ord_1", orders.StatusPending, storeClock)); storeCode(err) != apperr.Conflict {
		t.Errorf("Create of an existing order = %v, want Conflict", err)
	}
	if _, err := s.Get(ctx, "ord_nope"); storeCode(err) != apperr.NotFound {
		t.Errorf("Get(unknown) = %v, want NotFound", err)
	}
}

func contractUpdate(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	s := newStore(t)
	o := storeOrder("ord_1", orders.StatusPending, storeClock)
	o.ChargeID, o.ShipmentID, o.ShipmentStatus = "", "", ""
	if err := s.Create(ctx, o); err != nil {
		t.Fatal(err)
	}
	o.Status, o.Failure, o.UpdatedAt = orders.StatusFailed, "charging: declined", storeClock.Add(time.Second)
	o.Items = o.Items[:1]
	if err := s.Update(ctx, o); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "ord_1"); err != nil || !sameStoredOrder(got, o) {
		t.Errorf("Get after Update = %+v, %v; want %+v", got, err, o)
	}
	// A confirmed order keeps its delivery estimate and what degraded.
	o.Status, o.Failure, o.UpdatedAt = orders.StatusConfirmed, "", storeClock.Add(2*time.Second)
	o.DeliveryEstimate, o.Degraded = orders.DefaultDeliveryEstimate, []string{orders.PartDeliveryEstimate}
	if err := s.Update(ctx, o); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "ord_1")
	if err != nil || !sameStoredOrder(got, o) {
		t.Errorf("Get after a degraded confirmation = %+v, %v; want %+v", got, err, o)
	}
	got.Degraded[0] = "changed"
	if again, _ := s.Get(ctx, "ord_1"); again.Degraded[0] != orders.PartDeliveryEstimate {
		t.Errorf("changing a returned order's degraded list changed the stored one")
	}
	if err := s.Update(ctx, storeOrder("ord_nope", orders.StatusFailed, storeClock)); storeCode(err) != apperr.NotFound {
		t.Errorf("Update(unknown) = %v, want NotFound", err)
	}
}

func contractList(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	s := newStore(t)
	add := func(id string, status orders.Status, shipment orders.ShipmentStatus, updated time.Time) {
		t.Helper()
		o := storeOrder(id, status, updated)
		o.ShipmentStatus = shipment
		if err := s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	add("p3", orders.StatusPaymentPending, "", storeClock.Add(3*time.Second))
	add("p1", orders.StatusPaymentPending, "", storeClock.Add(1*time.Second))
	add("p2", orders.StatusPaymentPending, "", storeClock.Add(2*time.Second))
	add("c1", orders.StatusConfirmed, orders.ShipmentPending, storeClock.Add(1*time.Second))
	add("c2", orders.StatusConfirmed, orders.ShipmentBooked, storeClock.Add(2*time.Second))
	add("c3", orders.StatusConfirmed, orders.ShipmentPending, storeClock.Add(5*time.Second))

	ids := func(f orders.Filter) []string {
		t.Helper()
		got, err := s.List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, o := range got {
			out = append(out, o.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		filter orders.Filter
		want   []string
	}{
		{"by status, least recently updated first", orders.Filter{Status: orders.StatusPaymentPending}, []string{"p1", "p2", "p3"}},
		{"limit", orders.Filter{Status: orders.StatusPaymentPending, Limit: 2}, []string{"p1", "p2"}},
		{"updated before", orders.Filter{Status: orders.StatusPaymentPending, UpdatedBefore: storeClock.Add(3 * time.Second)}, []string{"p1", "p2"}},
		{"shipment status", orders.Filter{Status: orders.StatusConfirmed, ShipmentStatus: orders.ShipmentPending}, []string{"c1", "c3"}},
		{"every filter", orders.Filter{Status: orders.StatusConfirmed, ShipmentStatus: orders.ShipmentPending,
			UpdatedBefore: storeClock.Add(4 * time.Second), Limit: 10}, []string{"c1"}},
		{"no match", orders.Filter{Status: orders.StatusFailed}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids(tc.filter); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("List(%+v) = %v, want %v", tc.filter, got, tc.want)
			}
		})
	}
	got, err := s.List(ctx, orders.Filter{Status: orders.StatusConfirmed, ShipmentStatus: orders.ShipmentBooked})
	if err != nil || len(got) != 1 || !sameStoredOrder(got[0], func() orders.Order {
		o := storeOrder("c2", orders.StatusConfirmed, storeClock.Add(2*time.Second))
		return o
	}()) {
		t.Errorf("List returns %+v, %v; want order c2 whole", got, err)
	}
}

// An order a query found under its old status is found under its new one
// after an update, and only there; StockHeld narrows a status.
func contractListFollowsUpdates(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	s := newStore(t)
	o := storeOrder("o1", orders.StatusPending, storeClock)
	o.ShipmentStatus = ""
	if err := s.Create(ctx, o); err != nil {
		t.Fatal(err)
	}
	count := func(f orders.Filter) int {
		t.Helper()
		got, err := s.List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		return len(got)
	}
	if n := count(orders.Filter{Status: orders.StatusPending}); n != 1 {
		t.Fatalf("pending orders = %d, want 1", n)
	}
	o.Status, o.StockHeld, o.UpdatedAt = orders.StatusFailed, true, storeClock.Add(time.Second)
	if err := s.Update(ctx, o); err != nil {
		t.Fatal(err)
	}
	if n := count(orders.Filter{Status: orders.StatusPending}); n != 0 {
		t.Errorf("pending orders after the update = %d, want 0", n)
	}
	if n := count(orders.Filter{Status: orders.StatusFailed, StockHeld: true}); n != 1 {
		t.Errorf("failed orders holding stock = %d, want 1", n)
	}
	o.StockHeld = false
	if err := s.Update(ctx, o); err != nil {
		t.Fatal(err)
	}
	if n := count(orders.Filter{Status: orders.StatusFailed, StockHeld: true}); n != 0 {
		t.Errorf("failed orders holding stock after release = %d, want 0", n)
	}
	if n := count(orders.Filter{Status: orders.StatusFailed}); n != 1 {
		t.Errorf("failed orders = %d, want 1", n)
	}
}

// ByIdempotencyKey finds every order placed under a key, newest first,
// and nothing for an empty or unknown key.
func contractByIdempotencyKey(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	s := newStore(t)
	for i, id := range []string{"k1-old", "k1-new", "k2"} {
		o := storeOrder(id, orders.StatusConfirmed, storeClock)
		o.CreatedAt = storeClock.Add(time.Duration(i) * time.Second)
		o.IdempotencyKey = "key-1"
		if id == "k2" {
			o.IdempotencyKey = "key-2"
		}
		if err := s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ByIdempotencyKey(ctx, "key-1")
	if err != nil || len(got) != 2 || got[0].ID != "k1-new" || got[1].ID != "k1-old" {
		t.Errorf("ByIdempotencyKey(key-1) = %+v, %v; want k1-new, k1-old", got, err)
	}
	for _, key := range []string{"", "key-none"} {
		if got, err := s.ByIdempotencyKey(ctx, key); err != nil || len(got) != 0 {
			t.Errorf("ByIdempotencyKey(%q) = %+v, %v; want nothing", key, got, err)
		}
	}
}

// 50 creates of one order at once: one wins, the others are told it
// exists.
func contractCreateConcurrent(t *testing.T, newStore newStoreFunc) {
	s := newStore(t)
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		created   int
		conflicts int
		start     = make(chan struct{})
	)
	for range 50 {
		wg.Go(func() {
			<-start
			err := s.Create(context.Background(), storeOrder("ord_1", orders.StatusPending, storeClock))
			mu.Lock()
			defer mu.Unlock()
			switch storeCode(err) {
			case "":
				if err != nil {
					t.Error(err)
					return
				}
				created++
			case apperr.Conflict:
				conflicts++
			default:
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	if created != 1 || conflicts != 49 {
		t.Errorf("50 concurrent creates: %d created, %d conflicts; want 1 and 49", created, conflicts)
	}
}

func contractKeysClaim(t *testing.T, newKeys newKeysFunc) {
	ctx := context.Background()
	k, _ := newKeys(t)
	lease := storeClock.Add(orders.KeyLease)
	rec, claimed, err := k.Claim(ctx, "key-1", "hash-a", storeClock, lease)
	if err != nil || !claimed {
		t.Fatalf("Claim of a new key = %+v, %v, %v; want claimed", rec, claimed, err)
	}
	if rec.Key != "key-1" || rec.RequestHash != "hash-a" || rec.Completed || !rec.LeaseUntil.Equal(lease) || !rec.CreatedAt.Equal(storeClock) {
		t.Errorf("claimed record = %+v", rec)
	}
	// Held: the same request, or another one, within the lease.
	for _, hash := range []string{"hash-a", "hash-b"} {
		rec, claimed, err := k.Claim(ctx, "key-1", hash, storeClock.Add(time.Second), storeClock.Add(time.Second+orders.KeyLease))
		if err != nil || claimed {
			t.Errorf("Claim(%s) of a held key = %v, %v; want not claimed", hash, claimed, err)
		}
		if rec.RequestHash != "hash-a" || rec.Completed || !rec.LeaseUntil.Equal(lease) {
			t.Errorf("Claim(%s) of a held key returned %+v, want the holder's record", hash, rec)
		}
	}
	if _, claimed, err := k.Claim(ctx, "key-2", "hash-a", storeClock, lease); err != nil || !claimed {
		t.Errorf("Claim of another key = %v, %v; want claimed", claimed, err)
	}
}

// A key whose holder vanished expires with its lease: the same request
// takes it over; a different one still may not.
func contractKeysTakeover(t *testing.T, newKeys newKeysFunc) {
	ctx := context.Background()
	k, _ := newKeys(t)
	lease := storeClock.Add(orders.KeyLease)
	if _, claimed, err := k.Claim(ctx, "key-1", "hash-a", storeClock, lease); err != nil || !claimed {
		t.Fatal(claimed, err)
	}
	if _, claimed, err := k.Claim(ctx, "key-1", "hash-a", lease.Add(-time.Microsecond), lease.Add(time.Minute)); err != nil || claimed {
		t.Errorf("Claim just before the lease ends = %v, %v; want not claimed", claimed, err)
	}
	if rec, claimed, err := k.Claim(ctx, "key-1", "hash-b", lease, lease.Add(time.Minute)); err != nil || claimed || rec.RequestHash != "hash-a" {
		t.Errorf("Claim of an expired key by another request = %+v, %v, %v; want not claimed", rec, claimed, err)
	}
	newLease := lease.Add(orders.KeyLease)
	rec, claimed, err := k.Claim(ctx, "key-1", "hash-a", lease, newLease)
	if err != nil || !claimed {
		t.Fatalf("Claim when the lease ends = %v, %v; want the key taken over", claimed, err)
	}
	if !rec.LeaseUntil.Equal(newLease) || !rec.CreatedAt.Equal(lease) || rec.Completed {
		t.Errorf("taken-over record = %+v, want the new lease", rec)
	}
	if _, claimed, _ := k.Claim(ctx, "key-1", "hash-a", lease.Add(time.Second), newLease); claimed {
		t.Error("the new holder's lease was not kept")
	}
}

func contractKeysComplete(t *testing.T, newKeys newKeysFunc) {
	ctx := context.Background()
	k, _ := newKeys(t)
	if _, _, err := k.Claim(ctx, "key-1", "hash-a", storeClock, storeClock.Add(orders.KeyLease)); err != nil {
		t.Fatal(err)
	}
	answer := []byte(`{"ID":"ord_1","Status":"confirmed"}`)
	if err := k.Complete(ctx, "key-1", answer); err != nil {
		t.Fatal(err)
	}
	// Completed: never claimed again, even long after its lease.
	late := storeClock.Add(time.Hour)
	rec, claimed, err := k.Claim(ctx, "key-1", "hash-a", late, late.Add(orders.KeyLease))
	if err != nil || claimed || !rec.Completed || string(rec.Response) != string(answer) || rec.RequestHash != "hash-a" {
		t.Errorf("Claim of a completed key = %+v, %v, %v; want its answer, not claimed", rec, claimed, err)
	}
	if err := k.Complete(ctx, "key-nope", answer); storeCode(err) != apperr.NotFound {
		t.Errorf("Complete(unknown) = %v, want NotFound", err)
	}
}

func contractKeysRelease(t *testing.T, newKeys newKeysFunc) {
	ctx := context.Background()
	k, _ := newKeys(t)
	lease := storeClock.Add(orders.KeyLease)
	if _, _, err := k.Claim(ctx, "key-1", "hash-a", storeClock, lease); err != nil {
		t.Fatal(err)
	}
	if err := k.Release(ctx, "key-1"); err != nil {
		t.Fatal(err)
	}
	// Released: the next request may take it at once, even another one.
	if _, claimed, err := k.Claim(ctx, "key-1", "hash-b", storeClock.Add(time.Second), lease); err != nil || !claimed {
		t.Errorf("Claim after Release = %v, %v; want claimed", claimed, err)
	}
	if err := k.Complete(ctx, "key-1", []byte("answer")); err != nil {
		t.Fatal(err)
	}
	// A completed key keeps its answer.
	if err := k.Release(ctx, "key-1"); err != nil {
		t.Fatal(err)
	}
	if rec, claimed, _ := k.Claim(ctx, "key-1", "hash-b", storeClock.Add(time.Hour), lease); claimed || !rec.Completed {
		t.Errorf("after releasing a completed key, Claim = %+v, %v; want its answer", rec, claimed)
	}
	if err := k.Release(ctx, "key-nope"); err != nil {
		t.Errorf("Release(unknown) = %v, want nil", err)
	}
}

func contractKeysReap(t *testing.T, newKeys newKeysFunc) {
	ctx := context.Background()
	k, _ := newKeys(t)
	old, fresh := storeClock.Add(-48*time.Hour), storeClock
	for i := range 250 {
		created := old.Add(time.Duration(i) * time.Second)
		if _, _, err := k.Claim(ctx, "old-"+strconv.Itoa(i), "h", created, created.Add(orders.KeyLease)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		if _, _, err := k.Claim(ctx, "new-"+strconv.Itoa(i), "h", fresh, fresh.Add(orders.KeyLease)); err != nil {
			t.Fatal(err)
		}
	}
	cutoff := storeClock.Add(-orders.KeyRetention)
	var batches []int
	for {
		n, err := k.Reap(ctx, cutoff, 100)
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, n)
		if n < 100 {
			break
		}
	}
	if want := []int{100, 100, 50}; !reflect.DeepEqual(batches, want) {
		t.Errorf("Reap batches = %v, want %v", batches, want)
	}
	// The old keys are gone (claimable afresh), the new ones kept.
	if _, claimed, _ := k.Claim(ctx, "old-0", "other", storeClock, storeClock.Add(orders.KeyLease)); !claimed {
		t.Error("a reaped key is still there")
	}
	for i := range 5 {
		if _, claimed, _ := k.Claim(ctx, "new-"+strconv.Itoa(i), "h", storeClock, storeClock.Add(orders.KeyLease)); claimed {
			t.Errorf("key new-%d was reaped", i)
		}
	}
}

// 50 requests with one new key at once: exactly one claims it.
func contractKeysClaimConcurrent(t *testing.T, newKeys newKeysFunc) {
	k, _ := newKeys(t)
	if n := claimRace(t, k, 50, storeClock); n != 1 {
		t.Errorf("50 concurrent claims of a new key: %d won, want 1", n)
	}
}

// 50 retries of one request find its key's lease over: exactly one takes
// it over.
func contractKeysTakeoverConcurrent(t *testing.T, newKeys newKeysFunc) {
	k, _ := newKeys(t)
	if _, claimed, err := k.Claim(context.Background(), "key-1", "hash-a", storeClock, storeClock.Add(orders.KeyLease)); err != nil || !claimed {
		t.Fatal(claimed, err)
	}
	if n := claimRace(t, k, 50, storeClock.Add(orders.KeyLease+time.Second)); n != 1 {
		t.Errorf("50 concurrent takeovers of an expired key: %d won, want 1", n)
	}
}

// claimRace runs n claims of key-1 at once, at now, and counts the wins.
func claimRace(t *testing.T, k claimKeys, n int, now time.Time) int {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		won   int
		start = make(chan struct{})
	)
	for range n {
		wg.Go(func() {
			<-start
			_, claimed, err := k.Claim(context.Background(), "key-1", "hash-a", now, now.Add(orders.KeyLease))
			if err != nil {
				t.Error(err)
				return
			}
			if claimed {
				mu.Lock()
				won++
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	return won
}

// A checkout's order is recorded with its key's claim, and its outcome
// with its answer: both or neither.
func contractKeysWithOrder(t *testing.T, newKeys newKeysFunc) {
	ctx := context.Background()
	k, s := newKeys(t)
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

	// An order that cannot be recorded (its id is taken) leaves its key
	// unclaimed.
	dup := storeOrder("ord_1", orders.StatusPending, storeClock)
	dup.IdempotencyKey = "key-2"
	if _, claimed, err := k.ClaimWithOrder(ctx, "key-2", "hash-a", storeClock, lease, dup); storeCode(err) != apperr.Conflict || claimed {
		t.Errorf("ClaimWithOrder of an order that exists = %v, %v; want Conflict, not claimed", claimed, err)
	}
	if _, claimed, err := k.Claim(ctx, "key-2", "hash-b", storeClock, lease); err != nil || !claimed {
		t.Errorf("the key of an order not recorded stayed claimed: %v, %v", claimed, err)
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

// 50 requests with one new key at once, each with an order of its own:
// the one that claims the key is the one whose order is recorded, alone.
func contractKeysWithOrderConcurrent(t *testing.T, newKeys newKeysFunc) {
	ctx := context.Background()
	k, s := newKeys(t)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		winner []string
		start  = make(chan struct{})
	)
	for i := range 50 {
		wg.Go(func() {
			o := storeOrder("ord_"+strconv.Itoa(i), orders.StatusPending, storeClock)
			o.IdempotencyKey = "key-1"
			<-start
			_, claimed, err := k.ClaimWithOrder(ctx, "key-1", "hash-a", storeClock, storeClock.Add(orders.KeyLease), o)
			if err != nil {
				t.Error(err)
				return
			}
			if claimed {
				mu.Lock()
				winner = append(winner, o.ID)
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	got, err := s.ByIdempotencyKey(ctx, "key-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(winner) != 1 || len(got) != 1 || got[0].ID != winner[0] {
		t.Errorf("50 concurrent claims with orders: %v won, orders %d recorded; want one, and its order alone", winner, len(got))
	}
}

// Two reapers at once delete every old key once between them.
func contractKeysReapConcurrent(t *testing.T, newKeys newKeysFunc) {
	ctx := context.Background()
	k, _ := newKeys(t)
	for i := range 200 {
		if _, _, err := k.Claim(ctx, "old-"+strconv.Itoa(i), "h", storeClock.Add(-48*time.Hour), storeClock); err != nil {
			t.Fatal(err)
		}
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total int
	)
	for range 2 {
		wg.Go(func() {
			for {
				n, err := k.Reap(ctx, storeClock.Add(-orders.KeyRetention), 30)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				total += n
				mu.Unlock()
				if n == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	if total != 200 {
		t.Errorf("two reapers deleted %d keys, want 200", total)
	}
}

// TestStoreContract runs the Store contract against the memory store and
// PostgreSQL (skipped without MERCADO_TEST_DATABASE_URL).
func TestStoreContract(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		testStore(t, func(*testing.T) orders.Store { return orders.NewMemStore() })
	})
	t.Run("postgres", func(t *testing.T) { testStore(t, pgStoreForTest(t)) })
}

// TestKeysContract runs the Keys contract against the memory key store and
// PostgreSQL (skipped without MERCADO_TEST_DATABASE_URL).
func TestKeysContract(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		testKeys(t, func(*testing.T) (claimKeys, orders.Store) {
			s := orders.NewMemStore()
			return orders.NewMemKeys(s), s
		})
	})
	t.Run("postgres", func(t *testing.T) { testKeys(t, pgKeysForTest(t)) })
}
