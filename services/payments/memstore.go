package payments

import (
	"context"
	"fmt"
	"sync"

	"github.com/mercado-lab/mercado/internal/apperr"
)

// MemStore is the in-memory Store of the embedded default. Its figures
// are kept up to date as charges are recorded, so that a /metrics scrape
// costs the same in a store of a hundred charges and of a million.
type MemStore struct {
	mu     sync.Mutex
	byKey  map[string]Charge
	nextID int
	// stats are the figures Stats reports; perRequest counts the
	// succeeded charges of each logical checkout.
	stats      Stats
	perRequest map[string]int
}

var _ Store = (*MemStore)(nil)

// NewMemStore returns an empty store.
func NewMemStore() *MemStore {
	return &MemStore{byKey: map[string]Charge{}, perRequest: map[string]int{}}
}

// count adds one charge to the figures.
func (s *MemStore) count(c Charge) {
	if c.OrderID == "" {
		return // a voided key: never a charge
	}
	s.stats.Charges++
	if c.Status != StatusSucceeded {
		return
	}
	s.stats.Succeeded++
	if c.RequestID == "" {
		return
	}
	s.perRequest[c.RequestID]++
	if s.perRequest[c.RequestID] == 1 {
		s.stats.RequestIDs++
	} else {
		s.stats.Duplicates++
	}
}

// Record implements Store.
func (s *MemStore) Record(ctx context.Context, c Charge) (Charge, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if prior, ok := s.byKey[c.PaymentKey]; ok {
		return prior, false, nil
	}
	s.nextID++
	c.ID = fmt.Sprintf("ch-%d", s.nextID)
	s.byKey[c.PaymentKey] = c
	s.count(c)
	return c, true, nil
}

// GetByKey implements Store.
func (s *MemStore) GetByKey(ctx context.Context, key string) (Charge, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.byKey[key]
	if !ok {
		return Charge{}, apperr.New(apperr.NotFound, "no charge under payment key %q", key)
	}
	return c, nil
}

// Stats implements Store.
func (s *MemStore) Stats(ctx context.Context) (Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats, nil
}
