// Package faults simulates the work of a service or of its vendor (a
// payment provider, a carrier) so the lab can make a dependency slow on
// purpose: a fixed latency per method, or a hang (slow, not down).
package faults

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// DefaultHang is how long a hang lasts when the spec gives no duration:
// long enough to outlast any budget in the lab, short enough that a
// forgotten hang does not pin goroutines for ever.
const DefaultHang = time.Minute

// Spec is the simulated behaviour of one method.
type Spec struct {
	// Latency is how long each call's work takes.
	Latency time.Duration
	// Hang adds a long stall on top of Latency: the dependency is slow,
	// not down, and it answers eventually.
	Hang time.Duration
}

// Delay is the total time the work takes.
func (s Spec) Delay() time.Duration { return s.Latency + s.Hang }

func (s Spec) String() string {
	var parts []string
	if s.Latency > 0 {
		parts = append(parts, "latency="+s.Latency.String())
	}
	if s.Hang > 0 {
		parts = append(parts, "hang="+s.Hang.String())
	}
	return strings.Join(parts, ",")
}

// AllMethods is the method name that applies to every method without a
// spec of its own.
const AllMethods = "*"

// Set maps method names (the gRPC method's short name, such as
// "ReserveStock", or AllMethods) to their specs. It is a flag.Value: each
// Set call adds specs written as
//
//	[Method:]key=value[,key=value]...
//
// with keys latency (a Go duration) and hang (a duration, or no value for
// DefaultHang), several separated by ";". For example
// "ReserveStock:latency=280ms" or "CreateShipment:hang".
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
	for _, kv := range strings.Split(body, ",") {
		key, val, hasVal := strings.Cut(strings.TrimSpace(kv), "=")
		switch key {
		case "latency":
			d, err := parseDuration(val, hasVal)
			if err != nil {
				return Spec{}, fmt.Errorf("latency: %w", err)
			}
			spec.Latency = d
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
		default:
			return Spec{}, fmt.Errorf("unknown key %q (want latency or hang)", key)
		}
	}
	return spec, nil
}

func parseDuration(val string, hasVal bool) (time.Duration, error) {
	if !hasVal || val == "" {
		return 0, fmt.Errorf("needs a duration such as 280ms")
	}
	d, err := time.ParseDuration(val)
	if err != nil {
		return 0, err
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
		parts[i] = m + ":" + (*s)[m].String()
	}
	return strings.Join(parts, ";")
}

// Injector applies a Set to the work it simulates. It is safe for
// concurrent use, and its Set can be replaced while calls run.
type Injector struct {
	mu  sync.RWMutex
	set Set
}

// NewInjector returns an Injector applying s.
func NewInjector(s Set) *Injector {
	return &Injector{set: s}
}

// Replace puts s in force.
func (in *Injector) Replace(s Set) {
	in.mu.Lock()
	in.set = s
	in.mu.Unlock()
}

// Spec returns the spec in force for method.
func (in *Injector) Spec(method string) Spec {
	in.mu.RLock()
	defer in.mu.RUnlock()
	if s, ok := in.set[method]; ok {
		return s
	}
	return in.set[AllMethods]
}

// Work simulates method's work. When honourCancel is true it ends early,
// with the context's error, once ctx is done; otherwise it blocks for the
// whole delay like a socket read with no timeout, whatever ctx says.
func (in *Injector) Work(ctx context.Context, method string, honourCancel bool) error {
	d := in.Spec(method).Delay()
	if d <= 0 {
		return nil
	}
	if !honourCancel {
		time.Sleep(d)
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
