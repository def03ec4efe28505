package breaker

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Many callers, a short open period and half the counted calls failing, so
// the breaker cycles through every state, and Reset, State, Window and
// RetryAfter racing with them. Run with -race.
func TestConcurrentUse(t *testing.T) {
	var (
		hookMu sync.Mutex
		last   = Closed
		chain  []string
		broken bool
	)
	b := New(Settings{
		Name:           "dep",
		MinCalls:       10,
		OpenFor:        time.Millisecond,
		HalfOpenProbes: 3,
		OnStateChange: func(_ string, from, to State) {
			hookMu.Lock()
			defer hookMu.Unlock()
			if from != last || from == to {
				broken = true
			}
			chain = append(chain, from.String()+"->"+to.String())
			last = to
		},
	})

	const callers, calls = 32, 400
	var ran, refused, other atomic.Int64
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range calls {
				want := outcome(rune("FSFXFNS"[(c+i)%7]))
				fnRan := false
				err := b.Do(func() error { fnRan = true; return want })
				switch {
				case fnRan && err == want:
					ran.Add(1)
				case !fnRan && errors.Is(err, ErrOpen):
					refused.Add(1)
				default:
					other.Add(1)
				}
			}
		})
	}
	stop := make(chan struct{})
	var watchers sync.WaitGroup
	watchers.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if w := b.Window(); w.Failures < 0 || w.Failures > w.Calls {
				t.Errorf("impossible window %+v", w)
			}
			if s := b.State(); s != Closed && s != HalfOpen && s != Open {
				t.Errorf("impossible state %v", s)
			}
			if d := b.RetryAfter(); d < 0 || d > time.Millisecond {
				t.Errorf("RetryAfter %v outside [0, OpenFor]", d)
			}
		}
	})
	watchers.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Microsecond):
				b.Reset()
			}
		}
	})
	wg.Wait()
	close(stop)
	watchers.Wait()

	if got := ran.Load() + refused.Load(); got != callers*calls || other.Load() != 0 {
		t.Errorf("ran %d + refused %d of %d calls, %d other results", ran.Load(), refused.Load(), callers*calls, other.Load())
	}
	hookMu.Lock()
	defer hookMu.Unlock()
	if broken {
		t.Errorf("transitions do not chain: %v", chain)
	}
	t.Logf("%d calls ran, %d refused, %d transitions", ran.Load(), refused.Load(), len(chain))
}
