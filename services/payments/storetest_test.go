package payments_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/services/payments"
)

// newStoreFunc returns an empty store of one implementation, for one test.
type newStoreFunc func(t *testing.T) payments.Store

// testStore is the contract of payments.Store (see its doc comment), run
// against every implementation: the memory store and PostgreSQL
// (pgstore_test.go). Run it with -race.
func testStore(t *testing.T, newStore newStoreFunc) {
	for _, tc := range []struct {
		name string
		test func(*testing.T, newStoreFunc)
	}{
		{"RecordAndGet", contractRecordAndGet},
		{"Stats", contractStats},
		{"RecordConcurrent", contractRecordConcurrent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.test(t, newStore)
		})
	}
}

// storeCharge is a succeeded charge under key. Its time has microseconds,
// what PostgreSQL keeps.
func storeCharge(key, requestID string) payments.Charge {
	return payments.Charge{
		PaymentKey: key, OrderID: "ord_" + key, Customer: "ana", AmountCents: 2500, RequestID: requestID,
		Status: payments.StatusSucceeded, CreatedAt: time.Now().Truncate(time.Microsecond),
	}
}

// sameCharge compares charges field by field, times by the instant.
func sameCharge(a, b payments.Charge) bool {
	at, bt := a.CreatedAt, b.CreatedAt
	a.CreatedAt, b.CreatedAt = time.Time{}, time.Time{}
	return a == b && at.Equal(bt)
}

func storeCode(err error) apperr.Code {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func contractRecordAndGet(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	s := newStore(t)
	c := storeCharge("pay_1", "req_1")
	first, created, err := s.Record(ctx, c)
	if err != nil || !created {
		t.Fatalf("Record = %+v, %v, %v; want created", first, created, err)
	}
	if first.ID == "" {
		t.Error("the recorded charge has no ID")
	}
	c.ID = first.ID
	if !sameCharge(first, c) {
		t.Errorf("Record stored %+v, want %+v", first, c)
	}

	// The key is taken: a second record, whatever it says, gets the first.
	other := storeCharge("pay_1", "req_2")
	other.AmountCents, other.Status = 99, payments.StatusFailed
	again, created, err := s.Record(ctx, other)
	if err != nil || created || !sameCharge(again, first) {
		t.Errorf("second Record = %+v, %v, %v; want the first charge, not created", again, created, err)
	}
	got, err := s.GetByKey(ctx, "pay_1")
	if err != nil || !sameCharge(got, first) {
		t.Errorf("GetByKey = %+v, %v; want %+v", got, err, first)
	}
	if _, err := s.GetByKey(ctx, "pay_nope"); storeCode(err) != apperr.NotFound {
		t.Errorf("GetByKey(unknown) error = %v, want NotFound", err)
	}
	second, created, err := s.Record(ctx, storeCharge("pay_2", "req_2"))
	if err != nil || !created || second.ID == first.ID {
		t.Errorf("Record of another key = %+v, %v, %v; want a new charge with its own ID", second, created, err)
	}
}

func contractStats(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	s := newStore(t)
	if st, err := s.Stats(ctx); err != nil || st != (payments.Stats{}) {
		t.Fatalf("Stats of an empty store = %+v, %v", st, err)
	}
	record := func(c payments.Charge, status payments.Status) {
		t.Helper()
		c.Status = status
		if _, _, err := s.Record(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	record(storeCharge("k1", "req_a"), payments.StatusSucceeded)
	record(storeCharge("k2", "req_a"), payments.StatusSucceeded) // a duplicate charge of checkout a
	record(storeCharge("k3", "req_a"), payments.StatusSucceeded) // and another
	record(storeCharge("k4", "req_b"), payments.StatusSucceeded)
	record(storeCharge("k5", "req_c"), payments.StatusFailed)
	// No request id: counted, never a duplicate.
	record(storeCharge("k7", ""), payments.StatusSucceeded)
	// A key voided before any charge: not a charge.
	record(payments.Charge{PaymentKey: "k8", CreatedAt: time.Now()}, payments.StatusFailed)
	want := payments.Stats{Charges: 6, Succeeded: 5, RequestIDs: 2, Duplicates: 2}
	if st, err := s.Stats(ctx); err != nil || st != want {
		t.Errorf("Stats = %+v, %v; want %+v", st, err, want)
	}
}

// 50 answers under one key at once, half of them declines: exactly one is
// recorded, and every caller gets that one back.
func contractRecordConcurrent(t *testing.T, newStore newStoreFunc) {
	s := newStore(t)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		ids      = map[string]bool{}
		statuses = map[payments.Status]bool{}
		created  int
		start    = make(chan struct{})
	)
	for i := range 50 {
		c := storeCharge("pay_1", "req_"+strconv.Itoa(i))
		if i%2 == 1 {
			c.Status = payments.StatusFailed
		}
		wg.Go(func() {
			<-start
			stored, isNew, err := s.Record(context.Background(), c)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			ids[stored.ID], statuses[stored.Status] = true, true
			if isNew {
				created++
			}
		})
	}
	close(start)
	wg.Wait()
	final, err := s.GetByKey(context.Background(), "pay_1")
	if err != nil {
		t.Fatal(err)
	}
	if created != 1 || len(ids) != 1 || len(statuses) != 1 || !statuses[final.Status] {
		t.Errorf("50 concurrent records of one key: %d created, %d distinct IDs, answered %v, stored %q; want 1, 1 and one status for everybody",
			created, len(ids), statuses, final.Status)
	}
}

// TestStoreContract runs the Store contract against the memory store and
// PostgreSQL (skipped without MERCADO_TEST_DATABASE_URL).
func TestStoreContract(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		testStore(t, func(*testing.T) payments.Store { return payments.NewMemStore() })
	})
	t.Run("postgres", func(t *testing.T) { testStore(t, pgStoreForTest(t)) })
}
