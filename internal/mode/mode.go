// Package mode defines Mercado's three modes, fragile, naive and budgeted,
// as presets of the mechanisms the lab compares.
package mode

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mercado-lab/mercado/pkg/deadline"
)

// Mode names a preset of mechanisms.
type Mode string

// The modes.
const (
	// Naive is lesson 7's system: every hop picks its own timeout, blind
	// to the client's deadline, and work goes on after the client left.
	Naive Mode = "naive"
	// Budgeted sets one deadline at the edge and every hop honours it.
	Budgeted Mode = "budgeted"
	// Fragile sets no timeout at all: naive without even the per-call
	// caps, as code written with the libraries' defaults runs. A call
	// waits as long as its dependency takes (Drill 76, the timeout that
	// wasn't set).
	Fragile Mode = "fragile"
)

// Modes lists the presets, from the least armoured to the most.
func Modes() []Mode { return []Mode{Fragile, Naive, Budgeted} }

// Names lists the presets' names for a message: "fragile", "naive" or
// "budgeted".
func Names() string { return fmt.Sprintf("%q, %q or %q", Fragile, Naive, Budgeted) }

// Parse returns the mode named s.
func Parse(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Fragile, Naive, Budgeted:
		return m, nil
	}
	return "", fmt.Errorf("unknown mode %q (want %s)", s, Names())
}

// String implements flag.Value.
func (m *Mode) String() string { return string(*m) }

