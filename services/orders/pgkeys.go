package orders

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/postgres"
)

// PGKeys is the Keys on PostgreSQL, in the orders schema (see Migrate).
type PGKeys struct {
	pool *pgxpool.Pool
}

var _ Keys = (*PGKeys)(nil)

// NewPGKeys returns a key store on pool, whose schema Migrate has brought
// up to date.
func NewPGKeys(pool *pgxpool.Pool) (*PGKeys, error) {
	if pool == nil {
		return nil, fmt.Errorf("orders: a connection pool is required")
	}
	return &PGKeys{pool: pool}, nil
}

const keyColumns = `key, request_hash, completed, response, lease_until, created_at, holders`

func scanKey(row pgx.Row) (KeyRecord, error) {
	var r KeyRecord
	var holders int
	err := row.Scan(&r.Key, &r.RequestHash, &r.Completed, &r.Response, &r.LeaseUntil, &r.CreatedAt, &holders)
	r.TakenOver = holders > 1
	return r, err
}

// claimAttempts bounds a claim's retries when the key it found is released
// between its two statements.
const claimAttempts = 3

// Claim takes key as ClaimWithOrder does, but records no order: the
// Service always claims with its order; the tests use Claim to leave a
// key as a holder that vanished would. It is one statement, so two claims
// can never both win (ClaimWithOrder's is this one with the order's
// insert beside it): the insert takes an unknown key; on a known one, the
// update takes it over only when its holder's lease ran out with no
// answer and the request is the same. PostgreSQL runs the ON CONFLICT
// branch with the row locked, so two takeovers at once are one after the
// other, and the second sees the first's new lease. When nothing was
// taken, no row is returned, and the stored record is read.
func (k *PGKeys) Claim(ctx context.Context, key, hash string, now, leaseUntil time.Time) (KeyRecord, bool, error) {
	return k.claim(ctx, key, "claiming an idempotency key", `
			INSERT INTO orders.idempotency_keys AS k (key, request_hash, lease_until, created_at)
			VALUES ($1, $2, $4, $3)
			ON CONFLICT (key) DO UPDATE
				SET request_hash = excluded.request_hash, completed = false, response = NULL,
				    lease_until = excluded.lease_until, created_at = excluded.created_at, holders = k.holders + 1
				WHERE NOT k.completed AND k.lease_until <= $3 AND k.request_hash = excluded.request_hash
			RETURNING `+keyColumns, key, hash, now, leaseUntil)
}

// claim runs a claiming statement (Claim's, or ClaimWithOrder's) that
// returns the key's record when it took the key and no row when it did
// not; then it reads the stored record. A key released between the two
// statements is claimed again, up to claimAttempts times.
func (k *PGKeys) claim(ctx context.Context, key, doing, sql string, args ...any) (KeyRecord, bool, error) {
	for range claimAttempts {
		rec, err := scanKey(k.pool.QueryRow(ctx, sql, args...))
		switch {
		case err == nil:
			return rec, true, nil
		case !postgres.NoRows(err):
			return KeyRecord{}, false, postgres.Error(err, doing)
		}
		rec, err = scanKey(k.pool.QueryRow(ctx, `SELECT `+keyColumns+` FROM orders.idempotency_keys WHERE key = $1`, key))
		switch {
		case err == nil:
			return rec, false, nil
		case !postgres.NoRows(err):
			return KeyRecord{}, false, postgres.Error(err, "reading an idempotency key")
		}
		// Released (or reaped) since the claim: try again.
	}
	return KeyRecord{}, false, apperr.New(apperr.Unavailable, "idempotency key %q keeps changing hands; retry", key)
}

// Complete implements Keys.
func (k *PGKeys) Complete(ctx context.Context, key string, response []byte) error {
	if response == nil {
		response = []byte{} // completed means an answer is stored, even an empty one
	}
	tag, err := k.pool.Exec(ctx, `UPDATE orders.idempotency_keys SET completed = true, response = $2 WHERE key = $1`, key, response)
	switch {
	case err != nil:
		return postgres.Error(err, "storing the answer of an idempotency key")
	case tag.RowsAffected() == 0:
		return apperr.New(apperr.NotFound, "unknown idempotency key %q", key)
	}
	return nil
}

