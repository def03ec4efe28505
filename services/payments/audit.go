package payments

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/faults"
)

// The audit trail: one entry per completed checkout, kept by payments
// beside the ledger of charges it accounts for — an auditor compares the
// two, and money is what an audit is about. It is the destination of
// orders' fire-forward queue (services/orders/audit.go): nobody waits for
// the write, so the sender retries it with backoff for as long as the
// event lives, and a retry must never make a second entry. Recording an
// order already recorded returns its first entry.

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
	// Record stores e unless its order has an entry, and returns the
	// stored entry.
	Record(ctx context.Context, e AuditEntry) (AuditEntry, error)
	// Count returns how many entries the trail holds.
	Count(ctx context.Context) (int, error)
}

// AuditTrail is the audit use case.
type AuditTrail struct {
	store AuditStore
	work  *faults.Injector
	now   func() time.Time
}

// NewAuditTrail returns the audit trail over store, with work simulating
// the write's own time (faults.PaymentsRecordAudit).
func NewAuditTrail(store AuditStore, work *faults.Injector) (*AuditTrail, error) {
	if store == nil || work == nil {
		return nil, errors.New("payments: the audit trail needs a store and work")
	}
	return &AuditTrail{store: store, work: work, now: time.Now}, nil
}

// Record adds a completed checkout to the trail, once.
func (a *AuditTrail) Record(ctx context.Context, e AuditEntry) (AuditEntry, error) {
	if err := validateAudit(e); err != nil {
		return AuditEntry{}, err
	}
	if err := a.work.Work(ctx, faults.PaymentsRecordAudit); err != nil {
		if errors.Is(err, faults.ErrInjected) {
			return AuditEntry{}, apperr.Wrap(apperr.Unavailable, err, "the audit trail is unavailable")
		}
		return AuditEntry{}, apperr.Wrap(apperr.Timeout, err, "the audit write did not finish in time")
	}
	e.RecordedAt = a.now()
	return a.store.Record(ctx, e)
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

// Record implements AuditStore.
func (s *MemAuditStore) Record(_ context.Context, e AuditEntry) (AuditEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if got, ok := s.byOrder[e.OrderID]; ok {
		return got, nil
	}
	s.byOrder[e.OrderID] = e
	return e, nil
}

// Count implements AuditStore.
func (s *MemAuditStore) Count(context.Context) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byOrder), nil
}