// Set implements flag.Value.
func (m *Mode) Set(s string) error {
	v, err := Parse(s)
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// Mechanisms are the switches a mode presets.
type Mechanisms struct {
	// Caps: read timeouts. Each call is bounded by its per-call cap
	// (clipped to the budget when ClipToBudget is on), and the edge's
	// HTTP server by its read and write timeouts. Off, a call waits as
	// long as the dependency takes, as a client with no timeout does; a
	// call clipped to the budget is then bounded by the budget alone.
	Caps bool `json:"caps"`
	// EdgeDeadline: the gateway puts the client's budget on the request
	// (choose the total first). Off, nothing is cut short by it.
	EdgeDeadline bool `json:"edge_deadline"`
	// ClipToBudget: each call's timeout is min(cap, remaining − margin),
	// and a call with less than the floor left is not made. Off, each call
	// waits for its own cap, blind to the clock.
	ClipToBudget bool `json:"clip_to_budget"`
	// Admission: servers reject requests that arrive spent or below the
	// floor, instead of starting work nobody will receive.
	Admission bool `json:"admission"`
	// HonourCancel: servers stop when their caller gives up, and simulated
	// vendor waits end with the context. Off, work goes on like a blocking
	// read with no timeout.
	HonourCancel bool `json:"honour_cancel"`
	// Bulkheads: a pool per route (gateway) and per dependency (orders),
	// waits bounded by the budget, fail fast when full, and the budget
	// checked again after the wait. Off, one shared pool per service with
	// an unbounded queue (put the vendor on its own pool).
	Bulkheads bool `json:"bulkheads"`
	// Breakers: a circuit breaker per dependency (pair the budget with a
	// breaker). Off, every call goes through, however sick the dependency.
	Breakers bool `json:"breakers"`
	// Retries: how calls are retried (every retry checks the budget).
	Retries Retries `json:"retries"`
	// Outbox: a shipment that cannot be booked after the charge is booked
	// later by a worker, and the order is confirmed; shipping is off the
	// critical path. Off, a shipping failure fails the checkout, as in a
	// chain that calls every step in line.
	Outbox bool `json:"outbox"`
	// Idempotency: orders claims each checkout's Idempotency-Key and
	// replays the stored answer to a retry. Off, keys are ignored and a
	// retried checkout is a new order with a new charge.
	Idempotency bool `json:"idempotency"`
	// Fanout: how orders runs the checkout's independent calls, reserving
	// the stock and screening the order for fraud. Parallel, both share one
	// remaining budget and the pair costs the slower of the two; sequential,
	// one after the other, the pair costs their sum.
	Fanout Fanout `json:"fanout"`
	// Classes: traffic classes (interactive, background, batch) carried
	// with the request, each with its own budget; a full pool or bulkhead
	// refuses batch first, then background, and keeps a share for
	// interactive work. Off, one class: every request gets interactive's
	// budget and waits in the one queue.
	Classes bool `json:"classes"`
	// Criticality: each of orders' dependencies is treated as its
	// criticality says (services/orders/graph.go): an optional call runs
	// beside the critical path with a short cap and a default value on
	// expiry, and fire-forward work leaves the request for a queue with
	// its own lifetime. Off, every dependency is critical and in line: a
	// failed optional call fails the checkout, and the audit write is made
	// under the request's deadline.
	Criticality bool `json:"criticality"`
	// ConnectTimeout: each attempt to connect to a dependency (the TCP
	// connect and the HTTP/2 handshake) is bounded by the connect timeout,
	// apart from and much shorter than any call's read cap, so an address
	// that accepts nothing fails in seconds. Off, gRPC's default bounds it:
	// 20 s a try, longer as its backoff grows.
	ConnectTimeout bool `json:"connect_timeout"`
	// Hedging: a call that changes nothing (orders' fraud screen) that
	// has not answered by the dependency's recent p95 is sent a
	// second time, if what is left of the budget after the margin still
	// holds the floor and the retry budget has a token; the first answer
	// wins and the other attempt is cancelled. Off in every preset: it
	// buys a shorter tail with extra load, a trade a learner switches on
	// ("budgeted+hedging").
	Hedging bool `json:"hedging"`
}

// Fanout is how independent calls run.
type Fanout string

// The fan-out strategies.
const (
	// FanoutParallel: independent calls run at once under the request's
	// one deadline; the first critical failure cancels its siblings.
	FanoutParallel Fanout = "parallel"
	// FanoutSequential: one call after the other, as a chain written one
	// step per line runs them.
	FanoutSequential Fanout = "sequential"
)

// ParseFanout returns the fan-out strategy named s.
func ParseFanout(s string) (Fanout, error) {
	switch f := Fanout(s); f {
	case FanoutParallel, FanoutSequential:
		return f, nil
	}
	return "", fmt.Errorf("unknown fanout %q (want %q or %q)", s, FanoutParallel, FanoutSequential)
}

// Retries is a retry strategy.
type Retries string

// The retry strategies.
const (
	// RetriesNaive: a fixed 3 attempts at every layer, no backoff, no
	// budget check: the retry storm.
	RetriesNaive Retries = "naive"
	// RetriesBudgeted: one layer only (orders to its dependencies), with
	// full-jitter backoff, only when the attempt fits in the budget, and
	// within a retry budget.
	RetriesBudgeted Retries = "budgeted"
	// RetriesOff: every call is made once.
	RetriesOff Retries = "off"
)

// ParseRetries returns the strategy named s.
func ParseRetries(s string) (Retries, error) {
	switch r := Retries(s); r {
	case RetriesNaive, RetriesBudgeted, RetriesOff:
		return r, nil
	}
	return "", fmt.Errorf("unknown retry strategy %q (want %q, %q or %q)", s, RetriesNaive, RetriesBudgeted, RetriesOff)
}

// Mechanisms returns the preset of m. Naive is fragile with the per-call
// caps on; budgeted turns everything on.
func (m Mode) Mechanisms() Mechanisms {
	if m == Fragile {
		return Mechanisms{Retries: RetriesNaive, Fanout: FanoutSequential}
	}
	on := m == Budgeted
	retries, fanout := RetriesNaive, FanoutSequential
	if on {
		retries, fanout = RetriesBudgeted, FanoutParallel
	}
	return Mechanisms{
		Caps:         true,
		EdgeDeadline: on, ClipToBudget: on, Admission: on, HonourCancel: on,
		Bulkheads: on, Breakers: on, Retries: retries, Outbox: on, Idempotency: on,
		Fanout: fanout, Classes: on, Criticality: on, ConnectTimeout: on,
	}
}

// Settings are the mechanisms in force at one service, with the budget
// figures they use.
type Settings struct {
	Mode       Mode       `json:"mode"`
	Mechanisms Mechanisms `json:"mechanisms"`
	// Margin is kept back from each call for the way back.
	Margin time.Duration `json:"-"`
	// Floor is the least budget worth starting a call or a request with.
	Floor time.Duration `json:"-"`
	// Connect bounds each attempt to connect to a dependency while
	// Mechanisms.ConnectTimeout is on.
	Connect time.Duration `json:"-"`
	// Workers sizes the worker pools (--workers): the pools a switch puts
	// in force have this many slots. Zero leaves each pool its own size.
	Workers int `json:"-"`
}

// Cap is the per-call cap in force for a call whose configured cap is c:
// c with Caps on, zero (none: the call waits as long as its dependency
// takes, unless the budget clips it) with Caps off.
func (s Settings) Cap(c time.Duration) time.Duration {
	if !s.Mechanisms.Caps {
		return 0
	}
	return c
}

// ConnectTimeout is the bound on an attempt to connect to a dependency
// under these settings: Connect with the mechanism on, zero (gRPC's
// default) with it off.
func (s Settings) ConnectTimeout() time.Duration {
	if !s.Mechanisms.ConnectTimeout {
		return 0
	}
	return s.Connect
}

// Class is the class a request of class c runs as under these settings:
// c itself with Classes on, interactive (the one class) with it off.
func (s Settings) Class(c deadline.Class) deadline.Class {
	if !s.Mechanisms.Classes {
		return deadline.Interactive
	}
	return c
}

// Policy returns the deadline policy these settings imply.
func (s Settings) Policy() deadline.Policy {
	return deadline.Policy{
		Margin:    s.Margin,
		Floor:     s.Floor,
		Blind:     !s.Mechanisms.ClipToBudget,
		Admission: s.Mechanisms.Admission,
	}
}

// Live holds the settings in force, safe to read on every request and to
// replace while requests run.
type Live struct {
	p atomic.Pointer[Settings]

	mu        sync.Mutex
	listeners []func(Settings)
}

// NewLive returns a Live holding s.
func NewLive(s Settings) *Live {
	l := &Live{}
	l.Store(s)
	return l
}

// Load returns the settings in force.
func (l *Live) Load() Settings { return *l.p.Load() }

// Store puts s in force, without telling the listeners.
func (l *Live) Store(s Settings) { l.p.Store(&s) }

// OnSwitch registers f to run after every Switch, with the new settings.
// Components whose state belongs to one phase of the lab (breakers, pools,
// retry budgets) register their reset here.
func (l *Live) OnSwitch(f func(Settings)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.listeners = append(l.listeners, f)
}

// Switch puts s in force and runs the listeners, so the previous phase's
// state does not leak into the next one.
func (l *Live) Switch(s Settings) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.p.Store(&s)
	for _, f := range l.listeners {
		f(s)
	}
}
