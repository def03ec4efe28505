package breaker

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
)

// ErrOpen is returned by [Breaker.Do], without calling fn, while the breaker
// is open or while it is half-open and every probe is already taken.
// Callers map it to gRPC Unavailable or HTTP 503 with Retry-After (see
// [Breaker.RetryAfter]).
var ErrOpen = errors.New("breaker: open")

// errProbesTaken is ErrOpen while half-open: the probes are all taken.
var errProbesTaken = fmt.Errorf("%w (half-open: every probe already taken)", ErrOpen)

// State is a breaker's state. Its values are those of the
// mercado_breaker_state metric: 0 closed, 1 half-open, 2 open (and of
// gobreaker's states).
type State int

// The states.
const (
	Closed   = State(gobreaker.StateClosed)
	HalfOpen = State(gobreaker.StateHalfOpen)
	Open     = State(gobreaker.StateOpen)
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
	return fmt.Sprintf("state(%d)", int(s))
}

// Counts are the calls the breaker counts now: while closed, those that
// started within the window and have ended; while half-open, the probes.
type Counts struct {
	Calls    int // counted calls: successes and failures
	Failures int // failures among them
}

// Breaker is one dependency's circuit breaker, gobreaker's state machine
// under Mercado's rule. It is safe for concurrent use.
//
//   - closed: every call goes through; its verdict ([Settings.Classify])
//     counts in the window, in the bucket of the moment it started. After
//     each failure the rule is checked: at least MinCalls counted calls,
//     and at least FailureRatio of them failures, open the breaker.
//   - open: every call is refused with [ErrOpen] until OpenFor has passed;
//     the first look at the breaker after that finds it half-open.
//   - half-open: HalfOpenProbes calls go through, the rest are refused; one
//     failed probe opens it again, and once every probe has succeeded it
//     closes. An excluded probe says nothing and gives its place back.
//
// Every transition empties the window, and a call that started before it
// (or before a [Breaker.Reset]) and ends after it has its verdict dropped.
type Breaker struct {
	s Settings

	engine atomic.Pointer[gobreaker.CircuitBreaker[struct{}]]
	// openUntil is when an open breaker turns half-open (Unix
	// nanoseconds), for RetryAfter: gobreaker keeps it to itself.
	openUntil atomic.Int64

	// mu orders the transitions told to OnStateChange: the engine's, and
	// Reset's. told is the last state told.
	mu   sync.Mutex
	told State
}

// New returns a closed breaker with an empty window. Zero fields of s take
// their defaults (see [Settings]).
func New(s Settings) *Breaker {
	b := &Breaker{s: s.withDefaults()}
	b.engine.Store(b.newEngine())
	return b
}

// The verdicts, as gobreaker reads them: Do hands it one of these instead
// of the call's own error, so that the call is classified once.
var (
	verdictFailure  = errors.New("breaker: failure")
	verdictExcluded = errors.New("breaker: excluded")
)

// newEngine returns a gobreaker with b's rule, whose transitions reach
// OnStateChange only while it is b's engine: a breaker retired by Reset
// may still move as its calls end, but nobody hears of it.
func (b *Breaker) newEngine() *gobreaker.CircuitBreaker[struct{}] {
	var engine *gobreaker.CircuitBreaker[struct{}]
	s := b.s
	engine = gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:         s.Name,
		MaxRequests:  s.HalfOpenProbes,
		Interval:     s.Window,
		BucketPeriod: s.Window / windowBuckets,
		Timeout:      s.OpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool {
			calls := c.TotalSuccesses + c.TotalFailures
			return int(calls) >= s.MinCalls && float64(c.TotalFailures)/float64(calls) >= s.FailureRatio
		},
		IsSuccessful: func(err error) bool { return err == nil },
		IsExcluded:   func(err error) bool { return err == verdictExcluded },
		OnStateChange: func(_ string, from, to gobreaker.State) {
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.engine.Load() != engine {
				return
			}
			if to == gobreaker.StateOpen {
				b.openUntil.Store(time.Now().Add(s.OpenFor).UnixNano())
			}
			b.tell(State(from), State(to))
		},
	})
	return engine
}

// windowBuckets is how many buckets the window rolls in: it forgets a
// tenth of itself at a time.
const windowBuckets = 10

// tell records and reports a transition; b.mu is held.
func (b *Breaker) tell(from, to State) {
	b.told = to
	if from != to && b.s.OnStateChange != nil {
		b.s.OnStateChange(b.s.Name, from, to)
	}
}

// Do calls fn unless the breaker is open, records the verdict on fn's
// error, and returns that error unchanged. When the breaker refuses the
// call, fn is not called and the error matches [ErrOpen]. If fn panics, the
// call counts as a failure and the panic goes on.
func (b *Breaker) Do(fn func() error) error {
	var (
		called   bool
		err      error
		panicked any
	)
	_, refused := b.engine.Load().Execute(func() (_ struct{}, verdict error) {
		called = true
		defer func() {
			if panicked = recover(); panicked != nil {
				verdict = verdictFailure
			}
		}()
		err = fn()
		switch b.s.Classify(err) {
		case Success:
			return struct{}{}, nil
		case Excluded:
			return struct{}{}, verdictExcluded
		}
		return struct{}{}, verdictFailure
	})
	switch {
	case panicked != nil:
		panic(panicked)
	case !called && errors.Is(refused, gobreaker.ErrTooManyRequests):
		return errProbesTaken
	case !called:
		return ErrOpen
	}
	return err
}

// State returns the breaker's state. An open breaker whose OpenFor has
// passed reports (and becomes) half-open.
func (b *Breaker) State() State {
	return State(b.engine.Load().State())
}

// RetryAfter returns, while the breaker is open, how long until it lets a
// probe through; zero otherwise. Rounding it up to whole seconds for a
// Retry-After header is the caller's job.
func (b *Breaker) RetryAfter() time.Duration {
	if b.State() != Open {
		return 0
	}
	return max(time.Until(time.Unix(0, b.openUntil.Load())), 0)
}

// Window returns the calls the breaker counts now: emptied on every state
// change, rolled forward as time passes, and while half-open the probes'.
func (b *Breaker) Window() Counts {
	engine := b.engine.Load()
	engine.State() // rolls the window up to now
	c := engine.Counts()
	return Counts{Calls: int(c.TotalSuccesses + c.TotalFailures), Failures: int(c.TotalFailures)}
}

// Reset puts the breaker back to closed with an empty window, as when the
// lab switches mode, and tells OnStateChange if the last state it told was
// not closed. Calls in flight finish normally but their verdicts are
// dropped. It is safe to call concurrently with Do.
func (b *Breaker) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.engine.Store(b.newEngine())
	b.openUntil.Store(0)
	b.tell(b.told, Closed)
}
