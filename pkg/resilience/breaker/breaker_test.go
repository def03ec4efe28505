package breaker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/pkg/deadline"
)

var (
	errDown     = status.Error(codes.Unavailable, "payments: down")
	errLate     = fmt.Errorf("charge: %w", deadline.ErrBudgetExhausted)
	errNotFound = status.Error(codes.NotFound, "no such order") // a business answer
)

// outcome maps one letter of a call script to fn's error: F fails, S
// succeeds, N is a business error (a success), X is excluded.
func outcome(c rune) error {
	switch c {
	case 'F':
		return errDown
	case 'S':
		return nil
	case 'N':
		return errNotFound
	case 'X':
		return errLate
	}
	panic("bad script letter " + string(c))
}

// script expands "10F 10S" into "FFFFFFFFFFSSSSSSSSSS".
func script(t *testing.T, s string) string {
	t.Helper()
	var b strings.Builder
	for _, part := range strings.Fields(s) {
		var n int
		var c rune
		if _, err := fmt.Sscanf(part, "%d%c", &n, &c); err != nil {
			t.Fatalf("bad script part %q: %v", part, err)
		}
		b.WriteString(strings.Repeat(string(c), n))
	}
	return b.String()
}

// transitions records OnStateChange calls.
type transitions struct {
	mu  sync.Mutex
	got []string
}

func (tr *transitions) hook(name string, from, to State) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.got = append(tr.got, fmt.Sprintf("%s:%v->%v", name, from, to))
}

func (tr *transitions) reset() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.got = nil
}

func (tr *transitions) list() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.got...)
}

// The rule over the calls in the window, all made at one instant here: at
// least 20 counted calls and half of them failures, checked after each
// failure (gobreaker consults its rule only then).
func TestTripsOnTheWindow(t *testing.T) {
	tests := []struct {
		name   string
		s      Settings
		calls  string
		tripAt int    // 1-based call after which the breaker must be open; 0: never
		window Counts // at the end, when it never trips
	}{
		{name: "19 failures: too few calls", calls: "19F", window: Counts{19, 19}},
		{name: "10 successes then 10 failures", calls: "10S 10F", tripAt: 20},
		// Half of 20 failed, but the rule is checked after a failure only:
		// the next failure trips it. (A count window checked after every
		// call opened on the 20th.)
		{name: "10 failures then 10 successes", calls: "10F 10S", window: Counts{20, 10}},
		{name: "10 failures, 10 successes, then a failure", calls: "10F 10S 1F", tripAt: 21},
		{name: "9 failures in 20", calls: "11S 9F", window: Counts{20, 9}},
		// Every call in the window counts, not the last 20 alone.
		{name: "10 failures in 21", calls: "1F 11S 9F", window: Counts{21, 10}},
		{name: "half of 40", calls: "20S 20F", tripAt: 40},
		{name: "business errors are successes", calls: "10N 10F", tripAt: 20},
		{name: "business errors never trip", calls: "40N", window: Counts{40, 0}},
		{name: "excluded never count", calls: "19F 100X", window: Counts{19, 19}},
		{name: "excluded between failures", calls: "10S 5X 9F 5X", window: Counts{19, 9}},
		{name: "excluded do not make up the 20", calls: "10F 9S 1X 1F", tripAt: 21},
		{name: "ratio 0.3 of 10 is exactly 3", s: Settings{MinCalls: 10, FailureRatio: 0.3}, calls: "7S 3F", tripAt: 10},
		{name: "ratio 0.3 of 10, 2 failures", s: Settings{MinCalls: 10, FailureRatio: 0.3}, calls: "8S 2F 8S", window: Counts{18, 2}},
		{name: "ratio above 1 never trips", s: Settings{MinCalls: 5, FailureRatio: 1.5}, calls: "30F", window: Counts{30, 30}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(tt.s)
			calls := script(t, tt.calls)
			for i, c := range calls {
				want := outcome(c)
				if err := b.Do(func() error { return want }); err != want {
					t.Fatalf("call %d: Do = %v, want fn's error %v", i+1, err, want)
				}
				wantState := Closed
				if tt.tripAt > 0 && i+1 >= tt.tripAt {
					wantState = Open
				}
				if got := b.State(); got != wantState {
					t.Fatalf("after call %d (%c): state %v, want %v (window %+v)", i+1, c, got, wantState, b.Window())
				}
			}
			if tt.tripAt > 0 && tt.tripAt != len(calls) {
				t.Fatalf("bad test: trips at %d of %d calls", tt.tripAt, len(calls))
			}
			if tt.tripAt == 0 {
				if got := b.Window(); got != tt.window {
					t.Errorf("window %+v, want %+v", got, tt.window)
				}
			} else if got := b.Window(); got != (Counts{}) {
				t.Errorf("window after tripping %+v, want empty", got)
			}
		})
	}
}

