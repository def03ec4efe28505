package catalog

// The PostgreSQL store lives in package catalog, beside the memory store,
// rather than in a postgres/ subpackage: Start (run.go) chooses and builds
// the store, and a subpackage would import catalog for Product and Store
// while catalog imported it back for Start — an import cycle. The shared
// plumbing (pool, migrations, errors) is in internal/postgres.

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/postgres"
)

// Schema is the PostgreSQL schema that holds the catalog's tables.
const Schema = "catalog"

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrate brings the catalog's schema up to date (migrations/*.sql).
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
		return nil, fmt.Errorf("catalog: a connection pool is required")
	}
	return &PGStore{pool: pool}, nil
}

// Seed adds the products not in the store yet. Those already there keep
// their price and stock, so a restart never refills the shop.
func (s *PGStore) Seed(ctx context.Context, products []Product) error {
	var skus, names []string
	var prices, stocks []int64
	for _, p := range products {
		skus, names = append(skus, p.SKU), append(names, p.Name)
		prices, stocks = append(prices, p.PriceCents), append(stocks, p.Stock)
	}
	_, err := s.pool.Exec(ctx, `
		INSERT INTO catalog.products (sku, name, price_cents, stock)
		SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[])
		ON CONFLICT (sku) DO NOTHING`, skus, names, prices, stocks)
	return postgres.Error(err, "seeding the catalogue")
}

