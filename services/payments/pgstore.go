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

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/postgres"
)

// Schema is the PostgreSQL schema that holds the payments' tables: the
// audit trail. The provider's charges are in ProviderSchema, as a real
// provider's are in its own system.
const (
	Schema         = "payments"
	ProviderSchema = "psp"
)

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

// Record implements Store. The insert either stores c or, when the key
// is taken, does nothing and returns no row; only then is the stored
// charge read. Two records of one key at once: the second insert waits
// for the first to commit, then does nothing.
func (s *PGStore) Record(ctx context.Context, c Charge) (Charge, bool, error) {
	stored, err := scanCharge(s.pool.QueryRow(ctx, `
		INSERT INTO psp.charges (payment_key, order_id, customer, amount_cents, request_id, status, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (payment_key) DO NOTHING
		RETURNING `+chargeColumns,
		c.PaymentKey, c.OrderID, c.Customer, c.AmountCents, c.RequestID, c.Status, c.CreatedAt))
	switch {
	case err == nil:
		return stored, true, nil
	case !postgres.NoRows(err):
		return Charge{}, false, postgres.Error(err, "recording a charge")
	}
	// Charges are never deleted, so the row that won is there to read.
	stored, err = s.GetByKey(ctx, c.PaymentKey)
	return stored, false, err
}

// GetByKey implements Store.
func (s *PGStore) GetByKey(ctx context.Context, key string) (Charge, error) {
	c, err := scanCharge(s.pool.QueryRow(ctx, `SELECT `+chargeColumns+` FROM psp.charges WHERE payment_key = $1`, key))
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
			SELECT count(*) AS n FROM psp.charges
			WHERE order_id <> '' AND status = 'succeeded' AND request_id <> ''
			GROUP BY request_id
		)
		SELECT
			(SELECT count(*) FROM psp.charges WHERE order_id <> ''),
			(SELECT count(*) FROM psp.charges WHERE order_id <> '' AND status = 'succeeded'),
			(SELECT count(*) FROM per_request),
			(SELECT coalesce(sum(n - 1), 0) FROM per_request)`).
		Scan(&st.Charges, &st.Succeeded, &st.RequestIDs, &st.Duplicates)
	if err != nil {
		return Stats{}, postgres.Error(err, "counting charges")
	}
	return st, nil
}