// The window is time, not a count of calls: it forgets the calls that
// started more than Window ago, a tenth of it at a time, and a call counts
// in the bucket of the moment it started, so a call that outlasts the
// window is never counted.
func TestWindowRollsWithTime(t *testing.T) {
	do := func(b *Breaker, calls string) {
		for _, c := range calls {
			want := outcome(c)
			_ = b.Do(func() error { return want })
		}
	}
	t.Run("old failures are forgotten", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := New(Settings{})
			do(b, script(t, "10F"))
			time.Sleep(DefaultWindow)
			do(b, script(t, "10F"))
			if got, want := b.Window(), (Counts{10, 10}); got != want || b.State() != Closed {
				t.Fatalf("10 failures, %v, 10 failures: window %+v, state %v; want %+v, closed", DefaultWindow, got, b.State(), want)
			}
			do(b, script(t, "10F"))
			if got := b.State(); got != Open {
				t.Fatalf("20 failures in the window: state %v, want open", got)
			}
		})
	})
	t.Run("old successes stop holding it closed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := New(Settings{})
			do(b, script(t, "30S"))
			time.Sleep(DefaultWindow - DefaultWindow/windowBuckets)
			do(b, script(t, "20F"))
			if got, want := b.Window(), (Counts{50, 20}); got != want {
				t.Fatalf("window %+v, want %+v: the successes are a bucket short of the window's end", got, want)
			}
			time.Sleep(DefaultWindow / windowBuckets)
			do(b, script(t, "1F"))
			if got := b.State(); got != Open {
				t.Fatalf("the successes' bucket left the window: state %v, want open (window %+v)", got, b.Window())
			}
		})
	})
	t.Run("a call longer than the window is never counted", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := New(Settings{})
			var wg sync.WaitGroup
			for range 25 {
				wg.Go(func() {
					_ = b.Do(func() error { time.Sleep(DefaultWindow + time.Second); return errDown })
				})
			}
			wg.Wait()
			if got := b.Window(); got != (Counts{}) || b.State() != Closed {
				t.Fatalf("25 failures that each outlasted the window: window %+v, state %v; want empty, closed", got, b.State())
			}
		})
	})
}

// trip opens b with the default rule.
func trip(t *testing.T, b *Breaker) {
	t.Helper()
	for range 20 {
		_ = b.Do(func() error { return errDown })
	}
	if got := b.State(); got != Open {
		t.Fatalf("after 20 failures: state %v, want open", got)
	}
}

func TestOpenRejectsWithoutCalling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Settings{Name: "payments"})
		trip(t, b)
		if got, want := b.RetryAfter(), DefaultOpenFor; got != want {
			t.Fatalf("RetryAfter right after tripping = %v, want %v", got, want)
		}
		for _, elapsed := range []time.Duration{time.Second, 10 * time.Second, 29 * time.Second} {
			time.Sleep(elapsed - (DefaultOpenFor - b.RetryAfter()))
			called := false
			err := b.Do(func() error { called = true; return nil })
			if called {
				t.Fatalf("%v after tripping: fn was called while open", elapsed)
			}
			if !errors.Is(err, ErrOpen) {
				t.Fatalf("%v after tripping: Do = %v, want ErrOpen", elapsed, err)
			}
			if got, want := b.RetryAfter(), DefaultOpenFor-elapsed; got != want {
				t.Fatalf("%v after tripping: RetryAfter = %v, want %v", elapsed, got, want)
			}
			if got := b.State(); got != Open {
				t.Fatalf("%v after tripping: state %v, want open", elapsed, got)
			}
		}
	})
}

