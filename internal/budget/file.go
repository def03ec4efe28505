// Package budget plans a timeout budget along a call graph: the lessons'
// "choose the total first, then divide it". A File names the target the
// caller will wait, what the edge, the service's own work and the reserve
// take from it, and the graph of dependencies with their p99s; Plan divides
// what is left along the critical path in proportion to p99.
package budget

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.yaml.in/yaml/v3"
)

// Criticality is what a dependency's failure does to the request, in the
// words of docs/criticality.md.
type Criticality string

const (
	Critical    Criticality = "critical"     // its failure fails the request; on the critical path
	Optional    Criticality = "optional"     // a short cap and a default on expiry
	Deferred    Criticality = "deferred"     // needed, but done later by a worker
	FireForward Criticality = "fire-forward" // off the request path, into a queue
)

var criticalities = []Criticality{Critical, Optional, Deferred, FireForward}

// File is a call graph to plan, as written in YAML:
//
//	target: 800ms
//	edge: 20ms
//	own: 0ms
//	reserve: 130ms
//	margin: 0ms
//	graph:
//	  seq:
//	    - call: {name: auth, p99: 70ms}
//	    - par:
//	        - call: {name: catalog, p99: 220ms}
//	        - call: {name: fraud, p99: 300ms, criticality: critical}
//	    - call: {name: recommendations, p99: 60ms, criticality: optional}
type File struct {
	Target  time.Duration // what the caller will wait
	Edge    time.Duration // edge overhead: TLS, auth, parsing
	Own     time.Duration // the service's own work and response assembly
	Reserve time.Duration // cleanup after a timeout, jitter, margin
	Margin  time.Duration // per-hop margin over p99
	// Floor is the least budget a call is started with when calls are
	// clipped to the budget (budgeted mode): `mercado budget predict`
	// applies it; the plan does not.
	Floor time.Duration
	Graph Node
}

// Available is what the dependencies on the critical path share:
// target − edge − own − reserve.
func (f File) Available() time.Duration { return f.Target - f.Edge - f.Own - f.Reserve }

// Node is one element of the graph: exactly one of Seq (in series), Par (in
// parallel) or Call (a dependency).
type Node struct {
	Seq  []Node
	Par  []Node
	Call *Call
	Line int // where it is written, for messages
}

// Call is a dependency.
type Call struct {
	Name string
	P99  time.Duration // zero when it is to come from a shop (--from)
	// P50, when given, makes the call's latency log-normal with this
	// median and P99 (as the lab's faults draw it) for `budget predict`;
	// without it predict takes every call to last its p99.
	P50 time.Duration
	// Cap is the call's own timeout in the shop, for predict; zero means
	// the plan's allocation.
	Cap time.Duration
	// Measured is the call's hop histogram, read from a shop (--from); it
	// stands for P50 and P99 in predict.
	Measured    *dto.Histogram
	Criticality Criticality
	Line        int
}

// Calls lists the graph's calls in the order they are written.
func (n Node) Calls() []*Call {
	var out []*Call
	n.walk(func(c *Call) { out = append(out, c) })
	return out
}

func (n Node) walk(f func(*Call)) {
	if n.Call != nil {
		f(n.Call)
	}
	for _, k := range n.Seq {
		k.walk(f)
	}
	for _, k := range n.Par {
		k.walk(f)
	}
}

// Parse reads a call graph file. name is used in messages ("FILE:LINE:
// what is wrong"). A call may leave out its p99 when allowMissingP99 (the
// p99s then come from a shop); Validate checks they are all there.
func Parse(name string, r io.Reader, allowMissingP99 bool) (File, error) {
	p := parser{name: name, allowMissingP99: allowMissingP99}
	var doc yaml.Node
	if err := yaml.NewDecoder(r).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return File{}, fmt.Errorf("%s: empty file: want target, edge, own, reserve and graph", name)
		}
		return File{}, fmt.Errorf("%s: %w", name, err)
	}
	f, err := p.file(doc.Content[0])
	if err != nil {
		return File{}, err
	}
	if !allowMissingP99 {
		if err := Validate(name, f); err != nil {
			return File{}, err
		}
	}
	return f, nil
}

// Validate checks what Parse cannot before the p99s are known: every call
// has one, and there is something left to divide.
func Validate(name string, f File) error {
	for _, c := range f.Graph.Calls() {
		if c.P99 <= 0 {
			return fmt.Errorf("%s:%d: call %q: no p99 (write p99: 120ms, or read it from a shop with --from)", name, c.Line, c.Name)
		}
	}
	if a := f.Available(); a <= 0 {
		return fmt.Errorf("%s: nothing is available for the dependencies: target %s − edge %s − own %s − reserve %s = %s",
			name, ms(f.Target), ms(f.Edge), ms(f.Own), ms(f.Reserve), ms(a))
	}
	return nil
}

type parser struct {
	name            string
	allowMissingP99 bool
	names           map[string]int
}

func (p *parser) errorf(n *yaml.Node, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", p.name, n.Line, fmt.Sprintf(format, args...))
}

// fields checks n is a mapping with only the allowed keys, and returns its
// values by key.
func (p *parser) fields(n *yaml.Node, what string, allowed ...string) (map[string]*yaml.Node, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errorf(n, "%s: want a mapping with %s", what, strings.Join(allowed, ", "))
	}
	out := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		ok := false
		for _, a := range allowed {
			ok = ok || k.Value == a
		}
		if !ok {
			return nil, p.errorf(k, "%s: unknown field %q (want %s)", what, k.Value, strings.Join(allowed, ", "))
		}
		if _, dup := out[k.Value]; dup {
			return nil, p.errorf(k, "%s: %s given twice", what, k.Value)
		}
		out[k.Value] = v
	}
	return out, nil
}

func (p *parser) duration(n *yaml.Node, field string) (time.Duration, error) {
	if n.Kind != yaml.ScalarNode {
		return 0, p.errorf(n, "%s: want a duration such as 120ms or 2s", field)
	}
	d, err := time.ParseDuration(n.Value)
	if err != nil || d < 0 {
		return 0, p.errorf(n, "%s %q: want a duration such as 120ms or 2s", field, n.Value)
	}
	return d, nil
}

func (p *parser) file(n *yaml.Node) (File, error) {
	m, err := p.fields(n, "the file", "target", "edge", "own", "reserve", "margin", "floor", "graph")
	if err != nil {
		return File{}, err
	}
	var f File
	for _, d := range []struct {
		field    string
		to       *time.Duration
		required bool
	}{{"target", &f.Target, true}, {"edge", &f.Edge, false}, {"own", &f.Own, false}, {"reserve", &f.Reserve, false}, {"margin", &f.Margin, false}, {"floor", &f.Floor, false}} {
		v, ok := m[d.field]
		if !ok {
			if d.required {
				return File{}, p.errorf(n, "no %s: want what the caller will wait, such as %s: 800ms", d.field, d.field)
			}
			continue
		}
		if *d.to, err = p.duration(v, d.field); err != nil {
			return File{}, err
		}
	}
	if f.Target == 0 {
		return File{}, p.errorf(m["target"], "target: want more than 0")
	}
	g, ok := m["graph"]
	if !ok {
		return File{}, p.errorf(n, "no graph: want graph: with seq, par or call")
	}
	p.names = map[string]int{}
	if f.Graph, err = p.node(g, "graph"); err != nil {
		return File{}, err
	}
	return f, nil
}

func (p *parser) node(n *yaml.Node, where string) (Node, error) {
	m, err := p.fields(n, where, "seq", "par", "call")
	if err != nil {
		return Node{}, err
	}
	if len(m) != 1 {
		return Node{}, p.errorf(n, "%s: want exactly one of seq, par or call", where)
	}
	out := Node{Line: n.Line}
	for k, v := range m {
		switch k {
		case "call":
			out.Call, err = p.call(v)
		case "seq":
			out.Seq, err = p.list(v, "seq")
		case "par":
			out.Par, err = p.list(v, "par")
		}
	}
	return out, err
}

func (p *parser) list(n *yaml.Node, kind string) ([]Node, error) {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		return nil, p.errorf(n, "%s: want a list of one or more seq, par or call", kind)
	}
	out := make([]Node, 0, len(n.Content))
	for _, k := range n.Content {
		c, err := p.node(k, kind+" item")
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func (p *parser) call(n *yaml.Node) (*Call, error) {
	m, err := p.fields(n, "call", "name", "p50", "p99", "cap", "criticality")
	if err != nil {
		return nil, err
	}
	c := &Call{Criticality: Critical, Line: n.Line}
	name, ok := m["name"]
	if !ok || name.Kind != yaml.ScalarNode || name.Value == "" {
		return nil, p.errorf(n, "call: no name")
	}
	c.Name = name.Value
	if prev, dup := p.names[c.Name]; dup {
		return nil, p.errorf(name, "call %q: named twice (first on line %d)", c.Name, prev)
	}
	p.names[c.Name] = name.Line
	if v, ok := m["p99"]; ok {
		if c.P99, err = p.duration(v, "call "+c.Name+": p99"); err != nil {
			return nil, err
		}
		if c.P99 == 0 {
			return nil, p.errorf(v, "call %s: p99: want more than 0", c.Name)
		}
	} else if !p.allowMissingP99 {
		return nil, p.errorf(n, "call %q: no p99 (write p99: 120ms, or read it from a shop with --from)", c.Name)
	}
	for _, d := range []struct {
		field string
		to    *time.Duration
	}{{"p50", &c.P50}, {"cap", &c.Cap}} {
		v, ok := m[d.field]
		if !ok {
			continue
		}
		if *d.to, err = p.duration(v, "call "+c.Name+": "+d.field); err != nil {
			return nil, err
		}
		if *d.to == 0 {
			return nil, p.errorf(v, "call %s: %s: want more than 0", c.Name, d.field)
		}
	}
	if c.P50 > 0 && c.P99 > 0 && c.P50 > c.P99 {
		return nil, p.errorf(m["p50"], "call %s: p50 %s is more than its p99 %s", c.Name, ms(c.P50), ms(c.P99))
	}
	if v, ok := m["criticality"]; ok {
		c.Criticality = Criticality(v.Value)
		known := false
		for _, k := range criticalities {
			known = known || c.Criticality == k
		}
		if !known {
			return nil, p.errorf(v, "call %s: criticality %q: want critical, optional, deferred or fire-forward", c.Name, v.Value)
		}
	}
	return c, nil
}

// ms prints a duration in milliseconds, the unit the lessons' tables use.
func ms(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }
