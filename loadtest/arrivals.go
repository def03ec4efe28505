package loadtest

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Arrivals is how a class's requests arrive in a phase: the process its
// schedule follows, at the phase's rate on average.
//
//   - constant: one every 1/rate, a metronome. No two requests meet unless
//     the shop is slow, so it shows the least queueing a rate can cause.
//   - poisson: at random, each instant as likely as any other, as
//     independent shoppers arrive. Requests bunch by chance and queue.
//   - bursty: on for On, off for Off, over and over; in the on part at the
//     rate that keeps the phase's average — rate × (On+Off)/On.
//
// A phase of length d at rate r is sent ⌈r×d⌉ requests whatever the
// process, so that a run's count can be held to its schedule (a Poisson
// process's count is itself random; given its count, its arrivals are
// independent uniform instants in the phase, which is how they are drawn).
// They are drawn from a seed of the scenario's, phase's and class's
// names, so that every mode meets the same arrivals.
type Arrivals struct {
	Kind    string
	On, Off time.Duration
}

// The arrival processes.
const (
	ArrivalsConstant = "constant"
	ArrivalsPoisson  = "poisson"
	ArrivalsBursty   = "bursty"
)

// A bursty process's on and off parts unless the scenario says.
const (
	defaultBurstOn  = 250 * time.Millisecond
	defaultBurstOff = 750 * time.Millisecond
)

// ParseArrivals reads an arrival process: "constant", "poisson", "bursty"
// or "bursty:on=250ms,off=750ms".
func ParseArrivals(s string) (Arrivals, error) {
	kind, params, _ := strings.Cut(strings.TrimSpace(s), ":")
	switch kind {
	case ArrivalsConstant, ArrivalsPoisson:
		if params != "" {
			return Arrivals{}, fmt.Errorf("arrivals %q: %s takes no parameters", s, kind)
		}
		return Arrivals{Kind: kind}, nil
	case ArrivalsBursty:
	default:
		return Arrivals{}, fmt.Errorf("arrivals %q: want constant, poisson or bursty[:on=D,off=D]", s)
	}
	a := Arrivals{Kind: kind, On: defaultBurstOn, Off: defaultBurstOff}
	for p := range strings.SplitSeq(params, ",") {
		if p == "" {
			continue
		}
		key, value, _ := strings.Cut(p, "=")
		var part *time.Duration
		switch key {
		case "on":
			part = &a.On
		case "off":
			part = &a.Off
		default:
			return Arrivals{}, fmt.Errorf("arrivals %q: unknown parameter %q (want on or off)", s, key)
		}
		d, err := time.ParseDuration(value)
		if err != nil || d <= 0 || d > time.Minute {
			return Arrivals{}, fmt.Errorf("arrivals %q: %s wants a duration in (0, 1m], got %q", s, key, value)
		}
		*part = d
	}
	return a, nil
}

// String is the process as a scenario names it; a zero Arrivals is
// constant.
func (a Arrivals) String() string {
	switch a.Kind {
	case "":
		return ArrivalsConstant
	case ArrivalsBursty:
		return fmt.Sprintf("bursty:on=%v,off=%v", a.On, a.Off)
	}
	return a.Kind
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (a *Arrivals) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseArrivals(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*a = v
	return nil
}

// MarshalText implements encoding.TextMarshaler, for results.json (and
// YAML).
func (a Arrivals) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *Arrivals) UnmarshalText(b []byte) error {
	v, err := ParseArrivals(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// schedule is when each of the requests at rate over d is due, from the
// phase's start, in order.
func (a Arrivals) schedule(rate float64, d time.Duration, seed uint64) []time.Duration {
	n := int(math.Ceil(rate*d.Seconds() - 1e-9))
	at := make([]time.Duration, n)
	switch a.Kind {
	case ArrivalsPoisson:
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		for i := range at {
			at[i] = time.Duration(rng.Int64N(int64(d)))
		}
		slices.Sort(at)
	case ArrivalsBursty:
		// The on parts laid end to end are a constant schedule at the on
		// rate; each request is then moved past the off parts before it.
		period := a.On + a.Off
		onRate := rate * period.Seconds() / a.On.Seconds()
		for i := range at {
			on := time.Duration(float64(i) / onRate * float64(time.Second))
			at[i] = on/a.On*period + on%a.On
		}
	default:
		for i := range at {
			at[i] = time.Duration(float64(i) / rate * float64(time.Second))
		}
	}
	return at
}

// arrivalSeed is the seed of one class's arrivals in one phase.
func arrivalSeed(scenario, phase, class string) uint64 {
	h := fnv.New64a()
	for _, s := range []string{scenario, phase, class} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return h.Sum64()
}
