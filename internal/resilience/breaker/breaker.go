package breaker

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
)

// ErrOpen is returned by [Breaker.Do], without calling fn, while the breaker
// is open or while it is half-open and every probe is already in flight.
// Callers map it to gRPC Unavailable or HTTP 503 with Retry-After (see
// [Breaker.RetryAfter]).
var ErrOpen = errors.New("breaker: open")

// errProbesInFlight is ErrOpen while half-open: the probes are all taken.
var errProbesInFlight = fmt.Errorf("%w (half-open: every probe already in flight)", ErrOpen)

// State is a breaker's state. Its values are those of gobreaker's State
// (and of the mercado_breaker_state metric): 0 closed, 1 half-open, 2 open.
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

func fromGobreaker(s gobreaker.State) State {
	switch s {
	case gobreaker.StateHalfOpen:
		return HalfOpen
	case gobreaker.StateOpen:
		return Open
	}
	return Closed
}

// Counts are the contents of the window.
type Counts struct {
	Calls    int // counted calls in the window, up to Settings.Window
	Failures int // failures among them
}

// Breaker is one dependency's circuit breaker. It is safe for concurrent
// use.
type Breaker struct {
	s           Settings
	minFailures int

	// cur is the breaker in force. Reset replaces it, so calls still in
	// flight on the previous one cannot leak into the fresh window.
	cur atomic.Pointer[generation]

	// hookMu makes transitions reach OnStateChange one at a time and in
	// order, and orders them with Reset.
	hookMu    sync.Mutex
	announced State // the last state told to OnStateChange
}

// generation is a gobreaker state machine and the window it trips on.
type generation struct {
	cb *gobreaker.CircuitBreaker[struct{}]

	mu        sync.Mutex // guards the fields below; taken inside cb's lock
	w         window
	state     State     // cb's state as of its last transition
	openUntil time.Time // when cb turns half-open, while state is Open
}

// Markers carry a call's verdict into gobreaker, so the verdict is given
// once, by the calling goroutine, outside gobreaker's lock. A success is nil.
var (
	markFailure  = errors.New("breaker: failure")
	markExcluded = errors.New("breaker: excluded")
)

// New returns a closed breaker with an empty window. Zero fields of s take
// their defaults (see [Settings]).
func New(s Settings) *Breaker {
	s = s.withDefaults()
	b := &Breaker{s: s, minFailures: s.minFailures()}
	b.cur.Store(b.newGeneration())
	return b
}

func (b *Breaker) newGeneration() *generation {
	g := &generation{w: newWindow(b.s.Window)}
	g.cb = gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        b.s.Name,
		MaxRequests: b.s.HalfOpenProbes,
		// Interval and BucketPeriod stay zero: gobreaker's own counts are
		// never cleared by time, and never read either; the window is ours.
		Timeout:    b.s.OpenFor,
		IsExcluded: func(err error) bool { return err == markExcluded },
		// gobreaker calls IsSuccessful once for every call it counts, so
		// this is where the verdict enters the window.
		IsSuccessful: func(err error) bool { return g.record(err != nil, b.minFailures) },
		// gobreaker asks only after a failure; record already answered
		// for successes.
		ReadyToTrip:   func(gobreaker.Counts) bool { return g.tripped(b.minFailures) },
		OnStateChange: func(_ string, from, to gobreaker.State) { b.changed(g, fromGobreaker(from), fromGobreaker(to)) },
	})
	return g
}

// record adds a verdict to the window and tells gobreaker whether to count
// the call as a success. gobreaker consults ReadyToTrip only after a
// failure, so a success that completes a window with enough failures in it
// is reported as a failure: the breaker then trips on the very call that
// met the rule, as "10 failures and 10 successes in the last 20" demands.
// While half-open the window starts empty and holds only successes, so
// this never turns a successful probe into a failed one.
func (g *generation) record(failed bool, minFailures int) (success bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.w.add(failed)
	return !failed && !g.trippedLocked(minFailures)
}

func (g *generation) tripped(minFailures int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.trippedLocked(minFailures)
}

// trippedLocked is the rule: a full window with at least minFailures.
func (g *generation) trippedLocked(minFailures int) bool {
	return g.w.full() && g.w.failures >= minFailures
}

// changed runs inside gobreaker's lock on every transition of g.
func (b *Breaker) changed(g *generation, from, to State) {
	g.mu.Lock()
	g.w.reset() // every state starts with an empty window
	g.state = to
	if to == Open {
		g.openUntil = time.Now().Add(b.s.OpenFor)
	}
	g.mu.Unlock()

	b.hookMu.Lock()
	defer b.hookMu.Unlock()
	if b.cur.Load() != g {
		return // retired by Reset: its transitions are no longer the breaker's
	}
	b.announced = to
	if b.s.OnStateChange != nil {
		b.s.OnStateChange(b.s.Name, from, to)
	}
}

// Do calls fn unless the breaker is open, records the verdict on fn's
// error, and returns that error unchanged. When the breaker refuses the
// call, fn is not called and the error matches [ErrOpen]. If fn panics, the
// call counts as a failure and the panic goes on.
func (b *Breaker) Do(fn func() error) error {
	g := b.cur.Load()
	var err error
	called := false
	_, cbErr := g.cb.Execute(func() (struct{}, error) {
		called = true
		err = fn()
		switch b.s.Classify(err) {
		case Success:
			return struct{}{}, nil
		case Excluded:
			return struct{}{}, markExcluded
		}
		return struct{}{}, markFailure
	})
	if !called {
		if errors.Is(cbErr, gobreaker.ErrTooManyRequests) {
			return errProbesInFlight
		}
		return ErrOpen
	}
	return err
}

// State returns the breaker's state. An open breaker whose OpenFor has
// passed reports (and becomes) half-open.
func (b *Breaker) State() State {
	return fromGobreaker(b.cur.Load().cb.State())
}

// RetryAfter returns, while the breaker is open, how long until it lets a
// probe through; zero otherwise. Rounding it up to whole seconds for a
// Retry-After header is the caller's job.
func (b *Breaker) RetryAfter() time.Duration {
	g := b.cur.Load()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state != Open {
		return 0
	}
	return max(time.Until(g.openUntil), 0)
}

// Window returns the contents of the current window. It is emptied on
// every state change; while half-open it holds the probes' verdicts.
func (b *Breaker) Window() Counts {
	g := b.cur.Load()
	g.mu.Lock()
	defer g.mu.Unlock()
	return Counts{Calls: g.w.calls, Failures: g.w.failures}
}

// Reset puts the breaker back to closed with an empty window, as when the
// lab switches mode, and tells OnStateChange if it was not closed. Calls in
// flight finish normally but their verdicts are dropped. It is safe to call
// concurrently with Do.
func (b *Breaker) Reset() {
	b.hookMu.Lock()
	defer b.hookMu.Unlock()
	b.cur.Store(b.newGeneration())
	from := b.announced
	b.announced = Closed
	if from != Closed && b.s.OnStateChange != nil {
		b.s.OnStateChange(b.s.Name, from, Closed)
	}
}
