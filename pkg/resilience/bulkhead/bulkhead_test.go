package bulkhead

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// errBudgetSpent stands in for the cause a budget's context carries
// (deadline.ErrBudgetExhausted in the shop).
var errBudgetSpent = errors.New("test: budget spent")

// fill takes n slots of p at once, failing the test if any would wait.
func fill(t *testing.T, p *Pool, n int) {
	t.Helper()
	for i := range n {
		waited, err := p.Acquire(context.Background())
		if err != nil || waited != 0 {
			t.Fatalf("filling slot %d: waited %v, err %v; want an immediate slot", i, waited, err)
		}
	}
}

// drain releases n slots of p.
func drain(p *Pool, n int) {
	for range n {
		p.Release()
	}
}

// maxInt raises m to v if v is larger.
func maxInt(m *atomic.Int64, v int64) {
	for {
		old := m.Load()
		if v <= old || m.CompareAndSwap(old, v) {
			return
		}
	}
}

func TestNewDefaults(t *testing.T) {
	tests := []struct {
		name     string
		capacity int
		want     int
	}{
		{"zero means default", 0, DefaultCapacity},
		{"negative means default", -3, DefaultCapacity},
		{"explicit", 7, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New(Settings{Name: "catalog", Capacity: tt.capacity})
			want := Stats{Name: "catalog", Capacity: tt.want}
			if got := p.Stats(); got != want {
				t.Errorf("Stats() = %+v, want %+v", got, want)
			}
			// The capacity is real, not just reported: exactly want slots
			// are free, then the pool (MaxWait 0 by default) is full.
			fill(t, p, tt.want)
			if _, err := p.Acquire(context.Background()); !errors.Is(err, ErrFull) {
				t.Errorf("Acquire past capacity: err = %v, want ErrFull", err)
			}
		})
	}
}

// Real goroutines under -race: however they interleave, no more than
// Capacity calls ever hold a slot at once.
func TestCapacityRespectedUnderConcurrency(t *testing.T) {
	tests := []struct {
		name     string
		capacity int
		want     int
	}{
		{"one", 1, 1},
		{"three", 3, 3},
		{"default", 0, DefaultCapacity},
	}
	const callers = 300
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New(Settings{Name: "shared", Capacity: tt.capacity, MaxWait: -1})
			var inFlight, peak atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, callers)
			for range callers {
				wg.Go(func() {
					if _, err := p.Acquire(context.Background()); err != nil {
						errs <- err
						return
					}
					maxInt(&peak, inFlight.Add(1))
					time.Sleep(time.Duration(rand.IntN(50)) * time.Microsecond)
					inFlight.Add(-1)
					p.Release()
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Errorf("Acquire with no bounds failed: %v", err)
			}
			if got := peak.Load(); got > int64(tt.want) || got < 1 {
				t.Errorf("peak in flight = %d, want 1..%d", got, tt.want)
			}
			if s := p.Stats(); s.InFlight != 0 || s.Waiting != 0 || s.Acquired != callers {
				t.Errorf("after all calls: %+v, want InFlight 0, Waiting 0, Acquired %d", s, callers)
			}
		})
	}
}

// In fake time the pool is used to the full: exactly Capacity calls run at
// once, and the queue drains in waves of Capacity.
func TestCapacityUsedExactly(t *testing.T) {
	tests := []struct {
		capacity, callers int
		hold              time.Duration
		wantElapsed       time.Duration
	}{
		{capacity: 1, callers: 4, hold: 10 * time.Millisecond, wantElapsed: 40 * time.Millisecond},
		{capacity: 5, callers: 50, hold: time.Millisecond, wantElapsed: 10 * time.Millisecond},
		{capacity: 25, callers: 60, hold: time.Millisecond, wantElapsed: 3 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("cap%d_callers%d", tt.capacity, tt.callers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(Settings{Capacity: tt.capacity, MaxWait: -1})
				var inFlight, peak atomic.Int64
				start := time.Now()
				var wg sync.WaitGroup
				for range tt.callers {
					wg.Go(func() {
						if _, err := p.Acquire(context.Background()); err != nil {
							t.Errorf("Acquire: %v", err)
							return
						}
						maxInt(&peak, inFlight.Add(1))
						time.Sleep(tt.hold)
						inFlight.Add(-1)
						p.Release()
					})
				}
				wg.Wait()
				if got := peak.Load(); got != int64(tt.capacity) {
					t.Errorf("peak in flight = %d, want %d", got, tt.capacity)
				}
				if got := time.Since(start); got != tt.wantElapsed {
					t.Errorf("all calls took %v, want %v", got, tt.wantElapsed)
				}
			})
		})
	}
}

