package shipping

// The PostgreSQL store lives in package shipping, beside the memory store,
// rather than in a postgres/ subpackage: Start (run.go) chooses and builds
// the store, and a subpackage would import shipping for Shipment and Store
// while shipping imported it back for Start — an import cycle. The shared
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

// Schema is the PostgreSQL schema that holds the shipping's tables.
const Schema = "shipping"

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrate brings the shipping's schema up to date (migrations/*.sql).
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
		return nil, fmt.Errorf("shipping: a connection pool is required")
	}
	return &PGStore{pool: pool}, nil
}

const shipmentColumns = `id, order_id, address, items, status`

func scanShipment(row pgx.Row) (Shipment, error) {
	var sh Shipment
	err := row.Scan(&sh.ID, &sh.OrderID, &sh.Address, &sh.Items, &sh.Status)
	return sh, err
}

// Create implements Store. When the order has a shipment already, the
// insert does nothing and returns no row, and the existing one is read.
func (s *PGStore) Create(ctx context.Context, sh Shipment) (Shipment, error) {
	if sh.Items == nil {
		sh.Items = []Item{} // JSON [] rather than null
	}
	stored, err := scanShipment(s.pool.QueryRow(ctx, `
		INSERT INTO shipping.shipments (order_id, address, items, status) VALUES ($1, $2, $3, $4)
		ON CONFLICT (order_id) DO NOTHING
		RETURNING `+shipmentColumns, sh.OrderID, sh.Address, sh.Items, sh.Status))
	switch {
	case err == nil:
		return stored, nil
	case !postgres.NoRows(err):
		return Shipment{}, postgres.Error(err, "booking a shipment")
	}
	// Shipments are never deleted, so the order's is there to read.
	stored, err = scanShipment(s.pool.QueryRow(ctx, `SELECT `+shipmentColumns+` FROM shipping.shipments WHERE order_id = $1`, sh.OrderID))
	if err != nil {
		return Shipment{}, postgres.Error(err, "reading the order's shipment")
	}
	return stored, nil
}

// Get implements Store.
func (s *PGStore) Get(ctx context.Context, id string) (Shipment, error) {
	sh, err := scanShipment(s.pool.QueryRow(ctx, `SELECT `+shipmentColumns+` FROM shipping.shipments WHERE id = $1`, id))
	switch {
	case postgres.NoRows(err):
		return Shipment{}, apperr.New(apperr.NotFound, "unknown shipment %q", id)
	case err != nil:
		return Shipment{}, postgres.Error(err, "reading a shipment")
	}
	return sh, nil
}
