package resilience

import (
	"sync/atomic"

	"github.com/mercado-lab/mercado/internal/telemetry"
	"github.com/mercado-lab/mercado/pkg/resilience/bulkhead"
)

// PoolRef holds a pool that a mode switch replaces with a fresh one, so one
// phase's queue never leaks into the next. Work still holding a slot of the
// old pool releases it there.
type PoolRef struct {
	settings bulkhead.Settings
	p        atomic.Pointer[bulkhead.Pool]
}

// NewPoolRef returns a PoolRef holding a new pool with s, and reports the
// pool's figures to m (may be nil).
func NewPoolRef(s bulkhead.Settings, m *telemetry.Metrics) *PoolRef {
	r := &PoolRef{settings: s}
	r.Reset()
	_ = m.ObservePool(s.Name, func() (int, int, int) {
		st := r.Pool().Stats()
		return st.InFlight, st.Waiting, st.Capacity
	})
	return r
}

// Pool returns the pool in force.
func (r *PoolRef) Pool() *bulkhead.Pool { return r.p.Load() }

// Reset puts a new, empty pool in force.
func (r *PoolRef) Reset() { r.p.Store(bulkhead.New(r.settings)) }

// Resize puts a new, empty pool of n slots in force (of the size in force
// when n is zero). Like Reset, it belongs to a mode switch, which runs
// one at a time.
func (r *PoolRef) Resize(n int) {
	if n > 0 {
		r.settings.Capacity = n
	}
	r.Reset()
}

// Name is the pool's name.
func (r *PoolRef) Name() string { return r.settings.Name }