// Waiters get slots in the order they queued, and a caller arriving just
// after a Release does not jump the queue.
func TestFIFO(t *testing.T) {
	for _, queued := range []int{1, 2, 8} {
		t.Run(fmt.Sprintf("%d_queued", queued), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(Settings{Capacity: 1, MaxWait: -1})
				fill(t, p, 1)

				var mu sync.Mutex
				var order []int
				call := func(i int) {
					if _, err := p.Acquire(context.Background()); err != nil {
						t.Errorf("caller %d: %v", i, err)
						return
					}
					mu.Lock()
					order = append(order, i)
					mu.Unlock()
					p.Release()
				}
				for i := range queued {
					go call(i)
					synctest.Wait() // i is queued before i+1 arrives
				}
				if got := p.Stats().Waiting; got != queued {
					t.Fatalf("Waiting = %d, want %d", got, queued)
				}
				p.Release()
				go call(queued) // a late arrival, racing the woken waiter
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()

				want := make([]int, queued+1)
				for i := range want {
					want[i] = i
				}
				if fmt.Sprint(order) != fmt.Sprint(want) {
					t.Errorf("slots went to %v, want %v", order, want)
				}
				if s := p.Stats(); s.InFlight != 0 || s.Waiting != 0 {
					t.Errorf("after all calls: %+v, want nothing in flight or waiting", s)
				}
			})
		})
	}
}

// MaxWait 0: a full pool fails at once, without waiting at all.
func TestFailFastWhenFull(t *testing.T) {
	tests := []struct {
		name     string
		held     int
		wantFull bool
	}{
		{"empty", 0, false},
		{"one slot left", 1, false},
		{"full", 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(Settings{Name: "payments", Capacity: 2, MaxWait: 0})
				fill(t, p, tt.held)
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()

				start := time.Now()
				waited, err := p.Acquire(ctx)
				if elapsed := time.Since(start); waited != 0 || elapsed != 0 {
					t.Errorf("waited %v (%v elapsed), want no wait at all", waited, elapsed)
				}
				if got := errors.Is(err, ErrFull); got != tt.wantFull {
					t.Fatalf("err = %v, want ErrFull: %v", err, tt.wantFull)
				}
				if tt.wantFull {
					if errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("err = %v also matches DeadlineExceeded", err)
					}
					if !strings.Contains(err.Error(), `"payments"`) {
						t.Errorf("err = %q does not name the pool", err)
					}
					if s := p.Stats(); s.Rejected != 1 || s.Waiting != 0 {
						t.Errorf("Stats = %+v, want Rejected 1, Waiting 0", s)
					}
				}
			})
		})
	}
}

