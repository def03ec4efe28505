package payments

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mercado-lab/mercado/internal/apperr"
)

// MemStore is the in-memory Store of the embedded default. Its figures
// and its pending charges are kept up to date as charges change, so that
// a /metrics scrape or a worker's query costs the same in a store of a
// hundred charges and of a million.
type MemStore struct {
	mu     sync.Mutex
	byKey  map[string]Charge
	nextID int
	// pending holds the keys of the charges still pending.
	pending map[string]struct{}
	// stats are the figures Stats reports; perRequest counts the
	// succeeded charges of each logical checkout.
	stats      Stats
	perRequest map[string]int
}

var _ Store = (*MemStore)(nil)

// NewMemStore returns an empty store.
func NewMemStore() *MemStore {
	return &MemStore{byKey: map[string]Charge{}, pending: map[string]struct{}{}, perRequest: map[string]int{}}
}

// count adds (by +1) or takes away (by -1) one charge from the figures.
func (s *MemStore) count(c Charge, by int) {
	if c.OrderID == "" {
		return // a voided key: never a charge
	}
	s.stats.Charges += by
	if c.Status != StatusSucceeded {
		return
	}
	s.stats.Succeeded += by
	if c.RequestID == "" {
		return
	}
	before := s.perRequest[c.RequestID]
	after := before + by
	switch {
	case before == 0 && after == 1:
		s.stats.RequestIDs++
	case before == 1 && after == 0:
		s.stats.RequestIDs--
	}
	s.stats.Duplicates += max(after-1, 0) - max(before-1, 0)
	if after == 0 {
		delete(s.perRequest, c.RequestID)
	} else {
		s.perRequest[c.RequestID] = after
	}
}

// put stores c under its key, keeping the figures and the pending set.
func (s *MemStore) put(c Charge) {
	if old, ok := s.byKey[c.PaymentKey]; ok {
		s.count(old, -1)
	}
	s.byKey[c.PaymentKey] = c
	s.count(c, +1)
	if c.Status == StatusPending {
		s.pending[c.PaymentKey] = struct{}{}
	} else {
		delete(s.pending, c.PaymentKey)
	}
}

// Claim implements Store.
func (s *MemStore) Claim(ctx context.Context, c Charge) (Charge, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if prior, ok := s.byKey[c.PaymentKey]; ok {
		return prior, false, nil
	}
	s.nextID++
	c.ID = fmt.Sprintf("ch-%d", s.nextID)
	s.put(c)
	return c, true, nil
}

// Settle implements Store.
func (s *MemStore) Settle(ctx context.Context, key string, status Status) (Charge, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.byKey[key]
	if !ok {
		return Charge{}, apperr.New(apperr.NotFound, "no charge under payment key %q", key)
	}
	if c.Status == StatusPending {
		c.Status = status
		s.put(c)
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
	return s.stats, nil
}

// Pending implements Store.
func (s *MemStore) Pending(ctx context.Context, before time.Time, limit int) ([]Charge, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Charge
	for key := range s.pending {
		if c := s.byKey[key]; c.CreatedAt.Before(before) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b Charge) int { return a.CreatedAt.Compare(b.CreatedAt) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
