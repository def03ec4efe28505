package bulkhead

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// ErrFull means no slot was free within the wait bound: the pool was full
// and MaxWait is 0, MaxWait elapsed, or the queue limit was reached.
// Callers map it to gRPC ResourceExhausted / HTTP 503.
var ErrFull = errors.New("bulkhead: full")

// DefaultCapacity is the number of slots of a pool whose Settings leave
// Capacity unset: the lesson's bulkhead per dependency.
const DefaultCapacity = 25

// Settings configure a Pool. Only Name is needed; the zero values of the
// other fields give a pool of DefaultCapacity slots that fails at once when
// full.
type Settings struct {
	// Name identifies the pool in errors and Stats, e.g. "payments".
	Name string
	// Capacity is the number of calls admitted at once; <= 0 means
	// DefaultCapacity.
	Capacity int
	// MaxWait is the longest a caller waits for a slot. 0: do not wait,
	// fail at once when full. Negative: no bound of its own, wait until a
	// slot frees or ctx ends. Whatever it is, ctx's deadline (the remaining
	// budget) also bounds the wait.
	MaxWait time.Duration
	// MaxQueue is the most callers waiting at once; a caller that would
	// be one more fails at once with ErrFull. <= 0 means unbounded.
	MaxQueue int
}

// Pool is a bulkhead: at most Capacity calls hold a slot at once, and the
// others wait in one FIFO queue. Make one with New; a Pool is safe for
// concurrent use and must not be copied.
//
// The FIFO queue is a small intrusive list rather than
// golang.org/x/sync/semaphore.Weighted (also FIFO): the pool needs what
// Weighted does not expose — the queue length (for MaxQueue and
// Stats.Waiting) and a MaxWait bound enforced without deriving a context
// per waiter.
type Pool struct {
	name     string
	capacity int
	maxWait  time.Duration
	maxQueue int

	mu       sync.Mutex
	inFlight int       // slots held, including ones handed to a waiter not yet awake
	queue    waitQueue // callers waiting, oldest first; non-empty only when inFlight == capacity
	// low are the callers of AcquireWithin waiting, oldest first; each
	// may take a slot only while fewer than its limit are in use.
	low waitQueue

	acquired, rejected, expired atomic.Uint64
}

// New returns a pool with settings s (see Settings for the defaults).
func New(s Settings) *Pool {
	if s.Capacity <= 0 {
		s.Capacity = DefaultCapacity
	}
	if s.MaxQueue < 0 {
		s.MaxQueue = 0
	}
	return &Pool{name: s.Name, capacity: s.Capacity, maxWait: s.MaxWait, maxQueue: s.MaxQueue}
}

// Acquire takes a slot, waiting behind earlier callers (FIFO) when the pool
// is full. The wait is bounded by MaxWait and by ctx: its deadline, which
// is the remaining budget, and its cancellation. Queue wait counts against
// the budget. Acquire returns how long it waited, also on failure.
//
// Errors:
//   - one matching ErrFull when the pool is full and MaxWait is 0, when the
//     queue already holds MaxQueue callers, or when MaxWait elapsed first;
//   - one wrapping context.Cause(ctx) and ctx.Err() when ctx ended first
//     (the budget ran out while queued) or had already ended on arrival, in
//     which case no slot is taken even if one is free: the caller has no
//     time left to use it.
//
// If ctx ends just as a slot is handed over, the slot goes to the next
// waiter; Acquire never returns an error while holding a slot.
//
// Every successful Acquire must be paired with exactly one Release. The
// path through a free slot neither allocates nor starts a timer.
func (p *Pool) Acquire(ctx context.Context) (waited time.Duration, err error) {
	if ctx.Err() != nil {
		p.expired.Add(1)
		return 0, p.ended(ctx, 0, "already ended on arrival")
	}

	p.mu.Lock()
	// No barging: a free slot is taken only if nobody is queued for it.
	if p.inFlight < p.capacity && p.queue.len == 0 {
		p.inFlight++
		p.mu.Unlock()
		p.acquired.Add(1)
		return 0, nil
	}
	if p.maxWait == 0 {
		p.mu.Unlock()
		p.rejected.Add(1)
		return 0, fmt.Errorf("%w: pool %q has all %d slots in use and does not wait", ErrFull, p.name, p.capacity)
	}
	if p.maxQueue > 0 && p.queue.len >= p.maxQueue {
		p.mu.Unlock()
		p.rejected.Add(1)
		return 0, fmt.Errorf("%w: pool %q has %d callers queued, its limit", ErrFull, p.name, p.maxQueue)
	}
	start := time.Now()
	w := &waiter{ready: make(chan struct{})}
	p.queue.pushBack(w)
	p.mu.Unlock()

	return p.wait(ctx, w, start)
}

// Capacity is the pool's number of slots.
func (p *Pool) Capacity() int { return p.capacity }