// A waiter waits exactly min(MaxWait, remaining budget), and the error says
// which bound ended the wait. Fake time makes the durations exact.
func TestWaitBounds(t *testing.T) {
	const none = time.Duration(0)
	tests := []struct {
		name        string
		maxWait     time.Duration
		budget      time.Duration // 0: ctx has no deadline
		cancelAfter time.Duration // 0: ctx is not cancelled
		wantWaited  time.Duration
		wantFull    bool // else the ctx ended the wait
		wantIs      []error
	}{
		{
			name: "MaxWait shorter than budget", maxWait: 30 * time.Millisecond, budget: 100 * time.Millisecond,
			wantWaited: 30 * time.Millisecond, wantFull: true, wantIs: []error{ErrFull},
		},
		{
			name: "MaxWait without budget", maxWait: 50 * time.Millisecond, budget: none,
			wantWaited: 50 * time.Millisecond, wantFull: true, wantIs: []error{ErrFull},
		},
		{
			name: "budget shorter than MaxWait", maxWait: 100 * time.Millisecond, budget: 40 * time.Millisecond,
			wantWaited: 40 * time.Millisecond, wantIs: []error{context.DeadlineExceeded, errBudgetSpent},
		},
		{
			name: "budget bounds unbounded MaxWait", maxWait: -1, budget: 70 * time.Millisecond,
			wantWaited: 70 * time.Millisecond, wantIs: []error{context.DeadlineExceeded, errBudgetSpent},
		},
		{
			name: "equal bounds: the budget's error", maxWait: 50 * time.Millisecond, budget: 50 * time.Millisecond,
			wantWaited: 50 * time.Millisecond, wantIs: []error{context.DeadlineExceeded, errBudgetSpent},
		},
		{
			name: "caller cancels while queued", maxWait: -1, cancelAfter: 25 * time.Millisecond,
			wantWaited: 25 * time.Millisecond, wantIs: []error{context.Canceled, errBudgetSpent},
		},
		{
			name: "caller cancels before MaxWait", maxWait: time.Second, budget: 2 * time.Second, cancelAfter: 10 * time.Millisecond,
			wantWaited: 10 * time.Millisecond, wantIs: []error{context.Canceled, errBudgetSpent},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(Settings{Name: "shipping", Capacity: 1, MaxWait: tt.maxWait})
				fill(t, p, 1)

				ctx, cancel := context.WithCancelCause(context.Background())
				defer cancel(nil)
				if tt.budget > 0 {
					var stop context.CancelFunc
					ctx, stop = context.WithTimeoutCause(ctx, tt.budget, errBudgetSpent)
					defer stop()
				}
				if tt.cancelAfter > 0 {
					time.AfterFunc(tt.cancelAfter, func() { cancel(errBudgetSpent) })
				}

				waited, err := p.Acquire(ctx)
				if waited != tt.wantWaited {
					t.Errorf("waited %v, want %v", waited, tt.wantWaited)
				}
				if err == nil {
					p.Release()
					t.Fatal("Acquire succeeded on a pool nobody released")
				}
				for _, want := range tt.wantIs {
					if !errors.Is(err, want) {
						t.Errorf("err = %v, want it to match %v", err, want)
					}
				}
				if got := errors.Is(err, ErrFull); got != tt.wantFull {
					t.Errorf("err = %v: matches ErrFull %v, want %v", err, got, tt.wantFull)
				}

				want := Stats{Name: "shipping", Capacity: 1, InFlight: 1, Acquired: 1}
				if tt.wantFull {
					want.Rejected = 1
				} else {
					want.Expired = 1
				}
				if got := p.Stats(); got != want {
					t.Errorf("Stats = %+v, want %+v", got, want)
				}
				// The waiter left the queue: the held slot goes back to
				// being free, not to a departed waiter.
				p.Release()
				if got := p.Stats(); got.InFlight != 0 {
					t.Errorf("after Release, InFlight = %d, want 0", got.InFlight)
				}
			})
		})
	}
}

// MaxWait < 0 sets no bound of its own: with no budget either, the waiter
// waits until a slot is released, however long that takes.
func TestNegativeMaxWaitWaitsUntilRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(Settings{Capacity: 1, MaxWait: -1})
		fill(t, p, 1)

		type result struct {
			waited time.Duration
			err    error
		}
		done := make(chan result, 1)
		go func() {
			waited, err := p.Acquire(context.Background())
			done <- result{waited, err}
		}()

		time.Sleep(time.Hour)
		synctest.Wait()
		select {
		case r := <-done:
			t.Fatalf("Acquire returned before any Release: %+v", r)
		default:
		}
		if got := p.Stats().Waiting; got != 1 {
			t.Fatalf("Waiting = %d, want 1", got)
		}

		p.Release()
		r := <-done
		if r.err != nil || r.waited != time.Hour {
			t.Errorf("Acquire = %v, %v; want 1h0m0s, nil", r.waited, r.err)
		}
		p.Release()
	})
}

