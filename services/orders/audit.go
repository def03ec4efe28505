package orders

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/telemetry"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// The audit event is the checkout's fire-forward work (graph.go): "move it
// off the request path entirely into a queue with its own lifetime, so it
// never competes for the user's budget".
//
// The rules of the queue, with the Criticality mechanism on:
//
//   - Each confirmed order puts one event on a bounded queue and goes on;
//     putting it there never waits. A full queue drops the event, counted
//     (mercado_audit_events_total{outcome="dropped_queue_full"}) and
//     logged with its order: nothing is lost quietly.
//   - Workers write the events to payments' audit trail, outside any
//     request, in batches: a worker takes the events waiting on the
//     queue, up to AuditSettings.Batch, and writes them in one call
//     (RecordAudits). It never waits for a batch to fill: a lone event
//     is written at once, and events gather only while the workers are
//     busy — under load, when fewer writes matter.
//   - Each event keeps its own fate in a batch: it lives
//     AuditSettings.Lifetime from when it was queued, and no attempt
//     outlives the soonest-ending event of its batch; each attempt has
//     AuditTimeout (the audit dependency's cap). A failed write is tried
//     again after a backoff with full jitter, doubling up to MaxBackoff,
//     with the events that still live; one that outlives its lifetime is
//     dropped, counted and logged, and one the trail refuses is dropped,
//     counted and logged alone while the rest are recorded. The trail
//     keeps one entry per order, so a retry never writes twice.
//   - On shutdown, after the requests in flight have drained, the queue
//     takes no more events and the workers write what is left within the
//     drain timeout; what is still unwritten then is dropped, counted and
//     logged.
//
// Off, the write is made in line under the request's deadline, and its
// failure fails the checkout.

// AuditTimeout bounds each audit write: the audit dependency's cap.
const AuditTimeout = 2 * time.Second

// auditDep is the audit trail's name in the criticality table, its metrics
// and its hop.
const auditDep = "audit"

// MaxAuditBatch is the most events one write may carry: payments' limit
// on a RecordAudits call (payments.MaxAuditBatch).
const MaxAuditBatch = 100

// AuditSettings shape the audit queue.
type AuditSettings struct {
	// Capacity is how many events the queue holds.
	Capacity int
	// Workers write the events, each one batch at a time.
	Workers int
	// Batch is the most events a worker writes in one call, at most
	// MaxAuditBatch.
	Batch int
	// Lifetime is how long an event is tried before it is given up.
	Lifetime time.Duration
	// BaseBackoff and MaxBackoff bound the wait between two attempts.
	BaseBackoff, MaxBackoff time.Duration
}

// DefaultAuditSettings hold a few seconds of the shop's checkouts at its
// highest rate (docs/performance.md) and retry each event for a minute:
// long enough to ride out a restart of payments, short enough that the
// queue does not keep a day of events in memory. A batch may be as large
// as payments takes: the more a write carries, the fewer commits.
func DefaultAuditSettings() AuditSettings {
	return AuditSettings{Capacity: 10_000, Workers: 4, Batch: MaxAuditBatch, Lifetime: time.Minute,
		BaseBackoff: 100 * time.Millisecond, MaxBackoff: 5 * time.Second}
}

func (a AuditSettings) orDefaults() AuditSettings {
	d := DefaultAuditSettings()
	if a.Capacity <= 0 {
		a.Capacity = d.Capacity
	}
	if a.Workers <= 0 {
		a.Workers = d.Workers
	}
	if a.Batch <= 0 {
		a.Batch = d.Batch
	}
	a.Batch = min(a.Batch, MaxAuditBatch)
	if a.Lifetime <= 0 {
		a.Lifetime = d.Lifetime
	}
	if a.BaseBackoff <= 0 {
		a.BaseBackoff = d.BaseBackoff
	}
	if a.MaxBackoff < a.BaseBackoff {
		a.MaxBackoff = max(d.MaxBackoff, a.BaseBackoff)
	}
	return a
}

// auditQueue is the bounded queue and its workers.
type auditQueue struct {
	dst      Audit
	set      AuditSettings
	settings *mode.Live
	metrics  *telemetry.Metrics
	log      *slog.Logger
	now      func() time.Time

	// halt ends every write when the drain timeout is up.
	halted context.Context
	halt   context.CancelFunc

	mu      sync.Mutex // guards closed and sending on events
	closed  bool
	events  chan queuedEvent
	workers sync.WaitGroup
	started bool
	// held counts the events the workers have taken and not yet settled:
	// recorded or dropped.
	held atomic.Int64
}

