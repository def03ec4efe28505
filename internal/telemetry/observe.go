package telemetry

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/metric"
)

type poolObserver struct {
	stats func() (inFlight, waiting, capacity int)
	opts  opts
}

type breakerObserver struct {
	state func() int
	opts  opts
}

// ObservePool reports a pool or bulkhead as the gauges mercado_pool_in_flight,
// mercado_pool_waiting and mercado_pool_capacity{pool=name}. stats is called
// at scrape time, never on the request path, so it reads the pool as it is
// when Prometheus looks. Observing the same name again replaces the earlier
// stats: a pool rebuilt on a mode switch is simply observed again. The
// pool's mercado_pool_rejections_total is exported from now on, at zero
// until its first rejection.
func (m *Metrics) ObservePool(name string, stats func() (inFlight, waiting, capacity int)) error {
	if m == nil {
		return nil
	}
	if name == "" || stats == nil {
		return errors.New("telemetry: ObservePool needs a pool name and a stats function")
	}
	o := poolObserver{stats: stats, opts: m.pools.get(name)}
	m.zeroPool(name)
	m.observed.mu.Lock()
	defer m.observed.mu.Unlock()
	if m.observed.pools == nil {
		m.observed.pools = make(map[string]poolObserver)
	}
	m.observed.pools[name] = o
	return nil
}

// ObserveBreaker reports a dependency's circuit breaker as the gauge
// mercado_breaker_state{dep} (BreakerClosed, BreakerHalfOpen, BreakerOpen).
// state is called at scrape time. Observing the same dep again replaces the
// earlier state function. The dependency's mercado_attempts_total,
// mercado_retries_total and mercado_breaker_transitions_total are exported
// from now on, at zero until the first event.
func (m *Metrics) ObserveBreaker(dep string, state func() int) error {
	if m == nil {
		return nil
	}
	if dep == "" || state == nil {
		return errors.New("telemetry: ObserveBreaker needs a dependency name and a state function")
	}
	o := breakerObserver{state: state, opts: m.deps.get(dep)}
	m.zeroDependency(dep)
	m.observed.mu.Lock()
	defer m.observed.mu.Unlock()
	if m.observed.breakers == nil {
		m.observed.breakers = make(map[string]breakerObserver)
	}
	m.observed.breakers[dep] = o
	return nil
}

type capObserver struct {
	cap  func() time.Duration
	opts opts
}

// ObserveCap reports a dependency's cap, its calls' own timeout (the
// most one call may be given), in force when the metrics are read (cap is
// called at every scrape, so a mode switch shows at once), as the gauge
// mercado_hop_cap_seconds{dep}: the headroom rule
// (deploy/prometheus/alerts.yml) subtracts the hop's observed p99 from it.
// A cap of zero or less (none, as with the caps mechanism off) is not
// reported: a hop without a cap has no headroom. Observing the same dep
// again replaces the earlier cap. The dependency's
// mercado_budget_exhausted_total is exported from now on, at zero.
func (m *Metrics) ObserveCap(dep string, cap func() time.Duration) error {
	if m == nil {
		return nil
	}
	if dep == "" || cap == nil {
		return errors.New("telemetry: ObserveCap needs a dependency name and a cap")
	}
	o := capObserver{cap: cap, opts: m.deps.get(dep)}
	m.budgetExhausted.Add(context.Background(), 0, o.opts.add...)
	m.observed.mu.Lock()
	defer m.observed.mu.Unlock()
	if m.observed.caps == nil {
		m.observed.caps = make(map[string]capObserver)
	}
	m.observed.caps[dep] = o
	return nil
}

// observe is the scrape-time callback of the pool and breaker gauges.
func (m *Metrics) observe(_ context.Context, o metric.Observer) error {
	// Copy under the lock, call outside it: a stats function that takes
	// its own locks, or observes another pool, cannot deadlock with us.
	m.observed.mu.Lock()
	pools := make([]poolObserver, 0, len(m.observed.pools))
	for _, p := range m.observed.pools {
		pools = append(pools, p)
	}
	breakers := make([]breakerObserver, 0, len(m.observed.breakers))
	for _, b := range m.observed.breakers {
		breakers = append(breakers, b)
	}
	caps := make([]capObserver, 0, len(m.observed.caps))
	for _, c := range m.observed.caps {
		caps = append(caps, c)
	}
	m.observed.mu.Unlock()

	for _, p := range pools {
		inFlight, waiting, capacity := p.stats()
		o.ObserveInt64(m.poolInFlight, int64(inFlight), p.opts.obs...)
		o.ObserveInt64(m.poolWaiting, int64(waiting), p.opts.obs...)
		o.ObserveInt64(m.poolCapacity, int64(capacity), p.opts.obs...)
	}
	for _, b := range breakers {
		o.ObserveInt64(m.breakerState, int64(b.state()), b.opts.obs...)
	}
	for _, c := range caps {
		if d := c.cap(); d > 0 {
			o.ObserveFloat64(m.hopCap, d.Seconds(), c.opts.obs...)
		}
	}
	return nil
}
