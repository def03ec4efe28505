package orders

import (
	"context"
	"slices"
	"sync"

	"github.com/mercado-lab/mercado/internal/apperr"
)

// MemStore is the in-memory Store of the embedded default. Besides the
// orders it keeps two indexes, so that the background workers' queries
// (a few a second, each for one status) and key look-ups cost what they
// find, not the size of the store: a long lab run holds hundreds of
// thousands of orders, nearly all of them final.
type MemStore struct {
	mu     sync.Mutex
	orders map[string]Order
	// byState holds the ids of the orders in each status and shipment
	// status.
	byState map[orderState]map[string]struct{}
	// byKey holds the ids of the orders placed under each idempotency key.
	byKey map[string][]string
}

type orderState struct {
	status   Status
	shipment ShipmentStatus
}

func stateOf(o Order) orderState { return orderState{o.Status, o.ShipmentStatus} }

var _ Store = (*MemStore)(nil)

// NewMemStore returns an empty store.
func NewMemStore() *MemStore {
	return &MemStore{orders: map[string]Order{}, byState: map[orderState]map[string]struct{}{}, byKey: map[string][]string{}}
}

// Create implements Store.
func (s *MemStore) Create(ctx context.Context, o Order) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.orders[o.ID]; ok {
		return apperr.New(apperr.Conflict, "order %q exists", o.ID)
	}
	s.orders[o.ID] = clone(o)
	s.index(o)
	if o.IdempotencyKey != "" {
		s.byKey[o.IdempotencyKey] = append(s.byKey[o.IdempotencyKey], o.ID)
	}
	return nil
}

// Update implements Store.
func (s *MemStore) Update(ctx context.Context, o Order) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.orders[o.ID]
	if !ok {
		return apperr.New(apperr.NotFound, "unknown order %q", o.ID)
	}
	if st := stateOf(old); st != stateOf(o) {
		delete(s.byState[st], o.ID)
		s.index(o)
	}
	if old.IdempotencyKey != o.IdempotencyKey {
		s.byKey[old.IdempotencyKey] = slices.DeleteFunc(s.byKey[old.IdempotencyKey], func(id string) bool { return id == o.ID })
		if len(s.byKey[old.IdempotencyKey]) == 0 {
			delete(s.byKey, old.IdempotencyKey)
		}
		if o.IdempotencyKey != "" {
			s.byKey[o.IdempotencyKey] = append(s.byKey[o.IdempotencyKey], o.ID)
		}
	}
	s.orders[o.ID] = clone(o)
	return nil
}

func (s *MemStore) index(o Order) {
	st := stateOf(o)
	ids := s.byState[st]
	if ids == nil {
		ids = map[string]struct{}{}
		s.byState[st] = ids
	}
	ids[o.ID] = struct{}{}
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
	for st, ids := range s.byState {
		if st.status != f.Status || (f.ShipmentStatus != "" && st.shipment != f.ShipmentStatus) {
			continue
		}
		for id := range ids {
			o := s.orders[id]
			if (f.UpdatedBefore.IsZero() || o.UpdatedAt.Before(f.UpdatedBefore)) && (!f.StockHeld || o.StockHeld) {
				out = append(out, clone(o))
			}
		}
	}
	slices.SortFunc(out, func(a, b Order) int { return a.UpdatedAt.Compare(b.UpdatedAt) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// ByIdempotencyKey implements Store.
func (s *MemStore) ByIdempotencyKey(ctx context.Context, key string) ([]Order, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Order
	if key == "" {
		return out, nil
	}
	for _, id := range s.byKey[key] {
		out = append(out, clone(s.orders[id]))
	}
	slices.SortFunc(out, func(a, b Order) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return out, nil
}

// clone keeps callers from sharing the stored order's item slice.
func clone(o Order) Order {
	o.Items = slices.Clone(o.Items)
	o.Degraded = slices.Clone(o.Degraded)
	return o
}
