package payments

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

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

// auditCols are an entry's columns, in the order collect scans them.
const auditCols = `order_id, customer, total_cents, charge_id, request_id, confirmed_at, recorded_at`

// Record implements AuditStore in one statement: the batch goes to the
// server as one array per column, which unnest turns back into rows (one
// statement and one plan whatever the batch's size, where a VALUES list
// would make a statement per size). The insert stores the entries whose
// order has none and returns them; only when some order already had an
// entry is it read, in a second statement — it sees the entry a
// concurrent write committed, which the insert waited for.
//
// Entries that orders' audit queue sends (the background class) are
// deferred work, counted so (postgres.Deferred); one written in line,
// with the Criticality mechanism off, is the checkout's own.
func (s *PGAuditStore) Record(ctx context.Context, entries []AuditEntry) ([]AuditEntry, error) {
	if deadline.ClassOf(ctx) == deadline.Background {
		ctx = postgres.Deferred(ctx)
	}
	// One row per order, the first entry of each, so the insert never
	// meets its own row twice; and in the order of their keys, so two
	// batches that share orders take their locks in one order and never
	// wait on each other in a circle.
	seen := make(map[string]bool, len(entries))
	var rows []AuditEntry
	for _, e := range entries {
		if !seen[e.OrderID] {
			seen[e.OrderID] = true
			rows = append(rows, e)
		}
	}
	slices.SortFunc(rows, func(a, b AuditEntry) int { return strings.Compare(a.OrderID, b.OrderID) })
	var orderIDs, customers, chargeIDs, requestIDs []string
	var totals []int64
	var confirmed, recorded []time.Time
	for _, e := range rows {
		orderIDs, customers, chargeIDs, requestIDs = append(orderIDs, e.OrderID), append(customers, e.Customer), append(chargeIDs, e.ChargeID), append(requestIDs, e.RequestID)
		totals = append(totals, e.TotalCents)
		confirmed, recorded = append(confirmed, e.ConfirmedAt), append(recorded, e.RecordedAt)
	}
	stored := make(map[string]AuditEntry, len(orderIDs))
	if err := s.collect(ctx, stored, `
		INSERT INTO payments.audit_entries (`+auditCols+`)
		SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::timestamptz[], $7::timestamptz[])
		ON CONFLICT (order_id) DO NOTHING
		RETURNING `+auditCols, orderIDs, customers, totals, chargeIDs, requestIDs, confirmed, recorded); err != nil {
		return nil, postgres.Error(err, "recording audit entries")
	}
	var had []string
	for _, id := range orderIDs {
		if _, ok := stored[id]; !ok {
			had = append(had, id)
		}
	}
	if len(had) > 0 {
		if err := s.collect(ctx, stored, `SELECT `+auditCols+` FROM payments.audit_entries WHERE order_id = ANY($1::text[])`, had); err != nil {
			return nil, postgres.Error(err, "reading recorded audit entries")
		}
	}
	out := make([]AuditEntry, len(entries))
	for i, e := range entries {
		got, ok := stored[e.OrderID]
		if !ok {
			return nil, postgres.Error(fmt.Errorf("order %q has no audit entry after its insert", e.OrderID), "recording audit entries")
		}
		out[i] = got
	}
	return out, nil
}

// collect runs a query that returns entries and puts each in into, by its
// order.
func (s *PGAuditStore) collect(ctx context.Context, into map[string]AuditEntry, sql string, args ...any) error {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var e AuditEntry
		if err := rows.Scan(&e.OrderID, &e.Customer, &e.TotalCents, &e.ChargeID, &e.RequestID, &e.ConfirmedAt, &e.RecordedAt); err != nil {
			return err
		}
		into[e.OrderID] = e
	}
	return rows.Err()
}

// Count implements AuditStore.
func (s *PGAuditStore) Count(ctx context.Context) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM payments.audit_entries`).Scan(&n); err != nil {
		return 0, postgres.Error(err, "counting audit entries")
	}
	return n, nil
}