// MaxQueue bounds the callers waiting at once; beyond it, callers fail at
// once with ErrFull, and may queue again when the queue shortens.
func TestMaxQueue(t *testing.T) {
	for _, limit := range []int{1, 3} {
		t.Run(fmt.Sprintf("limit_%d", limit), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := New(Settings{Capacity: 1, MaxWait: -1, MaxQueue: limit})
				fill(t, p, 1)

				var wg sync.WaitGroup
				queue := func() {
					wg.Go(func() {
						if _, err := p.Acquire(context.Background()); err != nil {
							t.Errorf("queued caller: %v", err)
							return
						}
						time.Sleep(time.Millisecond)
						p.Release()
					})
					synctest.Wait()
				}
				for range limit {
					queue()
				}
				if got := p.Stats().Waiting; got != limit {
					t.Fatalf("Waiting = %d, want %d", got, limit)
				}

				waited, err := p.Acquire(context.Background())
				if !errors.Is(err, ErrFull) || waited != 0 {
					t.Fatalf("Acquire with a full queue = %v, %v; want 0s, ErrFull", waited, err)
				}
				if s := p.Stats(); s.Rejected != 1 || s.Waiting != limit {
					t.Errorf("Stats = %+v, want Rejected 1, Waiting %d", s, limit)
				}

				p.Release() // the first waiter takes the slot: room for one more
				synctest.Wait()
				queue()
				if got := p.Stats().Waiting; got != limit {
					t.Errorf("Waiting after re-queueing = %d, want %d", got, limit)
				}

				wg.Wait()
				want := Stats{Capacity: 1, Acquired: uint64(1 + limit + 1), Rejected: 1}
				if got := p.Stats(); got != want {
					t.Errorf("final Stats = %+v, want %+v", got, want)
				}
			})
		})
	}
}

// The counters tell the outcomes apart, step by step.
func TestStatsCounters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(Settings{Name: "orders", Capacity: 2, MaxWait: 10 * time.Millisecond})
		background := context.Background()
		steps := []struct {
			name string
			do   func() error // returns an unexpected outcome, if any
			want Stats
		}{
			{
				name: "two free slots taken",
				do: func() error {
					for range 2 {
						if _, err := p.Acquire(background); err != nil {
							return err
						}
					}
					return nil
				},
				want: Stats{InFlight: 2, Acquired: 2},
			},
			{
				name: "MaxWait elapses: rejected",
				do: func() error {
					if _, err := p.Acquire(background); !errors.Is(err, ErrFull) {
						return fmt.Errorf("err = %v, want ErrFull", err)
					}
					return nil
				},
				want: Stats{InFlight: 2, Acquired: 2, Rejected: 1},
			},
			{
				name: "budget ends while queued: expired",
				do: func() error {
					ctx, cancel := context.WithTimeout(background, 5*time.Millisecond)
					defer cancel()
					if _, err := p.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
						return fmt.Errorf("err = %v, want DeadlineExceeded", err)
					}
					return nil
				},
				want: Stats{InFlight: 2, Acquired: 2, Rejected: 1, Expired: 1},
			},
			{
				name: "a slot is released during the wait: acquired",
				do: func() error {
					time.AfterFunc(3*time.Millisecond, p.Release)
					waited, err := p.Acquire(background)
					if err != nil || waited != 3*time.Millisecond {
						return fmt.Errorf("Acquire = %v, %v; want 3ms, nil", waited, err)
					}
					return nil
				},
				want: Stats{InFlight: 2, Acquired: 3, Rejected: 1, Expired: 1},
			},
			{
				name: "both released",
				do:   func() error { drain(p, 2); return nil },
				want: Stats{Acquired: 3, Rejected: 1, Expired: 1},
			},
			{
				name: "spent budget on arrival takes no free slot: expired",
				do: func() error {
					ctx, cancel := context.WithCancel(background)
					cancel()
					if _, err := p.Acquire(ctx); !errors.Is(err, context.Canceled) {
						return fmt.Errorf("err = %v, want Canceled", err)
					}
					return nil
				},
				want: Stats{Acquired: 3, Rejected: 1, Expired: 2},
			},
		}
		for _, st := range steps {
			if err := st.do(); err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			st.want.Name, st.want.Capacity = "orders", 2
			if got := p.Stats(); got != st.want {
				t.Fatalf("%s: Stats = %+v, want %+v", st.name, got, st.want)
			}
		}
	})
}

