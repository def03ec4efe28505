package payments

// The PostgreSQL store lives in package payments, beside the memory store,
// rather than in a postgres/ subpackage: Start (run.go) chooses and builds
// the store, and a subpackage would import payments for Charge and Store
// while payments imported it back for Start — an import cycle. The shared
// plumbing (pool, migrations, errors) is in internal/postgres.

import (
	"context"
	"embed"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/postgres"
)

// Schema is the PostgreSQL schema that holds the payments' tables.
const Schema = "payments"

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrate brings the payments' schema up to date (migrations/*.sql).
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return postgres.MigrateDir(ctx, pool, Schema, migrationFiles, "migrations")
}

// PGStore is the Store on PostgreSQL.
type PGStore struct {
	pool *pgxpool.Pool
}

var _ Store = (*PGStore)(nil)

// NewPGStore returns a store on pool, whose schema Migrate has brought up
// to date.
func NewPGStore(pool *pgxpool.Pool) (*PGStore, error) {
	if pool == nil {
		return nil, fmt.Errorf("payments: a connection pool is required")
	}
	return &PGStore{pool: pool}, nil
}

const chargeColumns = `id, payment_key, order_id, customer, amount_cents, request_id, status, created_at`

func scanCharge(row pgx.Row) (Charge, error) {
	var c Charge
	err := row.Scan(&c.ID, &c.PaymentKey, &c.OrderID, &c.Customer, &c.AmountCents, &c.RequestID, &c.Status, &c.CreatedAt)
	return c, err
}

// Claim implements Store. The insert either stores c or, when the key is
// taken, does nothing and returns no row; only then is the stored charge
// read. Two claims of one key at once: the second insert waits for the
// first to commit, then does nothing.
func (s *PGStore) Claim(ctx context.Context, c Charge) (Charge, bool, error) {
	stored, err := scanCharge(s.pool.QueryRow(ctx, `
		INSERT INTO payments.charges (payment_key, order_id, customer, amount_cents, request_id, status, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (payment_key) DO NOTHING
		RETURNING `+chargeColumns,
		c.PaymentKey, c.OrderID, c.Customer, c.AmountCents, c.RequestID, c.Status, c.CreatedAt))
	switch {
	case err == nil:
		return stored, true, nil
	case !postgres.NoRows(err):
		return Charge{}, false, postgres.Error(err, "claiming a payment key")
	}
	// Charges are never deleted, so the row that won is there to read.
	stored, err = s.GetByKey(ctx, c.PaymentKey)
	return stored, false, err
}

// Settle implements Store: only a pending charge changes.
func (s *PGStore) Settle(ctx context.Context, key string, status Status) (Charge, error) {
	c, err := scanCharge(s.pool.QueryRow(ctx, `
		UPDATE payments.charges SET status = $2
		WHERE payment_key = $1 AND status = 'pending'
		RETURNING `+chargeColumns, key, status))
	switch {
	case err == nil:
		return c, nil
	case !postgres.NoRows(err):
		return Charge{}, postgres.Error(err, "settling a charge")
	}
	return s.GetByKey(ctx, key) // settled already, or unknown
}

// GetByKey implements Store.
func (s *PGStore) GetByKey(ctx context.Context, key string) (Charge, error) {
	c, err := scanCharge(s.pool.QueryRow(ctx, `SELECT `+chargeColumns+` FROM payments.charges WHERE payment_key = $1`, key))
	switch {
	case postgres.NoRows(err):
		return Charge{}, apperr.New(apperr.NotFound, "no charge under payment key %q", key)
	case err != nil:
		return Charge{}, postgres.Error(err, "reading a charge")
	}
	return c, nil
}

// Stats implements Store. Voided keys (no order) are not charges.
func (s *PGStore) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := s.pool.QueryRow(ctx, `
		WITH per_request AS (
			SELECT count(*) AS n FROM payments.charges
			WHERE order_id <> '' AND status = 'succeeded' AND request_id <> ''
			GROUP BY request_id
		)
		SELECT
			(SELECT count(*) FROM payments.charges WHERE order_id <> ''),
			(SELECT count(*) FROM payments.charges WHERE order_id <> '' AND status = 'succeeded'),
			(SELECT count(*) FROM per_request),
			(SELECT coalesce(sum(n - 1), 0) FROM per_request)`).
		Scan(&st.Charges, &st.Succeeded, &st.RequestIDs, &st.Duplicates)
	if err != nil {
		return Stats{}, postgres.Error(err, "counting charges")
	}
	return st, nil
}

// Pending implements Store.
func (s *PGStore) Pending(ctx context.Context, before time.Time, limit int) ([]Charge, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+chargeColumns+` FROM payments.charges
		WHERE status = 'pending' AND created_at < $1
		ORDER BY created_at LIMIT NULLIF($2, 0)`, before, limit)
	if err != nil {
		return nil, postgres.Error(err, "listing pending charges")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Charge, error) { return scanCharge(r) })
	if err != nil {
		return nil, postgres.Error(err, "listing pending charges")
	}
	return out, nil
}
