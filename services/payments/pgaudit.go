package payments

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercado-lab/mercado/internal/postgres"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// PGAuditStore is the AuditStore on PostgreSQL.
type PGAuditStore struct {
	pool *pgxpool.Pool
}

var _ AuditStore = (*PGAuditStore)(nil)

// NewPGAuditStore returns an audit store on pool, whose schema Migrate
// has brought up to date.
func NewPGAuditStore(pool *pgxpool.Pool) (*PGAuditStore, error) {
	if pool == nil {
		return nil, fmt.Errorf("payments: a connection pool is required")
	}
	return &PGAuditStore{pool: pool}, nil
}

// Record implements AuditStore: the insert stores e or, when the order
// has an entry, does nothing and returns no row; only then is the stored
// entry read.
//
// An entry orders' audit queue sends (the background class) is deferred
// work, counted so (postgres.Deferred); one written in line, with the
// Criticality mechanism off, is the checkout's own.
func (s *PGAuditStore) Record(ctx context.Context, e AuditEntry) (AuditEntry, error) {
	if deadline.ClassOf(ctx) == deadline.Background {
		ctx = postgres.Deferred(ctx)
	}
	const cols = `order_id, customer, total_cents, charge_id, request_id, confirmed_at, recorded_at`
	scan := func(row interface{ Scan(...any) error }) (AuditEntry, error) {
		var out AuditEntry
		err := row.Scan(&out.OrderID, &out.Customer, &out.TotalCents, &out.ChargeID, &out.RequestID, &out.ConfirmedAt, &out.RecordedAt)
		return out, err
	}
	got, err := scan(s.pool.QueryRow(ctx, `
		INSERT INTO payments.audit_entries (`+cols+`) VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (order_id) DO NOTHING
		RETURNING `+cols, e.OrderID, e.Customer, e.TotalCents, e.ChargeID, e.RequestID, e.ConfirmedAt, e.RecordedAt))
	if postgres.NoRows(err) {
		got, err = scan(s.pool.QueryRow(ctx, `SELECT `+cols+` FROM payments.audit_entries WHERE order_id = $1`, e.OrderID))
	}
	if err != nil {
		return AuditEntry{}, postgres.Error(err, "recording an audit entry")
	}
	return got, nil
}

// Count implements AuditStore.
func (s *PGAuditStore) Count(ctx context.Context) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM payments.audit_entries`).Scan(&n); err != nil {
		return 0, postgres.Error(err, "counting audit entries")
	}
	return n, nil
}