// Release implements Keys. A completed key keeps its answer.
func (k *PGKeys) Release(ctx context.Context, key string) error {
	_, err := k.pool.Exec(ctx, `DELETE FROM orders.idempotency_keys WHERE key = $1 AND NOT completed`, key)
	return postgres.Error(err, "releasing an idempotency key")
}

// Reap implements Keys, oldest first. SKIP LOCKED lets two replicas reap
// at once, each its own batch, and never waits on a key being claimed.
func (k *PGKeys) Reap(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	tag, err := k.pool.Exec(ctx, `
		DELETE FROM orders.idempotency_keys WHERE key IN (
			SELECT key FROM orders.idempotency_keys WHERE created_at < $1
			ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, cutoff, limit)
	if err != nil {
		return 0, postgres.Error(err, "reaping idempotency keys")
	}
	return int(tag.RowsAffected()), nil
}

// orderParams are orderColumns as parameters $first, $first+1, …, each
// cast to its column's type: in the INSERT … SELECT of ClaimWithOrder,
// PostgreSQL cannot take the types from the columns, as it does for
// VALUES.
func orderParams(first int) string {
	types := []string{"text", "text", "text", "jsonb", "text", "text", "text", "bigint",
		"text", "text", "text", "text", "text", "timestamptz", "timestamptz", "text", "boolean",
		"integer", "integer", "text[]"}
	out := ""
	for i, typ := range types {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("$%d::%s", first+i, typ)
	}
	return out
}

// claimWithOrderSQL is Claim's statement with the order's insert beside
// it: one statement, so one transaction and one commit. The order is
// inserted only when the key was free (the claim returns a row, and its
// holder is the first): a takeover first looks for what the vanished
// holder left (Service.resume).
var claimWithOrderSQL = `
	WITH k AS (
		INSERT INTO orders.idempotency_keys AS k (key, request_hash, lease_until, created_at)
		VALUES ($1, $2, $4, $3)
		ON CONFLICT (key) DO UPDATE
			SET request_hash = excluded.request_hash, completed = false, response = NULL,
			    lease_until = excluded.lease_until, created_at = excluded.created_at, holders = k.holders + 1
			WHERE NOT k.completed AND k.lease_until <= $3 AND k.request_hash = excluded.request_hash
		RETURNING ` + keyColumns + `
	), o AS (
		INSERT INTO orders.orders (` + orderColumns + `)
		SELECT ` + orderParams(5) + ` FROM k WHERE k.holders = 1
	)
	SELECT ` + keyColumns + ` FROM k`

// ClaimWithOrder implements Keys: Claim, and o recorded in the same
// statement when the key was free.
func (k *PGKeys) ClaimWithOrder(ctx context.Context, key, hash string, now, leaseUntil time.Time, o Order) (KeyRecord, bool, error) {
	args := append([]any{key, hash, now, leaseUntil}, orderArgs(o)...)
	return k.claim(ctx, key, "claiming an idempotency key and recording its order", claimWithOrderSQL, args...)
}

// CompleteWithOrder implements Keys in one statement: the order's
// update, and the key's answer only when the order was there.
func (k *PGKeys) CompleteWithOrder(ctx context.Context, o Order, key string, response []byte) (bool, error) {
	if response == nil {
		response = []byte{}
	}
	var updated, answered bool
	err := k.pool.QueryRow(ctx, `
		WITH o AS (
			UPDATE orders.orders SET (`+orderColumns+`) =
				($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
			WHERE id = $1 RETURNING id
		), a AS (
			UPDATE orders.idempotency_keys SET completed = true, response = $22
			WHERE key = $21 AND EXISTS (SELECT FROM o) RETURNING key
		)
		SELECT EXISTS (SELECT FROM o), EXISTS (SELECT FROM a)`,
		append(orderArgs(o), key, response)...).Scan(&updated, &answered)
	switch {
	case err != nil:
		return false, postgres.Error(err, "updating an order and storing its answer")
	case !updated:
		return false, apperr.New(apperr.NotFound, "unknown order %q", o.ID)
	}
	return answered, nil
}
