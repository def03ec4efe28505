package payments

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/sim"
)

// The audit trail: one entry per completed checkout, kept by payments
// beside the ledger of charges it accounts for — an auditor compares the
// two, and money is what an audit is about. It is the destination of
// orders' fire-forward queue (services/orders/audit.go): nobody waits for
// the write, so the sender retries it with backoff for as long as the
// event lives, and a retry must never make a second entry. Recording an
// order already recorded returns its first entry.
//
// The queue sends its events in batches (RecordBatch), up to
// MaxAuditBatch at a time: a batch is one write — one statement on
// PostgreSQL, one commit — however many entries it carries. Each entry
// keeps its own outcome: one that is wrong is refused alone, the others
// are recorded; an order sent twice in a batch, or already recorded,
// gets its first entry back.

// AuditEntry is one completed checkout in the audit trail.
type AuditEntry struct {
	OrderID    string
	Customer   string
	TotalCents int64
	ChargeID   string
	RequestID  string
	// ConfirmedAt is when orders confirmed the order; RecordedAt when the
	// trail first recorded it.
	ConfirmedAt time.Time
	RecordedAt  time.Time
}

// AuditStore keeps the audit trail, at most one entry per order.
type AuditStore interface {
	// Record stores, in one write, each of entries whose order has no
	// entry yet (the first of them, when entries name an order more than
	// once), and returns the stored entry of each, in entries' order.
	// Either every entry is stored or, with an error, none is.
	Record(ctx context.Context, entries []AuditEntry) ([]AuditEntry, error)
	// Count returns how many entries the trail holds.
	Count(ctx context.Context) (int, error)
}

// AuditTrail is the audit use case.
type AuditTrail struct {
	store AuditStore
	work  sim.Simulator
	now   func() time.Time
}

// NewAuditTrail returns the audit trail over store, with work simulating
// the write's own time (sim.PaymentsRecordAudit).
func NewAuditTrail(store AuditStore, work sim.Simulator) (*AuditTrail, error) {
	if store == nil || work == nil {
		return nil, errors.New("payments: the audit trail needs a store and work")
	}
	return &AuditTrail{store: store, work: work, now: time.Now}, nil
}

// MaxAuditBatch is the most entries one RecordBatch takes: a bound on the
// statement a batch makes and on the time its write may hold a
// connection.
const MaxAuditBatch = 100

// AuditResult is what became of one entry of a batch: the entry the trail
// holds for its order, or Err when the trail refused it.
type AuditResult struct {
	Entry AuditEntry
	Err   error
}

// Record adds a completed checkout to the trail, once: a batch of one.
func (a *AuditTrail) Record(ctx context.Context, e AuditEntry) (AuditEntry, error) {
	rs, err := a.RecordBatch(ctx, []AuditEntry{e})
	if err != nil {
		return AuditEntry{}, err
	}
	return rs[0].Entry, rs[0].Err
}

// RecordBatch adds completed checkouts to the trail, each once, in one
// write, and answers one result per entry, in entries' order. An entry
// that is wrong is refused (Invalid) and the others still recorded; a
// batch that is empty or holds more than MaxAuditBatch entries is refused
// whole, and so is every entry when the write fails.
func (a *AuditTrail) RecordBatch(ctx context.Context, entries []AuditEntry) ([]AuditResult, error) {
	switch {
	case len(entries) == 0:
		return nil, apperr.New(apperr.Invalid, "events are required: a batch holds 1 to %d", MaxAuditBatch)
	case len(entries) > MaxAuditBatch:
		return nil, apperr.New(apperr.Invalid, "a batch holds at most %d events, got %d", MaxAuditBatch, len(entries))
	}
	results := make([]AuditResult, len(entries))
	var valid []AuditEntry
	var at []int // at[j] is valid[j]'s place in entries
	for i, e := range entries {
		if err := validateAudit(e); err != nil {
			results[i].Err = err
			continue
		}
		valid = append(valid, e)
		at = append(at, i)
	}
	if len(valid) == 0 {
		return results, nil
	}
	// One write, however many entries: the simulated work is the batch's.
	if err := a.work.Work(ctx, sim.PaymentsRecordAudit); err != nil {
		if errors.Is(err, sim.ErrInjected) {
			return nil, apperr.Wrap(apperr.Unavailable, err, "the audit trail is unavailable")
		}
		return nil, apperr.Wrap(apperr.Timeout, err, "the audit write did not finish in time")
	}
	now := a.now()
	for j := range valid {
		valid[j].RecordedAt = now
	}
	stored, err := a.store.Record(ctx, valid)
	if err != nil {
		return nil, err
	}
	for j, e := range stored {
		results[at[j]].Entry = e
	}
	return results, nil
}

// Count returns how many checkouts the trail holds.
func (a *AuditTrail) Count(ctx context.Context) (int, error) { return a.store.Count(ctx) }

func validateAudit(e AuditEntry) error {
	switch {
	case e.OrderID == "":
		return apperr.New(apperr.Invalid, "order_id is required")
	case len(e.OrderID) > MaxOrderIDBytes:
		return apperr.New(apperr.Invalid, "order_id is longer than %d characters", MaxOrderIDBytes)
	case len(e.Customer) > MaxCustomerBytes:
		return apperr.New(apperr.Invalid, "customer is longer than %d bytes", MaxCustomerBytes)
	case len(e.ChargeID) > MaxKeyBytes:
		return apperr.New(apperr.Invalid, "charge_id is longer than %d characters", MaxKeyBytes)
	case len(e.RequestID) > MaxKeyBytes:
		return apperr.New(apperr.Invalid, "request_id is longer than %d characters", MaxKeyBytes)
	case e.TotalCents < 0:
		return apperr.New(apperr.Invalid, "total_cents must not be negative, got %d", e.TotalCents)
	case e.ConfirmedAt.IsZero():
		return apperr.New(apperr.Invalid, "confirmed_unix_ms is required")
	}
	return nil
}

// MemAuditStore is the in-memory AuditStore of the embedded default.
type MemAuditStore struct {
	mu      sync.Mutex
	byOrder map[string]AuditEntry
}

var _ AuditStore = (*MemAuditStore)(nil)

// NewMemAuditStore returns an empty trail.
func NewMemAuditStore() *MemAuditStore {
	return &MemAuditStore{byOrder: map[string]AuditEntry{}}
}

// Record implements AuditStore: the whole batch under one lock.
func (s *MemAuditStore) Record(_ context.Context, entries []AuditEntry) ([]AuditEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]AuditEntry, len(entries))
	for i, e := range entries {
		if got, ok := s.byOrder[e.OrderID]; ok {
			out[i] = got
			continue
		}
		s.byOrder[e.OrderID] = e
		out[i] = e
	}
	return out, nil
}

// Count implements AuditStore.
func (s *MemAuditStore) Count(context.Context) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byOrder), nil
}
