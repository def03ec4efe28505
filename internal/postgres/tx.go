package postgres

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercado-lab/mercado/internal/apperr"
)

// InTx runs fn in a transaction: committed when fn returns nil, rolled
// back otherwise. fn's error is returned as it is (a store returns coded
// errors); errors of the transaction itself go through [Error].
//
// When ctx has a deadline, each statement of the transaction is also
// bounded on the server by the budget left when it began (SET LOCAL
// statement_timeout), so the database gives up — and lets go of its row
// locks — about when the client does, even if pgx's cancel request is
// lost; pgx's cancellation still ends the whole transaction at the
// deadline itself. A ctx already past its deadline does not start one.
//
// db is a pool, or one connection a caller acquired from it itself.
func InTx(ctx context.Context, db Beginner, fn func(pgx.Tx) error) (err error) {
	var timeout time.Duration
	if d, ok := ctx.Deadline(); ok {
		if timeout = time.Until(d); timeout <= 0 {
			return apperr.Wrap(apperr.Timeout, context.DeadlineExceeded, "starting a transaction")
		}
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return Error(err, "starting a transaction")
	}
	defer func() {
		if err != nil {
			// The rollback's own error adds nothing: a failed transaction is
			// discarded by the server either way, and with ctx done pgx
			// closes the connection rather than wait for an answer.
			_ = tx.Rollback(ctx)
		}
	}()
	if timeout > 0 {
		// Round up: statement_timeout = 0 would mean no timeout at all.
		ms := (timeout + time.Millisecond - 1) / time.Millisecond
		if _, err := tx.Exec(ctx, "SELECT set_config('statement_timeout', $1, true)", strconv.FormatInt(int64(ms), 10)); err != nil {
			return Error(err, "bounding the transaction by the budget")
		}
	}
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return Error(err, "committing")
	}
	return nil
}

// Beginner begins transactions: a *pgxpool.Pool or a *pgxpool.Conn.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

var (
	_ Beginner = (*pgxpool.Pool)(nil)
	_ Beginner = (*pgxpool.Conn)(nil)
)

// QueryCanceled reports whether err says the server cancelled a
// statement: its statement_timeout, or a cancel request.
func QueryCanceled(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "57014"
}

// NoRows reports whether err says a query found no row.
func NoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }
