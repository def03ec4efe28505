package budgetcheck

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// Contract is what one service publishes at GET /admin/budget: the
// budget it needs and the one it promises, with the settings and calls
// they come from. docs/api.md describes the JSON.
type Contract struct {
	Service    string          `json:"service"`
	Mode       mode.Mode       `json:"mode"`
	Mechanisms mode.Mechanisms `json:"mechanisms"`
	MarginMS   float64         `json:"margin_ms"`
	FloorMS    float64         `json:"floor_ms"`
	// ConnectTimeoutMS is the --connect-timeout figure, in force while
	// the connect_timeout mechanism is on (gRPC's default, 20 s, when off).
	ConnectTimeoutMS float64 `json:"connect_timeout_ms"`
	// HonoursDeadline: the service answers by its caller's deadline
	// (honour_cancel and admission on), so it never makes its caller
	// wait past it.
	HonoursDeadline bool `json:"honours_deadline"`
	// Accepts is the longest deadline accepted per class (0: any).
	Accepts  []ClassLimit   `json:"accepts"`
	Calls    []CallContract `json:"calls"`
	Needs    []Need         `json:"needs"`
	Promises []Promise      `json:"promises"`
	// Edge is the edge's budgets and HTTP write timeout (the gateway's
	// contract only).
	Edge *EdgeContract `json:"edge,omitempty"`
}

// EdgeContract is what the edge decides.
type EdgeContract struct {
	Budgets        []ClassBudget `json:"budgets"`
	WriteTimeoutMS float64       `json:"write_timeout_ms"`
}

// ClassBudget is a class's default budget and the most a client may ask
// for.
type ClassBudget struct {
	Class     deadline.Class `json:"class"`
	DefaultMS float64        `json:"default_ms"`
	MaxMS     float64        `json:"max_ms"`
}

// PublishEdge is e as a contract shows it.
func PublishEdge(e Edge) *EdgeContract {
	out := &EdgeContract{WriteTimeoutMS: msf(e.WriteTimeout)}
	for _, c := range []deadline.Class{deadline.Interactive, deadline.Background, deadline.Batch} {
		b := e.Budgets.For(c)
		out.Budgets = append(out.Budgets, ClassBudget{Class: c, DefaultMS: msf(b.Default), MaxMS: msf(b.Max)})
	}
	return out
}

// FromContracts is the shop the contracts describe: each service's
// settings, what it accepts and its calls, the edge from the contract
// that has one, and the contracts themselves, to compose.
func FromContracts(source string, contracts []Contract) Deployment {
	s := Deployment{Source: source, Contracts: contracts}
	for _, c := range contracts {
		svc := Service{Name: c.Service, Accepts: map[deadline.Class]time.Duration{},
			Settings: mode.Settings{Mode: c.Mode, Mechanisms: c.Mechanisms, Margin: fromMS(c.MarginMS), Floor: fromMS(c.FloorMS),
				Connect: fromMS(c.ConnectTimeoutMS)}}
		for _, a := range c.Accepts {
			svc.Accepts[a.Class] = fromMS(a.MS)
		}
		s.Services = append(s.Services, svc)
		for _, k := range c.Calls {
			s.Calls = append(s.Calls, Call{From: c.Service, To: k.To, Dep: k.Dep, Setting: k.Setting, Cap: fromMS(k.CapMS),
				Attempts: k.Attempts, Criticality: k.Criticality, Stage: k.Stage, Parallel: k.Parallel, Route: k.Route, Method: k.Method,
				ObservedP99: fromMS(k.ObservedP99MS), TimedOut: k.TimedOutShare, Observed: k.Observed})
		}
		if c.Edge != nil {
			s.Edge.Service, s.Edge.WriteTimeout = c.Service, fromMS(c.Edge.WriteTimeoutMS)
			for _, b := range c.Edge.Budgets {
				cb := deadline.ClassBudget{Default: fromMS(b.DefaultMS), Max: fromMS(b.MaxMS)}
				switch b.Class {
				case deadline.Interactive:
					s.Edge.Budgets.Interactive = cb
				case deadline.Background:
					s.Edge.Budgets.Background = cb
				case deadline.Batch:
					s.Edge.Budgets.Batch = cb
				}
			}
		}
	}
	return s
}

// ClassLimit is a class's longest accepted deadline.
type ClassLimit struct {
	Class deadline.Class `json:"class"`
	MS    float64        `json:"ms"`
}

// CallContract is one of the service's outbound calls.
type CallContract struct {
	Dep         string  `json:"dep"`
	To          string  `json:"to"`
	Route       string  `json:"route"`
	Method      string  `json:"method"`
	Setting     string  `json:"setting,omitempty"`
	CapMS       float64 `json:"cap_ms"`
	Attempts    int     `json:"attempts"`
	Criticality string  `json:"criticality"`
	Stage       int     `json:"stage"`
	Parallel    bool    `json:"parallel"`
	// ObservedP99MS is the call's p99 over its successful calls so far,
	// from the service's hop histogram (0 with no traffic yet).
	ObservedP99MS float64 `json:"observed_p99_ms"`
	// Observed is how many calls the p99 is over; TimedOutShare the
	// share of them that ran into the cap.
	Observed      uint64  `json:"observed"`
	TimedOutShare float64 `json:"timed_out_share"`
}

// Need is the budget one of the service's requests needs: its own
// work's p99 plus that of its in-line dependencies (in series, the slower
// of a parallel stage).
type Need struct {
	Route string         `json:"route"`
	Class deadline.Class `json:"class"`
	MS    float64        `json:"ms"`
	// Source is "observed" when every in-line dependency's p99 comes from
	// the hop histograms, "config" when one has no traffic yet (its
	// share is then the floor, the least time in which a hop answers).
	// Own work always comes from config: the simulated work set with
	// --fault.
	Source string  `json:"source"`
	OwnMS  float64 `json:"own_ms"`
	// Dependencies are the in-line calls the need counts.
	Dependencies []string `json:"dependencies"`
}

// Promise is the longest the service takes to answer a request of a
// class, given its caps, attempts, floor, margin and the class's maximum.
// A service with caps off promises no bound, unless it answers by its
// caller's deadline.
type Promise struct {
	Class deadline.Class `json:"class"`
	// MS is the promise; meaningless when Bounded is false.
	MS      float64 `json:"ms"`
	Bounded bool    `json:"bounded"`
	// ByDeadline: and never later than the caller's own deadline.
	ByDeadline bool `json:"by_deadline"`
}

// Publish is the contract of a service with settings s that accepts the
// given deadlines per class, makes calls, and whose own work per route
// (method) takes own.
func Publish(name string, s mode.Settings, accepts map[deadline.Class]time.Duration, calls []Call, own map[string]time.Duration) Contract {
	c := Contract{Service: name, Mode: s.Mode, Mechanisms: s.Mechanisms, MarginMS: msf(s.Margin), FloorMS: msf(s.Floor), ConnectTimeoutMS: msf(s.Connect),
		HonoursDeadline: s.Mechanisms.HonourCancel && s.Mechanisms.Admission}
	classes := []deadline.Class{deadline.Interactive, deadline.Background, deadline.Batch}
	for _, class := range classes {
		c.Accepts = append(c.Accepts, ClassLimit{Class: class, MS: msf(accepts[class])})
	}
	var routes []string
	for _, call := range calls {
		c.Calls = append(c.Calls, CallContract{Dep: call.Dep, To: call.To, Route: call.Route, Method: call.Method,
			Setting: call.Setting, CapMS: msf(call.Cap), Attempts: call.Attempts, Criticality: call.Criticality,
			Stage: call.Stage, Parallel: call.Parallel, ObservedP99MS: msf(call.ObservedP99), Observed: call.Observed,
			TimedOutShare: math.Round(call.TimedOut*1000) / 1000})
		if !slices.Contains(routes, call.Route) {
			routes = append(routes, call.Route)
		}
	}
	for r := range own {
		if !slices.Contains(routes, r) {
			routes = append(routes, r)
		}
	}
	slices.Sort(routes)
	// The service alone: its callees are unknown here, so each capped
	// call is worth its cap, and an uncapped one is unbounded.
	alone := Deployment{Services: []Service{{Name: name, Settings: s, Accepts: accepts}}}
	for _, call := range calls {
		call.To = "" // no service of this shop
		alone.Calls = append(alone.Calls, call)
	}
	var longest time.Duration
	for _, r := range routes {
		longest = max(longest, addSat(own[r], alone.Worst(name, r, forever)))
	}
	// With caps off nothing in the service bounds a wait, not even its
	// own vendor's (the work the faults simulate): the configured figures
	// are what the dependencies take today, not a bound. Only keeping the
	// caller's deadline (below) still bounds the answer.
	if !s.Mechanisms.Caps {
		longest = forever
	}
	for _, class := range classes {
		for _, r := range routes {
			need, source, deps := own[r], "observed", []string{}
			stages := map[int]time.Duration{}
			for _, call := range calls {
				if call.Route != r || call.Criticality == Optional || call.Criticality == FireForward {
					continue
				}
				p := call.ObservedP99
				if p <= 0 {
					p, source = s.Floor, "config"
				}
				deps = append(deps, call.Dep)
				if call.Parallel {
					stages[call.Stage] = max(stages[call.Stage], p)
				} else {
					stages[call.Stage] += p
				}
			}
			if len(deps) == 0 {
				source = "config"
			}
			for _, d := range stages {
				need += d
			}
			c.Needs = append(c.Needs, Need{Route: r, Class: class, MS: msf(need), Source: source, OwnMS: msf(own[r]), Dependencies: deps})
		}
		p := Promise{Class: class, MS: msf(longest), Bounded: longest != forever}
		if c.HonoursDeadline && accepts[class] > 0 {
			p.ByDeadline = true
			if longest > accepts[class] {
				p.MS, p.Bounded = msf(accepts[class]), true
			}
		}
		if !p.Bounded {
			p.MS = 0
		}
		c.Promises = append(c.Promises, p)
	}
	return c
}

// msf is d in milliseconds, fractions kept.
func msf(d time.Duration) float64 {
	if d == forever {
		return 0
	}
	return math.Round(float64(d)/float64(time.Microsecond)) / 1000
}

func fromMS(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

func (s Deployment) contract(name string) (Contract, bool) {
	for _, c := range s.Contracts {
		if c.Service == name {
			return c, true
		}
	}
	return Contract{}, false
}

func (c Contract) need(route string, class deadline.Class) (Need, bool) {
	for _, n := range c.Needs {
		if n.Route == route && n.Class == class {
			return n, true
		}
	}
	return Need{}, false
}

func (c Contract) promise(class deadline.Class) (Promise, bool) {
	for _, p := range c.Promises {
		if p.Class == class {
			return p, true
		}
	}
	return Promise{}, false
}

// contracts composes the published contracts along the graph: a caller
// whose budget for a call is smaller than what the callee needs, or a
// callee that promises more than the caller waits for it.
func (s Deployment) contracts() []Finding {
	if len(s.Contracts) == 0 {
		return nil
	}
	var out []Finding
	for _, call := range s.Calls {
		callee, ok := s.contract(call.To)
		if !ok || call.Criticality == FireForward {
			continue
		}
		needs, promises := false, false
		for _, class := range s.Classes() {
			wait := min(capOrForever(call.Cap), s.Holds(call.From, class))
			typical := min(capOrForever(call.Cap), s.holdsDefault(call.From, class))
			if n, ok := callee.need(call.Method, class); ok && !needs && typical != forever && fromMS(n.MS) > typical {
				needs = true
				out = append(out, Finding{Rule: RuleNeedAboveBudget, Where: where(call), Setting: setting(call),
					Problem: fmt.Sprintf("%s gives %s at %s at most %s (%s), and %s's contract needs %s for it (%s)",
						call.From, call.Method, call.To, ms(typical), class, call.To, ms(fromMS(n.MS).Round(time.Millisecond)), n.Source),
					Fix: fmt.Sprintf("raise %s or the %s budget, or make %s at %s faster", flagOr(call), class, call.Method, call.To)})
			}
			p, ok := callee.promise(class)
			if !ok || promises || wait == forever || (p.ByDeadline && p.Bounded) {
				continue
			}
			if p.Bounded && fromMS(p.MS) <= wait {
				continue
			}
			promised := "no bound at all"
			if p.Bounded {
				promised = ms(fromMS(p.MS).Round(time.Millisecond))
			}
			out = append(out, Finding{Rule: RulePromiseAboveWait, Where: where(call), Setting: setting(call),
				Problem: fmt.Sprintf("%s waits at most %s for %s at %s (%s), and %s promises to answer within %s, not by its caller's deadline: it works on for nobody",
					call.From, ms(wait), call.Method, call.To, class, call.To, promised),
				Fix: fmt.Sprintf("make %s keep its caller's deadline (--mechanisms honour_cancel=on,admission=on)", call.To)})
			promises = true
		}
	}
	return out
}

// holdsDefault is Holds with the edge giving each class its default
// budget: what a request sent without a deadline of its own carries.
func (s Deployment) holdsDefault(name string, c deadline.Class) time.Duration {
	d := s
	d.Edge.Budgets = deadline.Budgets{}
	b := s.Edge.Budgets.For(c)
	switch c {
	case deadline.Background:
		d.Edge.Budgets.Background = deadline.ClassBudget{Default: b.Default, Max: b.Default}
	case deadline.Batch:
		d.Edge.Budgets.Batch = deadline.ClassBudget{Default: b.Default, Max: b.Default}
	default:
		d.Edge.Budgets.Interactive = deadline.ClassBudget{Default: b.Default, Max: b.Default}
	}
	return d.Holds(name, c)
}
