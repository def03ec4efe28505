package orders

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/mercado-lab/mercado/internal/apperr"
)

// MemKeys is the in-memory Keys of the embedded default.
type MemKeys struct {
	mu   sync.Mutex
	keys map[string]KeyRecord
}

var _ Keys = (*MemKeys)(nil)

// NewMemKeys returns an empty key store.
func NewMemKeys() *MemKeys { return &MemKeys{keys: map[string]KeyRecord{}} }

// Claim implements Keys.
func (m *MemKeys) Claim(ctx context.Context, key, hash string, now, leaseUntil time.Time) (KeyRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.keys[key]
	if ok && (rec.Completed || now.Before(rec.LeaseUntil) || rec.RequestHash != hash) {
		return rec, false, nil
	}
	rec = KeyRecord{Key: key, RequestHash: hash, LeaseUntil: leaseUntil, CreatedAt: now, TakenOver: ok}
	m.keys[key] = rec
	return rec, true, nil
}

// Complete implements Keys.
func (m *MemKeys) Complete(ctx context.Context, key string, response []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.keys[key]
	if !ok {
		return apperr.New(apperr.NotFound, "unknown idempotency key %q", key)
	}
	rec.Completed, rec.Response = true, slices.Clone(response)
	m.keys[key] = rec
	return nil
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