// AcquireWithin is Acquire for work that may hold only part of the pool,
// its first limit slots: how a pool sheds by class, so that the least
// urgent work gives way first and the most urgent always finds a reserved
// part free. It takes a slot while fewer than limit are in use and nobody
// is queued for one. A full pool (every slot in use), or one that does not
// wait (MaxWait 0), refuses it at once with an error matching ErrFull.
// Otherwise it waits — behind every caller of Acquire, who take a freed
// slot first — until a slot is freed with fewer than limit in use, or ctx
// ends: its budget is the bound of its patience (MaxWait and MaxQueue bound
// the waits of Acquire). A limit of Capacity or more is Acquire itself; a
// limit below 1 never gets a slot.
func (p *Pool) AcquireWithin(ctx context.Context, limit int) (time.Duration, error) {
	if limit >= p.capacity {
		return p.Acquire(ctx)
	}
	if ctx.Err() != nil {
		p.expired.Add(1)
		return 0, p.ended(ctx, 0, "already ended on arrival")
	}
	p.mu.Lock()
	if p.inFlight < limit && p.queue.len == 0 {
		p.inFlight++
		p.mu.Unlock()
		p.acquired.Add(1)
		return 0, nil
	}
	if p.maxWait == 0 || limit < 1 || p.inFlight >= p.capacity {
		inFlight := p.inFlight
		p.mu.Unlock()
		p.rejected.Add(1)
		return 0, fmt.Errorf("%w: pool %q has %d of its %d slots in use, and this work may hold at most %d",
			ErrFull, p.name, inFlight, p.capacity, max(limit, 0))
	}
	start := time.Now()
	w := &waiter{ready: make(chan struct{}), limit: limit}
	p.low.pushBack(w)
	p.mu.Unlock()

	select {
	case <-w.ready:
		p.acquired.Add(1)
		return time.Since(start), nil
	case <-ctx.Done():
		return p.leave(ctx, &p.low, w, start)
	}
}

// wait blocks until Release hands w a slot, MaxWait elapses or ctx ends.
func (p *Pool) wait(ctx context.Context, w *waiter, start time.Time) (time.Duration, error) {
	// The timer is needed only when MaxWait is the tighter bound; when the
	// budget ends first, ctx.Done fires on its own.
	var timeout <-chan time.Time
	if p.maxWait > 0 {
		if dl, ok := ctx.Deadline(); !ok || dl.Sub(start) > p.maxWait {
			t := time.NewTimer(p.maxWait)
			defer t.Stop()
			timeout = t.C
		}
	}

	select {
	case <-w.ready:
		p.acquired.Add(1)
		return time.Since(start), nil

	case <-timeout:
		p.mu.Lock()
		if w.granted {
			// The slot came as the bound elapsed: keep it.
			p.mu.Unlock()
			p.acquired.Add(1)
			return time.Since(start), nil
		}
		p.queue.remove(w)
		p.mu.Unlock()
		p.rejected.Add(1)
		waited := time.Since(start)
		return waited, fmt.Errorf("%w: pool %q had no free slot within %v", ErrFull, p.name, p.maxWait)

	case <-ctx.Done():
		return p.leave(ctx, &p.queue, w, start)
	}
}

// leave takes w, whose ctx ended while it waited in q, out of the line.
func (p *Pool) leave(ctx context.Context, q *waitQueue, w *waiter, start time.Time) (time.Duration, error) {
	p.mu.Lock()
	if w.granted {
		// Handed a slot after the budget was gone: nobody would use it,
		// so pass it on to the next in line.
		p.releaseLocked()
	} else {
		q.remove(w)
	}
	p.mu.Unlock()
	p.expired.Add(1)
	waited := time.Since(start)
	return waited, p.ended(ctx, waited, "ended while queued")
}

// ended is the error for a ctx that ended before a slot was taken. It wraps
// both the cause and ctx.Err, so errors.Is matches a custom cause (e.g. the
// budget's) as well as context.DeadlineExceeded or context.Canceled.
func (p *Pool) ended(ctx context.Context, waited time.Duration, what string) error {
	cause, err := context.Cause(ctx), ctx.Err()
	if cause == nil || cause == err {
		return fmt.Errorf("bulkhead %q: context %s (waited %v): %w", p.name, what, waited, err)
	}
	return fmt.Errorf("bulkhead %q: context %s (waited %v): %w (%w)", p.name, what, waited, cause, err)
}

// Release gives back a slot taken by a successful Acquire, handing it
// straight to the longest waiter if there is one.
//
// Calling Release more often than Acquire succeeded is a programming error,
// like unlocking an unlocked mutex: when no slot is held at all, Release
// panics with "bulkhead: Release without a matching Acquire". (An extra
// Release while other calls hold slots cannot be told apart and steals one
// of their slots.)
func (p *Pool) Release() {
	p.mu.Lock()
	if p.inFlight == 0 {
		p.mu.Unlock()
		panic("bulkhead: Release without a matching Acquire (pool " + strconv.Quote(p.name) + " has no slot in use)")
	}
	p.releaseLocked()
	p.mu.Unlock()
}

// releaseLocked frees one slot. With callers waiting the slot changes hands
// without ever being free, so a newcomer cannot take it before them (FIFO)
// and inFlight stays at capacity.
func (p *Pool) releaseLocked() {
	if w := p.queue.popFront(); w != nil {
		w.granted = true
		close(w.ready)
		return
	}
	// Nobody may have the whole pool: the slot goes to the oldest waiter
	// of part of it whose share leaves room, if any.
	for w := p.low.head; w != nil; w = w.next {
		if p.inFlight-1 < w.limit {
			p.low.remove(w)
			w.granted = true
			close(w.ready)
			return
		}
	}
	p.inFlight--
}

// Stats is a snapshot of a pool.
type Stats struct {
	Name     string
	Capacity int
	// InFlight is the slots held now; Waiting is the callers queued now.
	InFlight, Waiting int
	// Acquired counts successful Acquires; Rejected those that failed
	// with ErrFull; Expired those whose ctx ended before they got a slot.
	Acquired, Rejected, Expired uint64
}

// Stats returns a snapshot of p's occupancy and counters.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	s := Stats{Name: p.name, Capacity: p.capacity, InFlight: p.inFlight, Waiting: p.queue.len + p.low.len}
	p.mu.Unlock()
	s.Acquired = p.acquired.Load()
	s.Rejected = p.rejected.Load()
	s.Expired = p.expired.Load()
	return s
}
