// Package faults simulates the work of a service or of its vendor (a
// payment provider, a carrier) so the lab can make a dependency slow on
// purpose: a fixed latency per method, or a hang (slow, not down).
package faults

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/internal/timing"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// DefaultHang is how long a hang lasts when the spec gives no duration:
// long enough to outlast any budget in the lab, short enough that a
// forgotten hang does not pin goroutines for ever.
const DefaultHang = time.Minute

// Spec is the simulated behaviour of one method.
type Spec struct {
	// Latency is how long each call's work takes, fixed.
	Latency time.Duration
	// P50 and P99, when set, draw each call's work time from a log-normal
	// distribution with that median and 99th percentile instead.
	P50, P99 time.Duration
	// Delay is added to every call's work time.
	Delay time.Duration
	// ErrorRate is the share of calls, 0 to 1, that fail (Unavailable)
	// after doing their work.
	ErrorRate float64
	// RefuseRate is the share of calls, 0 to 1, that the service refuses
	// at its door, before doing anything (Unavailable, marked not
	// processed: a retry cannot do anything twice). See Injector.Refuse.
	RefuseRate float64
	// Hang adds a long stall on top of the rest: the dependency is slow,
	// not down, and it answers eventually.
	Hang time.Duration
	// Slots, when set, is how many calls the method works on at once, as
	// a dependency of bounded capacity does: a call waits in line for a
	// slot, its wait counted in its time, so that more than Slots calls
	// per work time make every call slower.
	Slots int
}

// Duration draws how long one call's work takes.
func (s Spec) Duration() time.Duration {
	d := s.Latency + s.Delay + s.Hang
	if s.P50 > 0 && s.P99 > 0 {
		d += logNormal(s.P50, s.P99, rand.NormFloat64())
	}
	return d
}

// z99 is the standard normal's 99th percentile.
const z99 = 2.3263478740

// logNormal returns the value at standard normal deviate z of the
// log-normal distribution whose median is p50 and 99th percentile p99.
func logNormal(p50, p99 time.Duration, z float64) time.Duration {
	mu := math.Log(float64(p50))
	sigma := (math.Log(float64(p99)) - mu) / z99
	return time.Duration(math.Exp(mu + sigma*z))
}

// LogNormalCDF is the probability that a draw of the log-normal
// distribution whose median is p50 and 99th percentile p99 (Spec's) is at
// most d: what `mercado budget predict` composes for a call declared so.
func LogNormalCDF(p50, p99, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	mu := math.Log(float64(p50))
	sigma := (math.Log(float64(p99)) - mu) / z99
	if sigma <= 0 {
		if d >= p50 {
			return 1
		}
		return 0
	}
	return 0.5 * math.Erfc(-(math.Log(float64(d))-mu)/(sigma*math.Sqrt2))
}

// Validate reports a spec that cannot be simulated.
func (s Spec) Validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"latency", s.Latency}, {"p50", s.P50}, {"p99", s.P99}, {"delay", s.Delay}, {"hang", s.Hang}} {
		if d.v < 0 || d.v > time.Hour {
			return fmt.Errorf("%s: %v is outside 0 to 1h", d.name, d.v)
		}
	}
	switch {
	case (s.P50 > 0) != (s.P99 > 0):
		return errors.New("p50 and p99 go together")
	case s.P99 < s.P50:
		return fmt.Errorf("p99 %v is below p50 %v", s.P99, s.P50)
	case s.P50 > 0 && s.Latency > 0:
		return errors.New("give either latency or p50/p99, not both")
	case s.ErrorRate < 0 || s.ErrorRate > 1 || math.IsNaN(s.ErrorRate):
		return fmt.Errorf("error-rate: %v is outside 0 to 1", s.ErrorRate)
	case s.RefuseRate < 0 || s.RefuseRate > 1 || math.IsNaN(s.RefuseRate):
		return fmt.Errorf("refuse-rate: %v is outside 0 to 1", s.RefuseRate)
	case s.Slots < 0 || s.Slots > MaxSlots:
		return fmt.Errorf("slots: %d is outside 1 to %d", s.Slots, MaxSlots)
	}
	return nil
}

