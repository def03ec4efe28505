package orders

// The PostgreSQL stores (orders here, idempotency keys in pgkeys.go) live
// in package orders, beside the memory ones, rather than in a postgres/
// subpackage: Start (run.go) chooses and builds them, and a subpackage
// would import orders for Order and Store while orders imported it back
// for Start — an import cycle. The shared plumbing (pool, migrations,
// errors) is in internal/postgres.

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/postgres"
)

// Schema is the PostgreSQL schema that holds the orders' tables.
const Schema = "orders"

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrate brings the orders' schema up to date (migrations/*.sql).
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
		return nil, fmt.Errorf("orders: a connection pool is required")
	}
	return &PGStore{pool: pool}, nil
}

const orderColumns = `id, status, customer, items, address, payment_key, reservation_id, total_cents,
	charge_id, shipment_id, shipment_status, request_id, failure, created_at, updated_at, idempotency_key, stock_held,
	delivery_min_days, delivery_max_days, degraded`

// orderArgs are o's fields in orderColumns' order.
func orderArgs(o Order) []any {
	items := o.Items
	if items == nil {
		items = []Item{} // JSON [] rather than null
	}
	degraded := o.Degraded
	if degraded == nil {
		degraded = []string{} // '{}' rather than NULL
	}
	return []any{o.ID, o.Status, o.Customer, items, o.Address, o.PaymentKey, o.ReservationID, o.TotalCents,
		o.ChargeID, o.ShipmentID, o.ShipmentStatus, o.RequestID, o.Failure, o.CreatedAt, o.UpdatedAt, o.IdempotencyKey, o.StockHeld,
		o.DeliveryEstimate.MinBusinessDays, o.DeliveryEstimate.MaxBusinessDays, degraded}
}

func scanOrder(row pgx.Row) (Order, error) {
	var o Order
	err := row.Scan(&o.ID, &o.Status, &o.Customer, &o.Items, &o.Address, &o.PaymentKey, &o.ReservationID, &o.TotalCents,
		&o.ChargeID, &o.ShipmentID, &o.ShipmentStatus, &o.RequestID, &o.Failure, &o.CreatedAt, &o.UpdatedAt, &o.IdempotencyKey, &o.StockHeld,
		&o.DeliveryEstimate.MinBusinessDays, &o.DeliveryEstimate.MaxBusinessDays, &o.Degraded)
	if len(o.Degraded) == 0 {
		o.Degraded = nil // as the memory store keeps an order with nothing degraded
	}
	return o, err
}

// Create implements Store.
func (s *PGStore) Create(ctx context.Context, o Order) error {
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO orders.orders (`+orderColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
		ON CONFLICT (id) DO NOTHING`, orderArgs(o)...)
	switch {
	case err != nil:
		return postgres.Error(err, "recording an order")
	case tag.RowsAffected() == 0:
		return apperr.New(apperr.Conflict, "order %q exists", o.ID)
	}
	return nil
}

// Update implements Store: o replaces the stored order, whole.
func (s *PGStore) Update(ctx context.Context, o Order) error {
	tag, err := s.pool.Exec(ctx, `
		UPDATE orders.orders SET (`+orderColumns+`) =
			($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
		WHERE id = $1`, orderArgs(o)...)
	switch {
	case err != nil:
		return postgres.Error(err, "updating an order")
	case tag.RowsAffected() == 0:
		return apperr.New(apperr.NotFound, "unknown order %q", o.ID)
	}
	return nil
}

// Get implements Store.
func (s *PGStore) Get(ctx context.Context, id string) (Order, error) {
	o, err := scanOrder(s.pool.QueryRow(ctx, `SELECT `+orderColumns+` FROM orders.orders WHERE id = $1`, id))
	switch {
	case postgres.NoRows(err):
		return Order{}, apperr.New(apperr.NotFound, "unknown order %q", id)
	case err != nil:
		return Order{}, postgres.Error(err, "reading an order")
	}
	return o, nil
}

// List implements Store. A zero UpdatedBefore or Limit does not filter;
// LIMIT NULL is no limit.
func (s *PGStore) List(ctx context.Context, f Filter) ([]Order, error) {
	var before, limit any
	if !f.UpdatedBefore.IsZero() {
		before = f.UpdatedBefore
	}
	if f.Limit > 0 {
		limit = f.Limit
	}
	rows, err := s.pool.Query(ctx, `
		SELECT `+orderColumns+` FROM orders.orders
		WHERE status = $1
		  AND ($2 = '' OR shipment_status = $2)
		  AND ($3::timestamptz IS NULL OR updated_at < $3)
		  AND (NOT $5 OR stock_held)
		ORDER BY updated_at, id
		LIMIT $4`, f.Status, f.ShipmentStatus, before, limit, f.StockHeld)
	if err != nil {
		return nil, postgres.Error(err, "listing orders")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Order, error) { return scanOrder(r) })
	if err != nil {
		return nil, postgres.Error(err, "listing orders")
	}
	return out, nil
}

// ByIdempotencyKey implements Store.
func (s *PGStore) ByIdempotencyKey(ctx context.Context, key string) ([]Order, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+orderColumns+` FROM orders.orders
		WHERE idempotency_key = $1 AND idempotency_key <> ''
		ORDER BY created_at DESC, id`, key)
	if err != nil {
		return nil, postgres.Error(err, "finding the orders of an idempotency key")
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Order, error) { return scanOrder(r) })
	if err != nil {
		return nil, postgres.Error(err, "finding the orders of an idempotency key")
	}
	return out, nil
}
