package payments

import (
	"context"
	"fmt"
	"sync"

	"github.com/mercado-lab/mercado/internal/apperr"
)

// MemStore is the in-memory Store of the embedded default.
type MemStore struct {
	mu     sync.Mutex
	byKey  map[string]Charge
	nextID int
}

var _ Store = (*MemStore)(nil)

// NewMemStore returns an empty store.
func NewMemStore() *MemStore { return &MemStore{byKey: map[string]Charge{}} }

// Claim implements Store.
func (s *MemStore) Claim(ctx context.Context, c Charge) (Charge, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if prior, ok := s.byKey[c.PaymentKey]; ok {
		return prior, false, nil
	}
	s.nextID++
	c.ID = fmt.Sprintf("ch-%d", s.nextID)
	s.byKey[c.PaymentKey] = c
	return c, true, nil
}

// Settle implements Store.
func (s *MemStore) Settle(ctx context.Context, key, status string) (Charge, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.byKey[key]
	if !ok {
		return Charge{}, apperr.New(apperr.NotFound, "no charge under payment key %q", key)
	}
	if c.Status == StatusPending {
		c.Status = status
		s.byKey[key] = c
	}
	return c, nil
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
	var st Stats
	perRequest := map[string]int{}
	for _, c := range s.byKey {
		if c.OrderID == "" {
			continue // a voided key: never a charge
		}
		st.Charges++
		if c.Status == StatusSucceeded {
			st.Succeeded++
			if c.RequestID != "" {
				perRequest[c.RequestID]++
			}
		}
	}
	st.RequestIDs = len(perRequest)
	for _, n := range perRequest {
		st.Duplicates += n - 1
	}
	return st, nil
}