func (s Spec) String() string {
	var parts []string
	add := func(name string, d time.Duration) {
		if d > 0 {
			parts = append(parts, name+"="+d.String())
		}
	}
	add("latency", s.Latency)
	add("p50", s.P50)
	add("p99", s.P99)
	add("delay", s.Delay)
	if s.ErrorRate > 0 {
		parts = append(parts, "error-rate="+strconv.FormatFloat(s.ErrorRate, 'g', -1, 64))
	}
	if s.RefuseRate > 0 {
		parts = append(parts, "refuse-rate="+strconv.FormatFloat(s.RefuseRate, 'g', -1, 64))
	}
	add("hang", s.Hang)
	if s.Slots > 0 {
		parts = append(parts, "slots="+strconv.Itoa(s.Slots))
	}
	return strings.Join(parts, ",")
}

// MaxSlots bounds a spec's slots.
const MaxSlots = 10000

// AllMethods is the method name that applies to every method without a
// spec of its own.
const AllMethods = "*"

// Set maps method names (the gRPC method's short name, such as
// "ReserveStock", or AllMethods) to their specs. It is a flag.Value: each
// Set call adds specs written as
//
//	[Method:]key=value[,key=value]...
//
// with keys latency, p50 and p99, delay (Go durations), error-rate and
// refuse-rate (0 to 1), hang (a duration, or no value for DefaultHang) and
// slots (how many calls are worked on at once), several separated by ";".
// For example "ReserveStock:latency=280ms",
// "CreateCharge:p50=100ms,p99=400ms,error-rate=0.1", "CreateCharge:refuse-rate=1",
// "CreateShipment:hang" or "CreateCharge:latency=200ms,slots=10".
type Set map[string]Spec

// Parse parses specs in the flag syntax.
func Parse(text string) (Set, error) {
	s := Set{}
	if err := s.Set(text); err != nil {
		return nil, err
	}
	return s, nil
}

// Set implements flag.Value.
func (s *Set) Set(text string) error {
	if *s == nil {
		*s = Set{}
	}
	for _, one := range strings.Split(text, ";") {
		one = strings.TrimSpace(one)
		if one == "" {
			continue
		}
		method, body := AllMethods, one
		if i := strings.Index(one, ":"); i >= 0 {
			method, body = strings.TrimSpace(one[:i]), one[i+1:]
			if method == "" {
				return fmt.Errorf("fault %q: empty method name", one)
			}
		}
		spec, err := parseSpec(body)
		if err != nil {
			return fmt.Errorf("fault %q: %w", one, err)
		}
		(*s)[method] = spec
	}
	return nil
}

func parseSpec(body string) (Spec, error) {
	var spec Spec
	durations := map[string]*time.Duration{
		"latency": &spec.Latency, "p50": &spec.P50, "p99": &spec.P99, "delay": &spec.Delay,
	}
	for _, kv := range strings.Split(body, ",") {
		key, val, hasVal := strings.Cut(strings.TrimSpace(kv), "=")
		if dst, ok := durations[key]; ok {
			d, err := parseDuration(val, hasVal)
			if err != nil {
				return Spec{}, fmt.Errorf("%s: %w", key, err)
			}
			*dst = d
			continue
		}
		switch key {
		case "error-rate", "refuse-rate":
			r, err := strconv.ParseFloat(val, 64)
			if err != nil || !hasVal {
				return Spec{}, fmt.Errorf("%s: %q is not a number from 0 to 1", key, val)
			}
			if key == "error-rate" {
				spec.ErrorRate = r
			} else {
				spec.RefuseRate = r
			}
		case "hang":
			if !hasVal {
				spec.Hang = DefaultHang
				continue
			}
			d, err := parseDuration(val, hasVal)
			if err != nil {
				return Spec{}, fmt.Errorf("hang: %w", err)
			}
			spec.Hang = d
		case "slots":
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 {
				return Spec{}, fmt.Errorf("slots: %q is not a whole number from 1 to %d", val, MaxSlots)
			}
			spec.Slots = n
		default:
			return Spec{}, fmt.Errorf("unknown key %q (want latency, p50, p99, delay, error-rate, refuse-rate, hang or slots)", key)
		}
	}
	return spec, spec.Validate()
}

