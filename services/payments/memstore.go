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

// Create implements Store.
func (s *MemStore) Create(ctx context.Context, c Charge) (Charge, bool, error) {
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