type queuedEvent struct {
	e       AuditEvent
	expires time.Time
	// trace puts the checkout's span on the write's context: the write
	// shows in the checkout's trace, though it happens after the answer.
	trace func(context.Context) context.Context
}

func newAuditQueue(dst Audit, set AuditSettings, settings *mode.Live, m *telemetry.Metrics, log *slog.Logger, now func() time.Time) *auditQueue {
	set = set.orDefaults()
	halted, halt := context.WithCancel(context.Background())
	q := &auditQueue{dst: dst, set: set, settings: settings, metrics: m, log: log, now: now,
		halted: halted, halt: halt, events: make(chan queuedEvent, set.Capacity)}
	m.ObserveAuditQueue(func() int { return len(q.events) })
	return q
}

// enqueue puts e on the queue, never waiting.
func (q *auditQueue) enqueue(ctx context.Context, e AuditEvent) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		q.metrics.AuditEvent(ctx, telemetry.AuditDroppedShutdown)
		q.log.Error("audit event dropped: the service is stopping", "order_id", e.OrderID)
		return
	}
	select {
	case q.events <- queuedEvent{e: e, expires: q.now().Add(q.set.Lifetime), trace: telemetry.KeepTrace(ctx)}:
		q.metrics.AuditEvent(ctx, telemetry.AuditQueued)
	default:
		q.metrics.AuditEvent(ctx, telemetry.AuditDroppedFull)
		q.log.Error("audit event dropped: the queue is full", "order_id", e.OrderID, "capacity", q.set.Capacity)
	}
}

// start runs the workers.
func (q *auditQueue) start() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.started || q.closed {
		return
	}
	q.started = true
	for range q.set.Workers {
		q.workers.Go(func() {
			for {
				batch, ok := q.take()
				if !ok {
					return
				}
				q.deliver(batch)
			}
		})
	}
}

// stop takes no more events and lets the workers write what is queued for
// up to timeout; then it ends every write and drops what is left, counted
// and logged.
func (q *auditQueue) stop(timeout time.Duration) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.closed = true
	close(q.events)
	started := q.started
	q.mu.Unlock()
	if !started {
		q.halt()
		q.dropRest()
		return
	}
	done := make(chan struct{})
	go func() {
		q.workers.Wait()
		close(done)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		q.halt()
		return
	case <-t.C:
	}
	// What is unwritten: the events still queued and those the workers
	// hold, being written or waiting to be tried again.
	left := len(q.events) + int(q.held.Load())
	q.halt()
	<-done
	q.log.Error("audit queue: the drain timeout ended before every event was written",
		"drain_timeout", timeout, "events_left", left)
}

// dropRest counts the events of a queue whose workers never ran.
func (q *auditQueue) dropRest() {
	n := 0
	for range q.events {
		q.metrics.AuditEvent(context.Background(), telemetry.AuditDroppedShutdown)
		n++
	}
	if n > 0 {
		q.log.Error("audit queue: events dropped at shutdown", "events", n)
	}
}

// take waits for an event, then takes those waiting behind it, up to the
// batch's size, without waiting for more; false when the queue is closed
// and empty.
func (q *auditQueue) take() ([]queuedEvent, bool) {
	ev, ok := <-q.events
	if !ok {
		return nil, false
	}
	batch := []queuedEvent{ev}
more:
	for len(batch) < q.set.Batch {
		select {
		case ev, ok := <-q.events:
			if !ok {
				break more
			}
			batch = append(batch, ev)
		default:
			break more
		}
	}
	q.held.Add(int64(len(batch)))
	return batch, true
}

// deliver writes a batch of events in one call, and tries again, with
// backoff, the ones whose write failed, for as long as each lives.
func (q *auditQueue) deliver(batch []queuedEvent) {
	// No request's deadline, but the events' own lifetimes; a snapshot of
	// the mode per batch, as a worker's unit of work takes; and the
	// background class: nobody waits on the write, so under pressure
	// payments sheds it before the checkouts' own calls. The write shows
	// in the trace of its first event's checkout.
	base, _ := q.settings.Snapshot(deadline.WithClass(batch[0].trace(q.halted), deadline.Background))
	pending := batch
	for attempt := 0; ; attempt++ {
		if q.halted.Err() != nil {
			q.count(base, pending, telemetry.AuditDroppedShutdown)
			return
		}
		var err error
		if pending, err = q.write(base, pending); len(pending) == 0 {
			return
		}
		wait := backoff(attempt, q.set.BaseBackoff, q.set.MaxBackoff)
		if pending = q.expire(base, pending, q.now().Add(wait), attempt, err); len(pending) == 0 {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-q.halted.Done():
			t.Stop()
			q.count(base, pending, telemetry.AuditDroppedShutdown)
			return
		}
		// One write tried again, however many events it carries.
		q.metrics.AuditRetry(base)
	}
}