func parseDuration(val string, hasVal bool) (time.Duration, error) {
	if !hasVal || val == "" {
		return 0, fmt.Errorf("needs a duration such as 280ms")
	}
	d, err := time.ParseDuration(val)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 280ms", val)
	}
	if d < 0 || d > time.Hour {
		return 0, fmt.Errorf("%v is outside 0 to 1h", d)
	}
	return d, nil
}

// String implements flag.Value.
func (s *Set) String() string {
	if s == nil || len(*s) == 0 {
		return ""
	}
	methods := make([]string, 0, len(*s))
	for m := range *s {
		methods = append(methods, m)
	}
	sort.Strings(methods)
	parts := make([]string, len(methods))
	for i, m := range methods {
		spec := (*s)[m].String()
		if spec == "" {
			spec = "latency=0s" // no simulated work, overriding "*"
		}
		parts[i] = m + ":" + spec
	}
	return strings.Join(parts, ";")
}

// Injector applies a Set to the work it simulates, under the cancellation
// rule of the mode in force. It is safe for concurrent use, and its Set
// can be replaced while calls run.
type Injector struct {
	settings *mode.Live // the mode's HonourCancel; nil always honours

	mu  sync.RWMutex
	set Set
	// lines are the slots of each spec of set that has any, by the
	// same key: a buffered channel a call sends to while it works.
	lines map[string]chan struct{}

	halt     chan struct{} // closed by Halt
	haltOnce sync.Once
}

// NewInjector returns an Injector applying s, whose simulated waits follow
// the HonourCancel switch of settings (see Work). With nil settings, as
// in a test that never calls Work, every wait honours cancellation.
func NewInjector(s Set, settings *mode.Live) *Injector {
	in := &Injector{settings: settings, halt: make(chan struct{})}
	in.Replace(s)
	return in
}

// Halt ends every simulated work still running, and any started later,
// with ErrHalted: the process doing it is gone, as a process's exit ends
// the reads it was blocked in. Without it, work that ignores its context
// (HonourCancel off) would outlive a service stopped in-process.
func (in *Injector) Halt() {
	in.haltOnce.Do(func() { close(in.halt) })
}

// Replace puts s in force. A spec whose slots change gets a new line:
// the calls in the old one finish there, so the capacity moves to the new
// figure within one work time.
func (in *Injector) Replace(s Set) {
	in.mu.Lock()
	defer in.mu.Unlock()
	lines := map[string]chan struct{}{}
	for key, spec := range s {
		if spec.Slots == 0 {
			continue
		}
		if old, ok := in.lines[key]; ok && cap(old) == spec.Slots {
			lines[key] = old
			continue
		}
		lines[key] = make(chan struct{}, spec.Slots)
	}
	in.set, in.lines = s, lines
}

// Spec returns the spec in force for method: its own, else the
// AllMethods spec, unless the method takes only its own (the catalog's
// Commit).
func (in *Injector) Spec(method string) Spec {
	spec, _ := in.specAndLine(method)
	return spec
}

// specAndLine is Spec, and the line of slots that goes with it (nil for
// a spec with none).
func (in *Injector) specAndLine(method string) (Spec, chan struct{}) {
	in.mu.RLock()
	defer in.mu.RUnlock()
	key := method
	if _, ok := in.set[method]; !ok {
		if namedOnly[method] {
			return Spec{}, nil
		}
		key = AllMethods
	}
	return in.set[key], in.lines[key]
}

