package console

import (
	"sync"
	"time"

	"github.com/mercado-lab/mercado/internal/telemetry"
	"github.com/mercado-lab/mercado/lab/driver"
)

// GaugeSample is one scrape of every service's /metrics, as the charts
// draw it.
type GaugeSample struct {
	// T is when it was taken, Unix milliseconds.
	T int64 `json:"t"`
	// Pools are the pools and bulkheads with any capacity, by
	// "service/pool".
	Pools map[string]Pool `json:"pools"`
	// Breakers are the breakers' states by "service/dep": 0 closed,
	// 1 half-open, 2 open.
	Breakers map[string]float64 `json:"breakers"`
	// Skipped are the calls and requests not served since the last
	// sample, per second, by reason.
	Skipped map[string]float64 `json:"skipped"`
	// Late is the work that finished after its client's deadline since
	// the last sample, per second: how many requests, and how many
	// seconds of work.
	Late     float64 `json:"late"`
	LateWork float64 `json:"late_work"`
	// Retries are the calls tried again since the last sample, per
	// second, every layer's together.
	Retries float64 `json:"retries"`
}

// Pool is one pool's work in flight against its slots.
type Pool struct {
	InFlight float64 `json:"in_flight"`
	Capacity float64 `json:"capacity"`
}

// gauges holds the last minute of samples, and the counters of the last
// scrape, to turn the next one's into rates.
type gauges struct {
	mu      sync.Mutex
	samples []GaugeSample
	last    counters
	err     string
}

// counters are the counters a sample reads as rates.
type counters struct {
	at             time.Time
	skipped        map[string]float64
	late, lateWork float64
	retries        float64
}

func newGauges() *gauges { return &gauges{} }

// add turns one scrape into a sample. A failed scrape adds nothing, and
// says why until the next one works.
func (g *gauges) add(now time.Time, all map[string]driver.Families, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		g.err = err.Error()
		return
	}
	g.err = ""
	s := GaugeSample{T: now.UnixMilli(), Pools: map[string]Pool{}, Breakers: map[string]float64{}, Skipped: map[string]float64{}}
	cur := counters{at: now, skipped: map[string]float64{}}
	for svc, f := range all {
		capacity := f.ByLabel(telemetry.NamePoolCapacity, "pool")
		for pool, v := range f.ByLabel(telemetry.NamePoolInFlight, "pool") {
			if capacity[pool] > 0 {
				s.Pools[svc+"/"+pool] = Pool{InFlight: v, Capacity: capacity[pool]}
			}
		}
		for dep, v := range f.ByLabel(telemetry.NameBreakerState, "dep") {
			s.Breakers[svc+"/"+dep] = v
		}
		for reason, v := range f.ByLabel(telemetry.NameSkipped, "reason") {
			cur.skipped[reason] += v
		}
		cur.late += f.Sum(telemetry.NameLateCompletions, nil)
		cur.lateWork += f.Sum(telemetry.NameLateWork, nil)
		cur.retries += f.Sum(telemetry.NameRetries, nil)
	}
	if prev := g.last; !prev.at.IsZero() {
		secs := now.Sub(prev.at).Seconds()
		for reason, v := range cur.skipped {
			s.Skipped[reason] = max(v-prev.skipped[reason], 0) / secs
		}
		s.Late = max(cur.late-prev.late, 0) / secs
		s.LateWork = max(cur.lateWork-prev.lateWork, 0) / secs
		s.Retries = max(cur.retries-prev.retries, 0) / secs
	}
	g.last = cur
	g.samples = append(g.samples, s)
	for len(g.samples) > 0 && now.Sub(time.UnixMilli(g.samples[0].T)) > window {
		g.samples = g.samples[1:]
	}
}

// history is the last minute of samples, oldest first.
func (g *gauges) history() []GaugeSample {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]GaugeSample{}, g.samples...)
}

func (g *gauges) lastError() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}