// write makes one attempt at pending, within the lifetime its
// soonest-ending event has left, and settles each event the answer
// settles: recorded, or refused for good (counted and logged). It returns
// the events to try again and the error that failed them.
func (q *auditQueue) write(base context.Context, pending []queuedEvent) ([]queuedEvent, error) {
	ends := pending[0].expires
	events := make([]AuditEvent, len(pending))
	for i, ev := range pending {
		events[i] = ev.e
		if ev.expires.Before(ends) {
			ends = ev.expires
		}
	}
	ctx, cancel := context.WithDeadline(base, ends)
	refused, err := q.dst.RecordBatch(ctx, events)
	cancel()
	if err == nil && len(refused) != len(pending) {
		err = fmt.Errorf("the audit trail answered %d results for %d events", len(refused), len(pending))
	}
	if err != nil {
		if !permanent(err) {
			return pending, err
		}
		// The write itself was refused: no retry can change that.
		refused = make([]error, len(pending))
		for i := range refused {
			refused[i] = err
		}
	}
	var again []queuedEvent
	var againErr error
	for i, ev := range pending {
		switch e := refused[i]; {
		case e == nil:
			q.settle(base, ev, telemetry.AuditRecorded)
		case permanent(e):
			q.settle(base, ev, telemetry.AuditDroppedRejected)
			q.log.Error("audit event dropped: the trail refused it", "order_id", ev.e.OrderID, "err", e)
		default:
			again, againErr = append(again, ev), e
		}
	}
	return again, againErr
}

// expire drops, counted and logged, the events of pending that would
// outlive their lifetime before the next attempt, made at next; it
// returns the others.
func (q *auditQueue) expire(ctx context.Context, pending []queuedEvent, next time.Time, attempt int, err error) []queuedEvent {
	var live []queuedEvent
	for _, ev := range pending {
		if !next.After(ev.expires) {
			live = append(live, ev)
			continue
		}
		q.settle(ctx, ev, telemetry.AuditDroppedExpired)
		q.log.Error("audit event dropped: its lifetime ran out", "order_id", ev.e.OrderID,
			"attempts", attempt+1, "lifetime", q.set.Lifetime, "err", err)
	}
	return live
}

// count settles every event of evs as outcome.
func (q *auditQueue) count(ctx context.Context, evs []queuedEvent, outcome string) {
	for _, ev := range evs {
		q.settle(ctx, ev, outcome)
	}
}

// settle counts what became of a held event, under its checkout's trace,
// and lets it go.
func (q *auditQueue) settle(ctx context.Context, ev queuedEvent, outcome string) {
	q.metrics.AuditEvent(ev.trace(ctx), outcome)
	q.held.Add(-1)
}

// permanent reports a refusal no retry can change: the event itself is
// wrong.
func permanent(err error) bool {
	switch apperr.GRPCCode(err) {
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange, codes.Unimplemented, codes.PermissionDenied, codes.Unauthenticated:
		return true
	}
	return false
}

// backoff is the wait before attempt+1: full jitter over base·2^attempt,
// at most max.
func backoff(attempt int, base, maxWait time.Duration) time.Duration {
	ceiling := base << min(attempt, 20)
	if ceiling <= 0 || ceiling > maxWait {
		ceiling = maxWait
	}
	return time.Duration(rand.Int64N(int64(ceiling) + 1))
}

// fireForward hands a confirmed order's audit event to the queue, or,
// with criticality off, writes it in line: then its failure is the
// checkout's.
func (s *Service) fireForward(ctx context.Context, o Order) error {
	e := AuditEvent{OrderID: o.ID, Customer: o.Customer, TotalCents: o.TotalCents, ChargeID: o.ChargeID,
		RequestID: o.RequestID, ConfirmedAt: s.now()}
	if treats(s.settings.For(ctx).Mechanisms, auditDep) == FireForward {
		s.auditQ.enqueue(ctx, e)
		return nil
	}
	if err := s.audit.Record(ctx, e); err != nil {
		s.metrics.AuditEvent(ctx, telemetry.AuditFailedInLine)
		return apperr.FromGRPC(err, "recording the audit event")
	}
	s.metrics.AuditEvent(ctx, telemetry.AuditInLine)
	return nil
}
