package breaker

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// ErrOpen is returned by [Breaker.Do], without calling fn, while the breaker
// is open or while it is half-open and every probe is already taken.
// Callers map it to gRPC Unavailable or HTTP 503 with Retry-After (see
// [Breaker.RetryAfter]).
var ErrOpen = errors.New("breaker: open")

// errProbesTaken is ErrOpen while half-open: the probes are all taken.
var errProbesTaken = fmt.Errorf("%w (half-open: every probe already taken)", ErrOpen)

// State is a breaker's state. Its values are those of the
// mercado_breaker_state metric: 0 closed, 1 half-open, 2 open.
type State int

// The states.
const (
	Closed State = iota
	HalfOpen
	Open
)

// String returns "closed", "half_open" or "open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case HalfOpen:
		return "half_open"
	case Open:
		return "open"
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// Counts are the contents of the window.
type Counts struct {
	Calls    int // counted calls in the window, up to Settings.Window
	Failures int // failures among them
}

// Breaker is one dependency's circuit breaker. It is safe for concurrent
// use. Everything it decides is in this file:
//
//   - closed: every call goes through and its verdict enters the window of
//     the last Window calls; the breaker opens on the call that leaves a
//     full window with at least FailureRatio of failures in it (a success
//     can complete that window as well as a failure can).
//   - open: every call is refused with [ErrOpen] until OpenFor has passed;
//     the first look at the breaker after that finds it half-open.
//   - half-open: HalfOpenProbes calls go through, the rest are refused; one
//     failed probe opens it again, and once every probe has succeeded it
//     closes. An excluded probe says nothing and gives its place back.
//
// Every transition starts a new generation with an empty window: a call
// that started before it (or before a [Breaker.Reset]) and ends after it
// has its verdict dropped.
type Breaker struct {
	s           Settings
	minFailures int

	mu         sync.Mutex
	state      State
	generation uint64
	w          window    // closed: the last verdicts; half-open: the probes'
	probes     uint32    // half-open: probes let through and not excluded
	openUntil  time.Time // open: when it turns half-open
}

// New returns a closed breaker with an empty window. Zero fields of s take
// their defaults (see [Settings]).
func New(s Settings) *Breaker {
	s = s.withDefaults()
	return &Breaker{s: s, minFailures: s.minFailures(), w: newWindow(s.Window)}
}

// minFailures is the least number of failures in a full window that trips
// the breaker: the smallest f with f/Window ≥ FailureRatio, or Window+1
// (never) when FailureRatio is above 1. Dividing, rather than comparing f
// with FailureRatio·Window, keeps 3 failures out of 10 at a ratio of 0.3
// exact: 0.3·10 is 3.0000000000000004 in floating point.
func (s Settings) minFailures() int {
	for f := 1; f <= s.Window; f++ {
		if float64(f)/float64(s.Window) >= s.FailureRatio {
			return f
		}
	}
	return s.Window + 1
}

// Do calls fn unless the breaker is open, records the verdict on fn's
// error, and returns that error unchanged. When the breaker refuses the
// call, fn is not called and the error matches [ErrOpen]. If fn panics, the
// call counts as a failure and the panic goes on.
func (b *Breaker) Do(fn func() error) error {
	generation, err := b.allow()
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done { // fn panicked
			b.record(generation, Failure)
		}
	}()
	err = fn()
	done = true
	b.record(generation, b.s.Classify(err))
	return err
}

// allow lets a call through or refuses it, and returns the generation the
// call belongs to.
func (b *Breaker) allow() (uint64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expire(time.Now())
	switch b.state {
	case Open:
		return 0, ErrOpen
	case HalfOpen:
		if b.probes >= b.s.HalfOpenProbes {
			return 0, errProbesTaken
		}
		b.probes++
	}
	return b.generation, nil
}

// record applies the verdict of a call of the given generation: the rule.
func (b *Breaker) record(generation uint64, v Verdict) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if generation != b.generation {
		return // the breaker moved on while the call ran
	}
	switch b.state {
	case Closed:
		if v == Excluded {
			return
		}
		b.w.add(v != Success)
		if b.w.full() && b.w.failures >= b.minFailures {
			b.to(Open, time.Now())
		}
	case HalfOpen:
		switch v {
		case Excluded:
			b.probes-- // says nothing: another probe may go
		case Success:
			b.w.add(false)
			if b.w.calls >= int(b.s.HalfOpenProbes) {
				b.to(Closed, time.Now())
			}
		default:
			b.to(Open, time.Now())
		}
	}
}

// expire turns an open breaker half-open once OpenFor has passed.
func (b *Breaker) expire(now time.Time) {
	if b.state == Open && now.After(b.openUntil) {
		b.to(HalfOpen, now)
	}
}

// to makes a transition: a new generation, an empty window, and the hook.
func (b *Breaker) to(state State, now time.Time) {
	from := b.state
	b.state = state
	b.generation++
	b.w.reset()
	b.probes = 0
	if state == Open {
		b.openUntil = now.Add(b.s.OpenFor)
	}
	if from != state && b.s.OnStateChange != nil {
		b.s.OnStateChange(b.s.Name, from, state)
	}
}

// State returns the breaker's state. An open breaker whose OpenFor has
// passed reports (and becomes) half-open.
func (b *Breaker) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expire(time.Now())
	return b.state
}

// RetryAfter returns, while the breaker is open, how long until it lets a
// probe through; zero otherwise. Rounding it up to whole seconds for a
// Retry-After header is the caller's job.
func (b *Breaker) RetryAfter() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != Open {
		return 0
	}
	return max(time.Until(b.openUntil), 0)
}

// Window returns the contents of the current window. It is emptied on
// every state change; while half-open it holds the probes' verdicts.
func (b *Breaker) Window() Counts {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Counts{Calls: b.w.calls, Failures: b.w.failures}
}

// Reset puts the breaker back to closed with an empty window, as when the
// lab switches mode, and tells OnStateChange if it was not closed. Calls in
// flight finish normally but their verdicts are dropped. It is safe to call
// concurrently with Do.
func (b *Breaker) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.to(Closed, time.Now())
}
