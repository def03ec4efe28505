package payments_test

import (
	"context"
	"errors"
	"slices"
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
		{"ClaimAndGet", contractClaimAndGet},
		{"Settle", contractSettle},
		{"Stats", contractStats},
		{"Pending", contractPending},
		{"ClaimConcurrent", contractClaimConcurrent},
		{"SettleConcurrent", contractSettleConcurrent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.test(t, newStore)
		})
	}
}

// storeCharge is a pending charge under key. Its time has microseconds,
// what PostgreSQL keeps.
func storeCharge(key, requestID string) payments.Charge {
	return payments.Charge{
		PaymentKey: key, OrderID: "ord_" + key, Customer: "ana", AmountCents: 2500, RequestID: requestID,
		Status: payments.StatusPending, CreatedAt: time.Now().Truncate(time.Microsecond),
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

func contractClaimAndGet(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	s := newStore(t)
	c := storeCharge("pay_1", "req_1")
	first, created, err := s.Claim(ctx, c)
	if err != nil || !created {
		t.Fatalf("Claim = %+v, %v, %v; want created", first, created, err)
	}
	if first.ID == "" {
		t.Error("the claimed charge has no ID")
	}
	c.ID = first.ID
	if !sameCharge(first, c) {
		t.Errorf("Claim stored %+v, want %+v", first, c)
	}

	// The key is taken: a second claim, whatever it says, gets the first.
	other := storeCharge("pay_1", "req_2")
	other.AmountCents = 99
	again, created, err := s.Claim(ctx, other)
	if err != nil || created || !sameCharge(again, first) {
		t.Errorf("second Claim = %+v, %v, %v; want the first charge, not created", again, created, err)
	}
	got, err := s.GetByKey(ctx, "pay_1")
	if err != nil || !sameCharge(got, first) {
		t.Errorf("GetByKey = %+v, %v; want %+v", got, err, first)
	}
	if _, err := s.GetByKey(ctx, "pay_nope"); storeCode(err) != apperr.NotFound {
		t.Errorf("GetByKey(unknown) error = %v, want NotFound", err)
	}
	second, created, err := s.Claim(ctx, storeCharge("pay_2", "req_2"))
	if err != nil || !created || second.ID == first.ID {
		t.Errorf("Claim of another key = %+v, %v, %v; want a new charge with its own ID", second, created, err)
	}
}

func contractSettle(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	s := newStore(t)
	if _, _, err := s.Claim(ctx, storeCharge("pay_1", "req_1")); err != nil {
		t.Fatal(err)
	}
	settled, err := s.Settle(ctx, "pay_1", payments.StatusSucceeded)
	if err != nil || settled.Status != payments.StatusSucceeded || settled.PaymentKey != "pay_1" {
		t.Fatalf("Settle = %+v, %v; want succeeded", settled, err)
	}
	// Settled once: a later answer changes nothing.
	again, err := s.Settle(ctx, "pay_1", payments.StatusFailed)
	if err != nil || again.Status != payments.StatusSucceeded {
		t.Errorf("Settle of a settled charge = %+v, %v; want it still succeeded", again, err)
	}
	if got, _ := s.GetByKey(ctx, "pay_1"); got.Status != payments.StatusSucceeded {
		t.Errorf("stored status = %q, want succeeded", got.Status)
	}
	if _, err := s.Settle(ctx, "pay_nope", payments.StatusFailed); storeCode(err) != apperr.NotFound {
		t.Errorf("Settle(unknown) error = %v, want NotFound", err)
	}
}

func contractStats(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	s := newStore(t)
	if st, err := s.Stats(ctx); err != nil || st != (payments.Stats{}) {
		t.Fatalf("Stats of an empty store = %+v, %v", st, err)
	}
	claim := func(c payments.Charge, status payments.Status) {
		t.Helper()
		if _, _, err := s.Claim(ctx, c); err != nil {
			t.Fatal(err)
		}
		if status != payments.StatusPending {
			if _, err := s.Settle(ctx, c.PaymentKey, status); err != nil {
				t.Fatal(err)
			}
		}
	}
	claim(storeCharge("k1", "req_a"), payments.StatusSucceeded)
	claim(storeCharge("k2", "req_a"), payments.StatusSucceeded) // a duplicate charge of checkout a
	claim(storeCharge("k3", "req_a"), payments.StatusSucceeded) // and another
	claim(storeCharge("k4", "req_b"), payments.StatusSucceeded)
	claim(storeCharge("k5", "req_c"), payments.StatusFailed)
	claim(storeCharge("k6", "req_d"), payments.StatusPending)
	// No request id: counted, never a duplicate.
	claim(storeCharge("k7", ""), payments.StatusSucceeded)
	// A key voided before any charge: not a charge.
	claim(payments.Charge{PaymentKey: "k8", Status: payments.StatusFailed, CreatedAt: time.Now()}, payments.StatusFailed)
	want := payments.Stats{Charges: 7, Succeeded: 5, RequestIDs: 2, Duplicates: 2}
	if st, err := s.Stats(ctx); err != nil || st != want {
		t.Errorf("Stats = %+v, %v; want %+v", st, err, want)
	}
}

// Pending lists the charges still pending that were created before a
// time, oldest first, at most limit of them; a settled charge leaves it.
func contractPending(t *testing.T, newStore newStoreFunc) {
	ctx := context.Background()
	s := newStore(t)
	base := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
	for i, key := range []string{"old-2", "old-1", "settled", "young"} {
		c := storeCharge(key, "req_"+key)
		c.CreatedAt = base.Add(time.Duration(i) * time.Second)
		if key == "old-1" {
			c.CreatedAt = base.Add(-time.Second)
		}
		if key == "young" {
			c.CreatedAt = time.Now()
		}
		if _, _, err := s.Claim(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Settle(ctx, "settled", payments.StatusSucceeded); err != nil {
		t.Fatal(err)
	}
	keys := func(limit int) []string {
		t.Helper()
		got, err := s.Pending(ctx, base.Add(30*time.Second), limit)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range got {
			out = append(out, c.PaymentKey)
		}
		return out
	}
	if got := keys(0); !slices.Equal(got, []string{"old-1", "old-2"}) {
		t.Errorf("Pending = %v, want old-1, old-2", got)
	}
	if got := keys(1); !slices.Equal(got, []string{"old-1"}) {
		t.Errorf("Pending with limit 1 = %v, want old-1", got)
	}
	if _, err := s.Settle(ctx, "old-1", payments.StatusFailed); err != nil {
		t.Fatal(err)
	}
	if got := keys(0); !slices.Equal(got, []string{"old-2"}) {
		t.Errorf("Pending after settling old-1 = %v, want old-2", got)
	}
}

// 50 claims of one key at once: exactly one creates the charge, and every
// one gets that charge back.
func contractClaimConcurrent(t *testing.T, newStore newStoreFunc) {
	s := newStore(t)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		ids     = map[string]bool{}
		created int
		start   = make(chan struct{})
	)
	for i := range 50 {
		wg.Go(func() {
			<-start
			c, isNew, err := s.Claim(context.Background(), storeCharge("pay_1", "req_"+strconv.Itoa(i)))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			ids[c.ID] = true
			if isNew {
				created++
			}
		})
	}
	close(start)
	wg.Wait()
	if created != 1 || len(ids) != 1 {
		t.Errorf("50 concurrent claims of one key: %d created, %d distinct IDs; want 1 and 1", created, len(ids))
	}
}

// Answers racing to settle one charge: the first one wins for everybody.
func contractSettleConcurrent(t *testing.T, newStore newStoreFunc) {
	s := newStore(t)
	if _, _, err := s.Claim(context.Background(), storeCharge("pay_1", "req_1")); err != nil {
		t.Fatal(err)
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		statuses = map[payments.Status]bool{}
	)
	for i := range 20 {
		status := payments.StatusSucceeded
		if i%2 == 1 {
			status = payments.StatusFailed
		}
		wg.Go(func() {
			c, err := s.Settle(context.Background(), "pay_1", status)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			statuses[c.Status] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	final, err := s.GetByKey(context.Background(), "pay_1")
	if err != nil {
		t.Fatal(err)
	}
	if len(statuses) != 1 || !statuses[final.Status] {
		t.Errorf("concurrent Settles answered %v, stored %q; want one status for everybody", statuses, final.Status)
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