func TestHalfOpen(t *testing.T) {
	tests := []struct {
		name      string
		probes    uint32
		results   string // the probes' outcomes, in order
		want      State
		wantHooks []string
	}{
		{name: "successful probe closes", probes: 1, results: "S", want: Closed,
			wantHooks: []string{"dep:open->half_open", "dep:half_open->closed"}},
		{name: "business error closes", probes: 1, results: "N", want: Closed,
			wantHooks: []string{"dep:open->half_open", "dep:half_open->closed"}},
		{name: "failed probe reopens", probes: 1, results: "F", want: Open,
			wantHooks: []string{"dep:open->half_open", "dep:half_open->open"}},
		{name: "excluded probe stays half-open", probes: 1, results: "X", want: HalfOpen,
			wantHooks: []string{"dep:open->half_open"}},
		{name: "three probes must all succeed", probes: 3, results: "SS", want: HalfOpen,
			wantHooks: []string{"dep:open->half_open"}},
		{name: "three good probes close", probes: 3, results: "SSS", want: Closed,
			wantHooks: []string{"dep:open->half_open", "dep:half_open->closed"}},
		{name: "a late failure reopens", probes: 3, results: "SSF", want: Open,
			wantHooks: []string{"dep:open->half_open", "dep:half_open->open"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := &transitions{}
				b := New(Settings{Name: "dep", HalfOpenProbes: tt.probes, OnStateChange: tr.hook})
				trip(t, b)
				tr.reset()

				// The breaker turns half-open only once OpenFor has strictly
				// passed, so look just before and just after.
				time.Sleep(DefaultOpenFor - time.Millisecond)
				if got, want := b.RetryAfter(), time.Millisecond; got != want {
					t.Fatalf("RetryAfter = %v, want %v", got, want)
				}
				if got := b.State(); got != Open {
					t.Fatalf("1ms before OpenFor: state %v, want open", got)
				}
				time.Sleep(2 * time.Millisecond)
				if got := b.State(); got != HalfOpen {
					t.Fatalf("after OpenFor: state %v, want half_open", got)
				}
				if got := b.RetryAfter(); got != 0 {
					t.Fatalf("half-open: RetryAfter = %v, want 0", got)
				}
				for i, c := range tt.results {
					want := outcome(c)
					if err := b.Do(func() error { return want }); err != want {
						t.Fatalf("probe %d: Do = %v, want fn's error %v", i+1, err, want)
					}
				}
				if got := b.State(); got != tt.want {
					t.Fatalf("after probes %q: state %v, want %v", tt.results, got, tt.want)
				}
				if got := strings.Join(tr.list(), " "); got != strings.Join(tt.wantHooks, " ") {
					t.Errorf("transitions %q, want %q", got, strings.Join(tt.wantHooks, " "))
				}
				switch tt.want {
				case Open:
					if got := b.RetryAfter(); got != DefaultOpenFor {
						t.Errorf("reopened: RetryAfter = %v, want a fresh %v", got, DefaultOpenFor)
					}
				case Closed:
					if got := b.Window(); got != (Counts{}) {
						t.Errorf("closed again: window %+v, want empty", got)
					}
				}
			})
		})
	}
}

func TestHalfOpenLetsOnlyTheProbesThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Settings{HalfOpenProbes: 2})
		trip(t, b)
		time.Sleep(DefaultOpenFor + time.Millisecond)

		release := make(chan struct{})
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				if err := b.Do(func() error { <-release; return nil }); err != nil {
					t.Errorf("probe: %v", err)
				}
			})
		}
		synctest.Wait() // both probes are inside fn

		called := false
		err := b.Do(func() error { called = true; return nil })
		if called || !errors.Is(err, ErrOpen) {
			t.Fatalf("third call while two probes are in flight: called %v, err %v; want not called, ErrOpen", called, err)
		}
		if got := b.RetryAfter(); got != 0 {
			t.Errorf("half-open: RetryAfter = %v, want 0", got)
		}
		close(release)
		wg.Wait()
		if got := b.State(); got != Closed {
			t.Fatalf("after two good probes: state %v, want closed", got)
		}
	})
}

func TestReset(t *testing.T) {
	tests := []struct {
		name      string
		prepare   func(t *testing.T, b *Breaker)
		wantHooks []string
	}{
		{
			name:    "closed with failures in the window",
			prepare: func(t *testing.T, b *Breaker) { _ = b.Do(func() error { return errDown }) },
		},
		{
			name:      "open",
			prepare:   trip,
			wantHooks: []string{"dep:open->closed"},
		},
		{
			name: "half-open",
			prepare: func(t *testing.T, b *Breaker) {
				trip(t, b)
				time.Sleep(DefaultOpenFor + time.Millisecond)
				_ = b.State()
			},
			wantHooks: []string{"dep:half_open->closed"},
		},
		{
			// Nobody looked since OpenFor passed: the last state anyone was
			// told of is open.
			name: "open, OpenFor passed unobserved",
			prepare: func(t *testing.T, b *Breaker) {
				trip(t, b)
				time.Sleep(DefaultOpenFor + time.Millisecond)
			},
			wantHooks: []string{"dep:open->closed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := &transitions{}
				b := New(Settings{Name: "dep", OnStateChange: tr.hook})
				tt.prepare(t, b)
				tr.reset()

				b.Reset()
				if got := b.State(); got != Closed {
					t.Fatalf("after Reset: state %v, want closed", got)
				}
				if got := b.Window(); got != (Counts{}) {
					t.Fatalf("after Reset: window %+v, want empty", got)
				}
				if got := b.RetryAfter(); got != 0 {
					t.Fatalf("after Reset: RetryAfter %v, want 0", got)
				}
				if got := strings.Join(tr.list(), " "); got != strings.Join(tt.wantHooks, " ") {
					t.Errorf("transitions %q, want %q", got, strings.Join(tt.wantHooks, " "))
				}
				// A fresh window: 19 failures do not trip it.
				for range 19 {
					_ = b.Do(func() error { return errDown })
				}
				if got := b.State(); got != Closed {
					t.Errorf("19 failures after Reset: state %v, want closed", got)
				}
			})
		})
	}
}

