package payments

import (
	"context"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
)

// countingStore counts how often the charges are counted.
type countingStore struct {
	*MemStore
	counted int
}

func (s *countingStore) Stats(ctx context.Context) (Stats, error) {
	s.counted++
	return s.MemStore.Stats(ctx)
}

// TestChargeGaugesReadTheStoreEvery: a load run reads every service's
// gauges five times a second, and counting the charges reads the whole
// table, so the gauges count them at most once every chargeGaugesEvery,
// reporting the last count in between, and a new count once it is due.
func TestChargeGaugesReadTheStoreEvery(t *testing.T) {
	settings := mode.NewLive(mode.Settings{Mode: mode.Budgeted})
	store := &countingStore{MemStore: NewMemStore()}
	svc, err := NewService(store, faults.NewInjector(nil, settings), settings)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	svc.now = func() time.Time { return now }
	g := &chargeGauges{svc: svc}
	read := func() Stats {
		t.Helper()
		st, err := g.read(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return st
	}

	read()
	for range 10 { // two seconds of a load run's readings
		now = now.Add(200 * time.Millisecond)
		read()
	}
	if store.counted != 1 {
		t.Fatalf("the charges were counted %d times in 2 s of readings, want once", store.counted)
	}
	if _, _, err := store.Record(t.Context(), Charge{PaymentKey: "k1", OrderID: "o1", AmountCents: 100,
		RequestID: "r1", Status: StatusSucceeded, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if st := read(); st.Succeeded != 0 {
		t.Errorf("a reading before the next count reports %d charges, want the last count's 0", st.Succeeded)
	}
	now = now.Add(chargeGaugesEvery)
	if st := read(); store.counted != 2 || st.Succeeded != 1 {
		t.Errorf("after %v: counted %d times, reporting %d charges; want twice, and 1", chargeGaugesEvery, store.counted, st.Succeeded)
	}
}
