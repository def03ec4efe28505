package orders

import (
	"context"
	"slices"
	"sync"

	"github.com/mercado-lab/mercado/internal/apperr"
)

// MemStore is the in-memory Store of the embedded default.
type MemStore struct {
	mu     sync.Mutex
	orders map[string]Order
}

var _ Store = (*MemStore)(nil)

// NewMemStore returns an empty store.
func NewMemStore() *MemStore { return &MemStore{orders: map[string]Order{}} }

// Create implements Store.
func (s *MemStore) Create(ctx context.Context, o Order) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.orders[o.ID]; ok {
		return apperr.New(apperr.Conflict, "order %q exists", o.ID)
	}
	s.orders[o.ID] = clone(o)
	return nil
}

// Update implements Store.
func (s *MemStore) Update(ctx context.Context, o Order) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.orders[o.ID]; !ok {
		return apperr.New(apperr.NotFound, "unknown order %q", o.ID)
	}
	s.orders[o.ID] = clone(o)
	return nil
}

// Get implements Store.
func (s *MemStore) Get(ctx context.Context, id string) (Order, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.orders[id]
	if !ok {
		return Order{}, apperr.New(apperr.NotFound, "unknown order %q", id)
	}
	return clone(o), nil
}

// List implements Store.
func (s *MemStore) List(ctx context.Context, f Filter) ([]Order, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Order
	for _, o := range s.orders {
		if o.Status == f.Status && (f.ShipmentStatus == "" || o.ShipmentStatus == f.ShipmentStatus) &&
			(f.UpdatedBefore.IsZero() || o.UpdatedAt.Before(f.UpdatedBefore)) {
			out = append(out, clone(o))
		}
	}
	slices.SortFunc(out, func(a, b Order) int { return a.UpdatedAt.Compare(b.UpdatedAt) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// clone keeps callers from sharing the stored order's item slice.
func clone(o Order) Order {
	o.Items = slices.Clone(o.Items)
	return o
}
