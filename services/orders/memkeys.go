package orders

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/mercado-lab/mercado/internal/apperr"
)

// MemKeys is the in-memory Keys of the embedded default. It records its
// keys' orders in the order store it was made with, holding its lock
// across both writes, so that other goroutines see the key and the order
// written together or not at all, as a transaction would show them. (So
// the order store runs under that lock, and must not call back into it.)
type MemKeys struct {
	mu     sync.Mutex
	keys   map[string]KeyRecord
	orders Store
}

var _ Keys = (*MemKeys)(nil)

// NewMemKeys returns an empty key store that records its keys' orders in
// store: the Service's own Store (the memory one, in the embedded
// default).
func NewMemKeys(store Store) *MemKeys {
	return &MemKeys{keys: map[string]KeyRecord{}, orders: store}
}

// Claim takes key as ClaimWithOrder does, but records no order. The
// Service always claims with its order; the tests use Claim to leave a
// key as a holder that vanished would.
func (m *MemKeys) Claim(ctx context.Context, key, hash string, now, leaseUntil time.Time) (KeyRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, claimed := m.claim(key, hash, now, leaseUntil)
	return rec, claimed, nil
}

// claim is Claim with m.mu held.
func (m *MemKeys) claim(key, hash string, now, leaseUntil time.Time) (KeyRecord, bool) {
	rec, ok := m.keys[key]
	if ok && (rec.Completed || now.Before(rec.LeaseUntil) || rec.RequestHash != hash) {
		return rec, false
	}
	rec = KeyRecord{Key: key, RequestHash: hash, LeaseUntil: leaseUntil, CreatedAt: now, TakenOver: ok}
	m.keys[key] = rec
	return rec, true
}

// ClaimWithOrder implements Keys. The key was unknown when o is created,
// so a failed create is undone by forgetting the key.
func (m *MemKeys) ClaimWithOrder(ctx context.Context, key, hash string, now, leaseUntil time.Time, o Order) (KeyRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, claimed := m.claim(key, hash, now, leaseUntil)
	if !claimed || rec.TakenOver {
		return rec, claimed, nil
	}
	if err := m.orders.Create(ctx, o); err != nil {
		delete(m.keys, key)
		return KeyRecord{}, false, err
	}
	return rec, true, nil
}

// Complete implements Keys.
func (m *MemKeys) Complete(ctx context.Context, key string, response []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.complete(key, response) {
		return apperr.New(apperr.NotFound, "unknown idempotency key %q", key)
	}
	return nil
}

// complete stores key's answer with m.mu held, and reports whether key
// was there to answer.
func (m *MemKeys) complete(key string, response []byte) bool {
	rec, ok := m.keys[key]
	if !ok {
		return false
	}
	rec.Completed, rec.Response = true, slices.Clone(response)
	m.keys[key] = rec
	return true
}

// CompleteWithOrder implements Keys.
func (m *MemKeys) CompleteWithOrder(ctx context.Context, o Order, key string, response []byte) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.orders.Update(ctx, o); err != nil {
		return false, err
	}
	return m.complete(key, response), nil
}

// Release implements Keys.
func (m *MemKeys) Release(ctx context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rec, ok := m.keys[key]; ok && !rec.Completed {
		delete(m.keys, key)
	}
	return nil
}

// Reap implements Keys.
func (m *MemKeys) Reap(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, rec := range m.keys {
		if n == limit {
			break
		}
		if rec.CreatedAt.Before(cutoff) {
			delete(m.keys, k)
			n++
		}
	}
	return n, nil
}
