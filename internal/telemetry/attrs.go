package telemetry

import (
	"maps"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// maxCachedLabelValues bounds each cache. Label values come from code
// (method names, dependency names, reasons), so a few dozen is normal; past
// the bound a label bug costs allocations, not unbounded memory.
const maxCachedLabelValues = 1024

// opts holds the measurement options for one label tuple, ready to pass as
// the variadic argument of Add, Record or Observe. Passing a prebuilt slice
// is what keeps the hot path free of allocations: building an attribute.Set,
// or letting the compiler build a one-element option slice for an interface
// call, would allocate on every request.
type opts struct {
	add []metric.AddOption
	rec []metric.RecordOption
	obs []metric.ObserveOption
}

func newOpts(set attribute.Set) opts {
	o := metric.WithAttributeSet(set)
	return opts{
		add: []metric.AddOption{o},
		rec: []metric.RecordOption{o},
		obs: []metric.ObserveOption{o},
	}
}

// attrCache maps a label tuple K to its prebuilt options. Reads are a single
// atomic load and a map lookup, with no lock to contend on; a new tuple
// copies the map (copy-on-write), which happens a few times per label over
// the life of a process.
type attrCache[K comparable] struct {
	attrs func(K) attribute.Set

	m  atomic.Pointer[map[K]opts]
	mu sync.Mutex // serialises writers
}

func newAttrCache[K comparable](attrs func(K) attribute.Set) *attrCache[K] {
	return &attrCache[K]{attrs: attrs}
}

// get returns the options for k, building and caching them the first time.
func (c *attrCache[K]) get(k K) opts {
	if m := c.m.Load(); m != nil {
		if o, ok := (*m)[k]; ok {
			return o
		}
	}
	return c.add(k)
}

func (c *attrCache[K]) add(k K) opts {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old != nil {
		if o, ok := (*old)[k]; ok {
			return o
		}
	}
	o := newOpts(c.attrs(k))
	next := make(map[K]opts)
	if old != nil {
		if len(*old) >= maxCachedLabelValues {
			return o
		}
		next = maps.Clone(*old)
	}
	next[k] = o
	c.m.Store(&next)
	return o
}

// oneLabel returns the attribute builder for a single label.
func oneLabel(key string) func(string) attribute.Set {
	return func(v string) attribute.Set {
		return attribute.NewSet(attribute.String(key, v))
	}
}

// hopKey is the label tuple of mercado_hop_duration_seconds.
type hopKey struct{ dep, outcome string }

func hopAttrs(k hopKey) attribute.Set {
	return attribute.NewSet(
		attribute.String(labelDep, k.dep),
		attribute.String(labelOutcome, k.outcome),
	)
}

// transitionKey is the label tuple of mercado_breaker_transitions_total.
type transitionKey struct{ dep, from, to string }

func transitionAttrs(k transitionKey) attribute.Set {
	return attribute.NewSet(
		attribute.String(labelDep, k.dep),
		attribute.String(labelFrom, k.from),
		attribute.String(labelTo, k.to),
	)
}

// poolKey is the label tuple of mercado_pool_rejections_total.
type poolKey struct{ pool, class string }

func poolAttrs(k poolKey) attribute.Set {
	return attribute.NewSet(
		attribute.String(labelPool, k.pool),
		attribute.String(labelClass, k.class),
	)
}