// Release without a matching Acquire is a programming error and panics
// with a clear message; the pool stays usable (the lock is not held).
func TestReleaseWithoutAcquirePanics(t *testing.T) {
	tests := []struct {
		name  string
		setup func(p *Pool)
	}{
		{"fresh pool", func(*Pool) {}},
		{"second Release", func(p *Pool) {
			if _, err := p.Acquire(context.Background()); err != nil {
				t.Fatal(err)
			}
			p.Release()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New(Settings{Name: "catalog", Capacity: 1})
			tt.setup(p)
			func() {
				defer func() {
					msg, _ := recover().(string)
					if !strings.Contains(msg, "bulkhead: Release without a matching Acquire") || !strings.Contains(msg, `"catalog"`) {
						t.Errorf("panic = %q, want a message about Release without Acquire naming the pool", msg)
					}
				}()
				p.Release()
			}()
			if waited, err := p.Acquire(context.Background()); err != nil || waited != 0 {
				t.Errorf("Acquire after the panic = %v, %v; want an immediate slot", waited, err)
			}
			if got := p.Stats().InFlight; got != 1 {
				t.Errorf("InFlight = %d, want 1", got)
			}
		})
	}
}

// A slot handed to a waiter whose ctx has just ended is passed on to the
// next waiter rather than lost. Which of the two the waiter sees first is
// up to select, so the case runs many times; neither way may leak a slot.
func TestSlotHandedToEndedWaiterIsPassedOn(t *testing.T) {
	for i := range 50 {
		synctest.Test(t, func(t *testing.T) {
			p := New(Settings{Capacity: 1, MaxWait: -1})
			fill(t, p, 1)

			ctx, cancel := context.WithCancel(context.Background())
			call := func(ctx context.Context, result chan<- error) {
				_, err := p.Acquire(ctx)
				if err == nil {
					p.Release()
				}
				result <- err
			}
			a, b := make(chan error, 1), make(chan error, 1)
			go call(ctx, a)
			synctest.Wait()
			go call(context.Background(), b)
			synctest.Wait()

			cancel()    // a's ctx ends ...
			p.Release() // ... and in the same instant a is handed the slot
			aErr, bErr := <-a, <-b

			if bErr != nil {
				t.Fatalf("run %d: the next waiter failed: %v", i, bErr)
			}
			if aErr != nil && !errors.Is(aErr, context.Canceled) {
				t.Fatalf("run %d: ended waiter: err = %v, want nil or Canceled", i, aErr)
			}
			want := Stats{Capacity: 1, Acquired: 3}
			if aErr != nil {
				want = Stats{Capacity: 1, Acquired: 2, Expired: 1}
			}
			if got := p.Stats(); got != want {
				t.Fatalf("run %d: Stats = %+v, want %+v", i, got, want)
			}
		})
	}
}

// Many goroutines with budgets that end before, during and after their
// wait, and some cancelled by hand: whatever happens, every outcome is
// counted once, no slot leaks and the queue ends empty.
func TestNoLeakUnderChurn(t *testing.T) {
	tests := []struct {
		name string
		s    Settings
	}{
		{"fail fast", Settings{Capacity: 4, MaxWait: 0}},
		{"short MaxWait", Settings{Capacity: 4, MaxWait: 200 * time.Microsecond}},
		{"unbounded wait, queue limit", Settings{Capacity: 4, MaxWait: -1, MaxQueue: 50}},
	}
	const callers = 400
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New(tt.s)
			var ok, full, ended atomic.Uint64
			var inFlight, peak atomic.Int64
			var wg sync.WaitGroup
			for i := range callers {
				wg.Go(func() {
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					switch i % 4 {
					case 0: // spent on arrival
						cancel()
					case 1: // a short budget
						ctx, cancel = context.WithTimeout(ctx, time.Duration(rand.IntN(300))*time.Microsecond)
						defer cancel()
					case 2: // cancelled by hand at some point
						time.AfterFunc(time.Duration(rand.IntN(300))*time.Microsecond, cancel)
					case 3: // no budget
					}
					_, err := p.Acquire(ctx)
					isFull := errors.Is(err, ErrFull)
					isEnded := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
					switch {
					case err == nil:
						ok.Add(1)
						maxInt(&peak, inFlight.Add(1))
						time.Sleep(time.Duration(rand.IntN(100)) * time.Microsecond)
						inFlight.Add(-1)
						p.Release()
					case isFull && !isEnded:
						full.Add(1)
					case isEnded && !isFull:
						ended.Add(1)
					default:
						t.Errorf("err = %v: want exactly one of ErrFull or a ctx error", err)
					}
				})
			}
			wg.Wait()

			capacity := int64(tt.s.Capacity)
			if got := peak.Load(); got > capacity {
				t.Errorf("peak in flight = %d, want <= %d", got, capacity)
			}
			want := Stats{Capacity: tt.s.Capacity, Acquired: ok.Load(), Rejected: full.Load(), Expired: ended.Load()}
			if got := p.Stats(); got != want {
				t.Errorf("Stats = %+v, want %+v", got, want)
			}
			if sum := want.Acquired + want.Rejected + want.Expired; sum != callers {
				t.Errorf("outcomes add up to %d, want %d", sum, callers)
			}
			for range tt.s.Capacity {
				if waited, err := p.Acquire(context.Background()); err != nil || waited != 0 {
					t.Fatalf("fresh Acquire = %v, %v; want an immediate slot", waited, err)
				}
			}
			drain(p, tt.s.Capacity)
		})
	}
}