// List implements Store. SKUs compare byte by byte (COLLATE "C"), as
// they do in Go, whatever the database's own collation.
func (s *PGStore) List(ctx context.Context, after string, limit int) ([]Product, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT sku, name, price_cents, stock FROM catalog.products
		WHERE sku COLLATE "C" > $1 ORDER BY sku COLLATE "C" LIMIT $2`, after, limit)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Product])
	if err != nil {
		return nil, postgres.Error(err, "listing products")
	}
	return out, nil
}

// Get implements Store.
func (s *PGStore) Get(ctx context.Context, sku string) (Product, error) {
	var p Product
	err := s.pool.QueryRow(ctx, `SELECT sku, name, price_cents, stock FROM catalog.products WHERE sku = $1`, sku).
		Scan(&p.SKU, &p.Name, &p.PriceCents, &p.Stock)
	switch {
	case postgres.NoRows(err):
		return Product{}, apperr.New(apperr.NotFound, "unknown sku %q", sku)
	case err != nil:
		return Product{}, postgres.Error(err, "reading a product")
	}
	return p, nil
}

// Reserve implements Store, in one transaction: all or nothing. locked
// runs once the transaction holds the products' row locks and has taken
// their stock, before it commits; an error from it rolls everything back.
// Its wait in line — for a connection, then for the locks — is bounded
// by linePatience.
func (s *PGStore) Reserve(ctx context.Context, orderID string, lines []Line, locked func(context.Context) error) (Reservation, error) {
	start := time.Now()
	wait, bounded := linePatience(ctx)
	acquireCtx := ctx
	if bounded {
		var cancel context.CancelFunc
		acquireCtx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	conn, err := s.pool.Acquire(acquireCtx)
	switch {
	case err != nil && ctx.Err() == nil && acquireCtx.Err() != nil:
		return Reservation{}, errInDemand("a connection to the store", wait)
	case err != nil:
		return Reservation{}, postgres.Error(err, "reserving stock")
	}
	defer conn.Release()

	var r Reservation
	err = postgres.InTx(ctx, conn, func(tx pgx.Tx) (err error) {
		left := time.Duration(0) // no bound
		if bounded {
			left = max(wait-time.Since(start), time.Millisecond)
		}
		var took bool
		r, took, err = reserve(ctx, tx, orderID, lines, left)
		switch {
		case errors.Is(err, errLockWait):
			return errInDemand(productsOf(lines), wait)
		case err != nil || !took || locked == nil:
			return err
		}
		return locked(ctx)
	})
	return r, err
}

// productsOf names the products of lines in a message: the one, quoted,
// or "one of the order's products".
func productsOf(lines []Line) string {
	for _, l := range lines[1:] {
		if l.SKU != lines[0].SKU {
			return "one of the order's products"
		}
	}
	return strconv.Quote(lines[0].SKU)
}

// errLockWait is reserve's error when the products' locks were not free
// within the wait it was given.
var errLockWait = errors.New("the products' locks were not free in time")

// reserve takes the stock of lines for the order in tx, waiting at most
// lockWait (0: as long as it takes) for the products' locks; took is
// false when the order had its reservation already, which r then is.
func reserve(ctx context.Context, tx pgx.Tx, orderID string, lines []Line, lockWait time.Duration) (r Reservation, took bool, err error) {
	// 1. Take the order's one reservation. A second Reserve for the same
	// order, running at the same time, waits on the unique index until
	// this transaction ends; then it finds this reservation and returns
	// it, or — if this one rolled back — takes its own.
	r = Reservation{OrderID: orderID}
	err = tx.QueryRow(ctx, `
		INSERT INTO catalog.reservations (order_id) VALUES ($1)
		ON CONFLICT (order_id) DO NOTHING RETURNING id`, orderID).Scan(&r.ID)
	if postgres.NoRows(err) {
		r, err = loadReservation(ctx, tx, orderID)
		return r, false, err
	}
	if err != nil {
		return Reservation{}, false, postgres.Error(err, "reserving stock")
	}

	// 2. Read the products, without locking them yet: their prices (no
	// price changes while the shop serves), and their stock, to refuse an
	// order that cannot be met before anything is written. The stock is
	// checked again under the lock in 4.
	want := map[string]int64{}
	for _, l := range lines {
		want[l.SKU] += l.Qty
	}
	skus := slices.Sorted(maps.Keys(want))
	rows, _ := tx.Query(ctx, productsQuery, skus)
	products, err := collectProducts(rows)
	if err != nil {
		return Reservation{}, false, postgres.Error(err, "reading products")
	}

	// 3. Check every line before changing anything, in the lines' order,
	// as the memory store does.
	if err := checkLines(lines, products); err != nil {
		return Reservation{}, false, err
	}

	// 4. Lock the products, in SKU order (two orders that lock the same
	// products lock them in the same order, so they never deadlock), record
	// the lines at those prices and take the stock, all in one batch, one
	// round trip. Every checkout of a popular product waits for its row
	// lock, held from here until the commit: that round trip and the
	// commit's wait for the disk.
	qtys := make([]int64, len(skus))
	for i, sku := range skus {
		qtys[i] = want[sku]
	}
	var lineSKUs []string
	var lineQtys, linePrices []int64
	for _, l := range lines {
		price := products[l.SKU].PriceCents
		r.Lines = append(r.Lines, PricedLine{Line: l, UnitPriceCents: price})
		r.TotalCents += l.Qty * price
		lineSKUs, lineQtys, linePrices = append(lineSKUs, l.SKU), append(lineQtys, l.Qty), append(linePrices, price)
	}
	// The locking statement is bounded by lockWait, through
	// statement_timeout (lock_timeout would bound each of the waits a row
	// lock takes — its tuple's lock, then its holder's transaction — apart,
	// and the third in line waits through two); after it, the budget's
	// bound, as InTx set it, is back for the rest. The lines' foreign key
	// checks come after it: on a product another reservation is updating
	// they would wait in line too.
	var writes pgx.Batch
	bounded := lockWait > 0
	if bounded {
		writes.Queue(`SELECT set_config('statement_timeout', $1, true)`, millis(lockWait))
	}
	// FOR NO KEY UPDATE, the lock the stock's update takes itself: it lets
	// other orders' foreign key checks (key-share locks) on the products be,
	// where FOR UPDATE would make them wait.
	writes.Queue(productsQuery+` FOR NO KEY UPDATE`, skus)
	if bounded {
		left := time.Millisecond
		if d, ok := ctx.Deadline(); ok {
			left = max(time.Until(d), left)
		}
		writes.Queue(`SELECT set_config('statement_timeout', $1, true)`, millis(left))
	}
	writes.Queue(`
		INSERT INTO catalog.reservation_lines (reservation_id, line_no, sku, qty, unit_price_cents)
		SELECT $1, l.n, l.sku, l.qty, l.price
		FROM unnest($2::text[], $3::bigint[], $4::bigint[]) WITH ORDINALITY AS l(sku, qty, price, n)`,
		r.ID, lineSKUs, lineQtys, linePrices)
	writes.Queue(`UPDATE catalog.reservations SET total_cents = $2 WHERE id = $1`, r.ID, r.TotalCents)
	// Only where the stock is still enough: another order may have taken
	// it since 2, and an order refused below must not trip the stock's
	// CHECK before it is.
	writes.Queue(`
		UPDATE catalog.products p SET stock = p.stock - w.qty
		FROM unnest($1::text[], $2::bigint[]) AS w(sku, qty) WHERE p.sku = w.sku AND p.stock >= w.qty`, skus, qtys)
	results := tx.SendBatch(ctx, &writes)
	defer results.Close()
	if bounded {
		if _, err := results.Exec(); err != nil {
			return Reservation{}, false, postgres.Error(err, "bounding the wait for the products' locks")
		}
	}
	rows, _ = results.Query()
	locked, err := collectProducts(rows)
	switch {
	case err != nil && bounded && postgres.QueryCanceled(err) && ctx.Err() == nil:
		return Reservation{}, false, errLockWait
	case err != nil:
		return Reservation{}, false, postgres.Error(err, "locking products")
	}
	// Another order may have taken some of the stock since 2: refuse as 3
	// would have, with the stock as it is now, under the lock. The caller
	// rolls back what the batch wrote.
	if err := checkLines(lines, locked); err != nil {
		return Reservation{}, false, err
	}
	if bounded {
		if _, err := results.Exec(); err != nil {
			return Reservation{}, false, postgres.Error(err, "bounding the rest by the budget")
		}
	}
	if _, err := results.Exec(); err != nil {
		return Reservation{}, false, postgres.Error(err, "recording a reservation's lines")
	}
	if _, err := results.Exec(); err != nil {
		return Reservation{}, false, postgres.Error(err, "recording a reservation's total")
	}
	if _, err := results.Exec(); err != nil {
		return Reservation{}, false, postgres.Error(err, "taking stock")
	}
	if err := results.Close(); err != nil {
		return Reservation{}, false, postgres.Error(err, "taking stock")
	}
	return r, true, nil
}

// millis is d as statement_timeout takes it: whole milliseconds, rounded
// up (0 would mean no timeout at all).
func millis(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Millisecond-1)/time.Millisecond), 10)
}

// productsQuery reads products by SKU, in SKU order.
const productsQuery = `SELECT sku, name, price_cents, stock FROM catalog.products WHERE sku = ANY($1) ORDER BY sku`

// collectProducts collects rows of productsQuery, by SKU.
func collectProducts(rows pgx.Rows) (map[string]Product, error) {
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Product])
	if err != nil {
		return nil, err
	}
	products := make(map[string]Product, len(list))
	for _, p := range list {
		products[p.SKU] = p
	}
	return products, nil
}

// checkLines refuses lines that products cannot meet: an unknown SKU, or
// more than its stock (counting the order's earlier lines of it).
func checkLines(lines []Line, products map[string]Product) error {
	asked := map[string]int64{}
	for _, l := range lines {
		p, ok := products[l.SKU]
		if !ok {
			return apperr.New(apperr.NotFound, "unknown sku %q", l.SKU)
		}
		asked[l.SKU] += l.Qty
		if asked[l.SKU] > p.Stock {
			return apperr.New(apperr.Conflict, "out of stock: %q has %d left", l.SKU, p.Stock)
		}
	}
	return nil
}

// loadReservation returns the reservation of an order.
func loadReservation(ctx context.Context, q pgx.Tx, orderID string) (Reservation, error) {
	r := Reservation{OrderID: orderID}
	if err := q.QueryRow(ctx, `SELECT id, total_cents FROM catalog.reservations WHERE order_id = $1`, orderID).
		Scan(&r.ID, &r.TotalCents); err != nil {
		return Reservation{}, postgres.Error(err, "reading a reservation")
	}
	rows, _ := q.Query(ctx, `
		SELECT sku, qty, unit_price_cents FROM catalog.reservation_lines
		WHERE reservation_id = $1 ORDER BY line_no`, r.ID)
	var l PricedLine
	_, err := pgx.ForEachRow(rows, []any{&l.SKU, &l.Qty, &l.UnitPriceCents}, func() error {
		r.Lines = append(r.Lines, l)
		return nil
	})
	if err != nil {
		return Reservation{}, postgres.Error(err, "reading a reservation's lines")
	}
	return r, nil
}

// Release implements Store, in one transaction: the stock comes back
// once, however many times it is called.
func (s *PGStore) Release(ctx context.Context, reservationID string) error {
	return postgres.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		// The reservation's row lock makes a concurrent Release wait, then
		// see released = true.
		var released bool
		err := tx.QueryRow(ctx, `SELECT released FROM catalog.reservations WHERE id = $1 FOR UPDATE`, reservationID).Scan(&released)
		switch {
		case postgres.NoRows(err):
			return apperr.New(apperr.NotFound, "unknown reservation %q", reservationID)
		case err != nil:
			return postgres.Error(err, "releasing stock")
		case released:
			return nil
		}
		// Lock the products in SKU order, as Reserve does, before giving
		// the stock back.
		if _, err := tx.Exec(ctx, `
			SELECT 1 FROM catalog.products
			WHERE sku IN (SELECT sku FROM catalog.reservation_lines WHERE reservation_id = $1)
			ORDER BY sku FOR UPDATE`, reservationID); err != nil {
			return postgres.Error(err, "locking products")
		}
		if _, err := tx.Exec(ctx, `
			UPDATE catalog.products p SET stock = p.stock + l.qty
			FROM (SELECT sku, sum(qty) AS qty FROM catalog.reservation_lines
			      WHERE reservation_id = $1 GROUP BY sku) AS l
			WHERE p.sku = l.sku`, reservationID); err != nil {
			return postgres.Error(err, "giving stock back")
		}
		_, err = tx.Exec(ctx, `UPDATE catalog.reservations SET released = true WHERE id = $1`, reservationID)
		return postgres.Error(err, "releasing stock")
	})
}