// Set returns the set in force.
func (in *Injector) Set() Set {
	in.mu.RLock()
	defer in.mu.RUnlock()
	return maps.Clone(in.set)
}

// ErrRefused is the error of a call the refuse rate chose to turn away:
// the service refused it before doing anything, and says so
// (apperr.ReasonNotProcessed), so its caller knows that nothing was done
// and that trying again cannot do it twice.
var ErrRefused error = &apperr.Error{Code: apperr.Unavailable, Reason: apperr.ReasonNotProcessed,
	Message: "simulated refusal (fault refuse-rate): the request was turned away before any work"}

// ErrHalted is the error of simulated work cut off by Halt.
var ErrHalted error = &apperr.Error{Code: apperr.Unavailable, Message: "the service stopped"}

// An Injector is the Simulator the services are handed.
var _ sim.Simulator = (*Injector)(nil)

// Work simulates method's work (one of the method names in internal/sim)
// as the mode of ctx's request says a wait behaves:
//
//   - HonourCancel on (budgeted): the wait ends early, with the context's
//     cause, once ctx is done;
//   - HonourCancel off (naive): it blocks for the whole time, like a socket
//     read with no timeout, whatever ctx says.
//
// Either way Halt ends it with ErrHalted, and a call the error rate picks
// fails with sim.ErrInjected after its work. Work that took time is
// recorded as a hop of the request (see internal/timing), under the
// method's hop name, so the edge's Server-Timing shows it.
func (in *Injector) Work(ctx context.Context, method string) error {
	spec, line := in.specAndLine(method)
	d := spec.Duration()
	if d <= 0 {
		return spec.fail()
	}
	done := ctx.Done()
	if !in.honoursCancel(ctx) {
		done = nil // like a socket read with no timeout
	}
	start := time.Now()
	err := in.work(ctx, spec, d, line, done)
	if timing.FromContext(ctx) != nil {
		outcome := deadline.Classify(ctx, deadline.Decision{}, err)
		timing.EndCall(ctx, timing.Hop{Name: hopName(method), Took: time.Since(start), Outcome: string(outcome)})
	}
	return err
}

// work waits for a slot in line (when the spec has slots), then for d:
// either wait ends early when done is closed or the injector halts.
func (in *Injector) work(ctx context.Context, spec Spec, d time.Duration, line chan struct{}, done <-chan struct{}) error {
	if line != nil {
		select {
		case line <- struct{}{}:
			defer func() { <-line }()
		case <-done:
			return context.Cause(ctx)
		case <-in.halt:
			return ErrHalted
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return spec.fail()
	case <-done:
		return context.Cause(ctx)
	case <-in.halt:
		return ErrHalted
	}
}

// Refuse is the service's door for a request to method: ErrRefused for
// the share of calls the refuse rate picks, nil for the others. It does
// no work and takes no time; the services call it before anything else
// (serve.StartGRPC for every gRPC method the service simulates, the
// gateway before its own work on a checkout), so a refused request has
// changed nothing.
func (in *Injector) Refuse(method string) error {
	if r := in.Spec(method).RefuseRate; r > 0 && rand.Float64() < r {
		return ErrRefused
	}
	return nil
}

// honoursCancel is the cancellation rule of the mode ctx's request runs
// in (its snapshot; see mode.Live.For).
func (in *Injector) honoursCancel(ctx context.Context) bool {
	return in.settings == nil || in.settings.For(ctx).Mechanisms.HonourCancel
}

// fail is the end of one call's work: sim.ErrInjected for the share of calls
// the error rate picks.
func (s Spec) fail() error {
	if s.ErrorRate > 0 && rand.Float64() < s.ErrorRate {
		return sim.ErrInjected
	}
	return nil
}