// A call that started before Reset and ends after it must not count in the
// new window, nor move the new breaker.
func TestResetDropsCallsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &transitions{}
		b := New(Settings{Name: "dep", MinCalls: 2, OnStateChange: tr.hook})
		_ = b.Do(func() error { return errDown })

		release := make(chan struct{})
		done := make(chan error)
		go func() { done <- b.Do(func() error { <-release; return errDown }) }()
		synctest.Wait()

		b.Reset()
		close(release)
		if err := <-done; err != errDown {
			t.Fatalf("in-flight call: Do = %v, want its own error", err)
		}
		if got := b.Window(); got != (Counts{}) {
			t.Errorf("window %+v, want empty: the old call's verdict leaked", got)
		}
		if got := b.State(); got != Closed {
			t.Errorf("state %v, want closed", got)
		}
		if got := tr.list(); len(got) != 0 {
			t.Errorf("transitions %q, want none: the retired breaker tripped aloud", got)
		}
	})
}

func TestOnStateChangeFullCycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := &transitions{}
		b := New(Settings{Name: "shipping", OnStateChange: tr.hook})
		trip(t, b)
		time.Sleep(DefaultOpenFor + time.Millisecond)
		_ = b.Do(func() error { return errDown }) // failed probe
		time.Sleep(DefaultOpenFor + time.Millisecond)
		_ = b.Do(func() error { return nil }) // good probe
		want := []string{
			"shipping:closed->open",
			"shipping:open->half_open",
			"shipping:half_open->open",
			"shipping:open->half_open",
			"shipping:half_open->closed",
		}
		if got := strings.Join(tr.list(), " "); got != strings.Join(want, " ") {
			t.Errorf("transitions %q, want %q", got, strings.Join(want, " "))
		}
	})
}

func TestDoReturnsFnErrorUnchanged(t *testing.T) {
	own := errors.New("not a status")
	for _, want := range []error{nil, errDown, errLate, errNotFound, own, context.Canceled} {
		b := New(Settings{})
		if got := b.Do(func() error { return want }); got != want {
			t.Errorf("Do = %v, want %v itself", got, want)
		}
	}
}

func TestPanicCountsAsFailure(t *testing.T) {
	b := New(Settings{})
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic was swallowed")
			}
		}()
		_ = b.Do(func() error { panic("boom") })
	}()
	if got, want := b.Window(), (Counts{Calls: 1, Failures: 1}); got != want {
		t.Errorf("window %+v, want %+v", got, want)
	}
}

func TestCustomClassify(t *testing.T) {
	// Everything is a failure, even nil, and an out-of-range verdict too.
	b := New(Settings{MinCalls: 2, Classify: func(error) Verdict { return Verdict(7) }})
	_ = b.Do(func() error { return nil })
	_ = b.Do(func() error { return nil })
	if got := b.State(); got != Open {
		t.Errorf("state %v, want open", got)
	}
}

func TestDefaults(t *testing.T) {
	got := Settings{FailureRatio: -1}.withDefaults()
	if got.MinCalls != 20 || got.FailureRatio != 0.5 || got.Window != 10*time.Second || got.OpenFor != 30*time.Second || got.HalfOpenProbes != 1 || got.Classify == nil {
		t.Errorf("defaults %+v, want 20 calls, ratio 0.5, window 10s, open 30s, 1 probe, Classify", got)
	}
}

func TestStrings(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{Closed.String(), "closed"},
		{HalfOpen.String(), "half_open"},
		{Open.String(), "open"},
		{State(9).String(), "state(9)"},
		{Success.String(), "success"},
		{Failure.String(), "failure"},
		{Excluded.String(), "excluded"},
		{Verdict(-1).String(), "verdict(-1)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
