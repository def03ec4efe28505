package shipping

import (
	"context"
	"fmt"
	"sync"

	"github.com/mercado-lab/mercado/internal/apperr"
)

// MemStore is the in-memory Store of the embedded default.
type MemStore struct {
	mu      sync.Mutex
	byID    map[string]Shipment
	byOrder map[string]string
	nextID  int
}

var _ Store = (*MemStore)(nil)

// NewMemStore returns an empty store.
func NewMemStore() *MemStore {
	return &MemStore{byID: map[string]Shipment{}, byOrder: map[string]string{}}
}

// Create implements Store.
func (s *MemStore) Create(ctx context.Context, sh Shipment) (Shipment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.byOrder[sh.OrderID]; ok {
		return s.byID[id], nil
	}
	s.nextID++
	sh.ID = fmt.Sprintf("shp-%d", s.nextID)
	s.byID[sh.ID] = sh
	s.byOrder[sh.OrderID] = sh.ID
	return sh, nil
}

// Get implements Store.
func (s *MemStore) Get(ctx context.Context, id string) (Shipment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sh, ok := s.byID[id]
	if !ok {
		return Shipment{}, apperr.New(apperr.NotFound, "unknown shipment %q", id)
	}
	return sh, nil
}
