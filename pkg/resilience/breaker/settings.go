package breaker

import "time"

// Defaults from Drill 76: open at ≥ 50% failures of at least 20 calls in
// the last 10 s, stay open 30 s, then one probe.
const (
	DefaultMinCalls       = 20
	DefaultFailureRatio   = 0.5
	DefaultWindow         = 10 * time.Second
	DefaultOpenFor        = 30 * time.Second
	DefaultHalfOpenProbes = 1
)

// Settings configure a [Breaker]. The zero value is the lesson's breaker.
type Settings struct {
	// Name identifies the dependency; it is passed to OnStateChange.
	Name string
	// MinCalls is the fewest counted calls in the window on which the
	// breaker may open. Zero or less means DefaultMinCalls.
	MinCalls int
	// FailureRatio opens the breaker when failures/calls ≥ FailureRatio
	// over at least MinCalls calls. Zero, less or NaN means
	// DefaultFailureRatio; above 1 the breaker never opens.
	FailureRatio float64
	// Window is how far back the breaker counts: the calls that started
	// within it and have ended. A call that outlasts the window is never
	// counted, so the window must be longer than the call's timeout (see
	// docs/breakers.md). Zero or less means DefaultWindow.
	Window time.Duration
	// OpenFor is how long the breaker stays open before it lets probes
	// through. Zero or less means DefaultOpenFor.
	OpenFor time.Duration
	// HalfOpenProbes is how many calls are let through while half-open;
	// all of them must succeed to close the breaker, and any failure opens
	// it again. Zero means DefaultHalfOpenProbes.
	HalfOpenProbes uint32
	// Classify gives each call's verdict. Nil means [Classify]. Any value
	// other than Success or Excluded counts as a failure.
	Classify func(error) Verdict
	// OnStateChange, if not nil, is told of every transition, in order,
	// including the one made by Reset. It runs synchronously while the
	// breaker is locked: keep it short (update a metric) and do not call
	// Do, State, Window, RetryAfter or Reset from it.
	OnStateChange func(name string, from, to State)
}

// withDefaults fills in the zero fields.
func (s Settings) withDefaults() Settings {
	if s.MinCalls <= 0 {
		s.MinCalls = DefaultMinCalls
	}
	if !(s.FailureRatio > 0) { // also catches NaN
		s.FailureRatio = DefaultFailureRatio
	}
	if s.Window <= 0 {
		s.Window = DefaultWindow
	}
	if s.OpenFor <= 0 {
		s.OpenFor = DefaultOpenFor
	}
	if s.HalfOpenProbes == 0 {
		s.HalfOpenProbes = DefaultHalfOpenProbes
	}
	if s.Classify == nil {
		s.Classify = Classify
	}
	return s
}