// The path through a free slot allocates nothing (no timer, no derived
// context, no waiter).
func TestFastPathDoesNotAllocate(t *testing.T) {
	p := New(Settings{Capacity: 1, MaxWait: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := p.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		p.Release()
	})
	if allocs != 0 {
		t.Errorf("Acquire+Release on a free slot: %v allocs, want 0", allocs)
	}
}

// Work limited to part of the pool waits behind whole-pool work: a freed
// slot goes to it only while fewer than its limit are in use, and a
// newcomer allowed the whole pool takes a free slot before it.
func TestAcquireWithinWaitsBehindTheWholePool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(Settings{Name: "catalog", Capacity: 4, MaxWait: time.Second})
		ctx := context.Background()
		for range 2 { // the limited work's two slots
			if _, err := p.AcquireWithin(ctx, 2); err != nil {
				t.Fatal(err)
			}
		}
		got := make(chan error, 1)
		go func() {
			_, err := p.AcquireWithin(ctx, 2)
			got <- err
		}()
		synctest.Wait()
		if st := p.Stats(); st.InFlight != 2 || st.Waiting != 1 {
			t.Fatalf("with its share in use, limited work should wait: %+v", st)
		}
		// Whole-pool work is not held up by the limited waiter.
		if _, err := p.Acquire(ctx); err != nil {
			t.Fatalf("Acquire with 2 of 4 in use: %v", err)
		}
		// A full pool refuses limited work at once.
		if _, err := p.Acquire(ctx); err != nil {
			t.Fatalf("Acquire with 3 of 4 in use: %v", err)
		}
		if _, err := p.AcquireWithin(ctx, 2); !errors.Is(err, ErrFull) {
			t.Errorf("AcquireWithin on a full pool: %v, want ErrFull at once", err)
		}
		p.Release() // back to 3 in use
		// A limited slot freed with 2 others still in use (1 + 1): not yet.
		p.Release()
		synctest.Wait()
		select {
		case err := <-got:
			t.Fatalf("limited work got a slot with 2 of its limit of 2 in use (err %v)", err)
		default:
		}
		// One more freed: now fewer than 2 are in use, the slot is its.
		p.Release()
		synctest.Wait()
		select {
		case err := <-got:
			if err != nil {
				t.Fatalf("limited work: %v", err)
			}
		default:
			t.Fatal("limited work still waits with 1 of 4 in use")
		}
		if st := p.Stats(); st.InFlight != 2 || st.Waiting != 0 {
			t.Errorf("after the hand-off: %+v, want 2 in flight, none waiting", st)
		}
	})
}

// Limited work waits as long as its budget, not MaxWait: it is patient.
func TestAcquireWithinEndsWithTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(Settings{Name: "catalog", Capacity: 2, MaxWait: 10 * time.Millisecond})
		if _, err := p.AcquireWithin(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		waited, err := p.AcquireWithin(ctx, 1)
		if !errors.Is(err, context.DeadlineExceeded) || waited != time.Minute {
			t.Errorf("AcquireWithin = waited %v, %v; want a minute and DeadlineExceeded", waited, err)
		}
		if st := p.Stats(); st.Waiting != 0 || st.InFlight != 1 {
			t.Errorf("after the budget ran out: %+v", st)
		}
	})
}
