// Package mode defines Mercado's two modes, naive and budgeted, as presets
// of the mechanisms the lab compares.
package mode

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mercado-lab/mercado/pkg/deadline"
)

// Mode names a preset of mechanisms.
type Mode string

// The modes.
const (
	// Naive is the fragile system: every hop picks its own timeout, blind
	// to the client's deadline, and work goes on after the client left.
	Naive Mode = "naive"
	// Budgeted sets one deadline at the edge and every hop honours it.
	Budgeted Mode = "budgeted"
)

// Parse returns the mode named s.
func Parse(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Naive, Budgeted:
		return m, nil
	}
	return "", fmt.Errorf("unknown mode %q (want %q or %q)", s, Naive, Budgeted)
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
}

// Mechanisms returns the preset of m.
func (m Mode) Mechanisms() Mechanisms {
	on := m == Budgeted
	return Mechanisms{EdgeDeadline: on, ClipToBudget: on, Admission: on, HonourCancel: on}
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
}

// NewLive returns a Live holding s.
func NewLive(s Settings) *Live {
	l := &Live{}
	l.Store(s)
	return l
}

// Load returns the settings in force.
func (l *Live) Load() Settings { return *l.p.Load() }

// Store puts s in force.
func (l *Live) Store(s Settings) { l.p.Store(&s) }

// Policy returns the deadline policy in force.
func (l *Live) Policy() deadline.Policy { return l.Load().Policy() }
