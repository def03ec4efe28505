package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mercado-lab/mercado/internal/apperr"
)

// Error wraps err, from pgx, in a coded error that says what was being
// done. The code is what the caller can do about it:
//
//   - the ctx ended (the request's budget ran out, or the statement
//     timeout fired): Timeout, 504 at the edge;
//   - no connection could be made, or it broke, or the server is shutting
//     down, out of connections, or asks for a retry (serialization
//     failure, deadlock): Unavailable, 503 at the edge, worth retrying;
//   - a constraint refused the write: Conflict;
//   - anything else is a bug: Internal.
//
// The message says what was being done and what became of it, with the
// SQLSTATE when the server gave one, and never the driver's own text: an
// Unavailable or Timeout message travels to the client (as the 503's
// problem detail), and the driver's text names the host, the user and the
// database. The driver's error stays in the chain for errors.Is and
// errors.As. Internal errors keep it in the message, for the log: they
// are never shown to clients (see apperr.Status).
//
// A nil err stays nil. "No rows" is not mapped here: only the store knows
// what was not found.
func Error(err error, doing string) error {
	if err == nil {
		return nil
	}
	c := code(err)
	if c == apperr.Internal {
		return apperr.Wrap(c, err, doing)
	}
	return apperr.Wrap(c, driverError{err: err, code: c}, doing)
}

// driverError is a driver's error told in Mercado's words: its message
// is public, the driver's error is its cause.
type driverError struct {
	err  error
	code apperr.Code
}

var _ apperr.PublicMessager = driverError{}

func (e driverError) Error() string {
	var what string
	switch e.code {
	case apperr.Timeout:
		what = "the database did not answer in time"
	case apperr.Conflict:
		what = "the write conflicts with what is stored"
	default:
		what = "the database is unavailable"
	}
	if pgErr := (*pgconn.PgError)(nil); errors.As(e.err, &pgErr) {
		what += " (SQLSTATE " + pgErr.Code + ")"
	}
	return what
}

// PublicMessage is the message: it names no host, user or database.
func (e driverError) PublicMessage() string { return e.Error() }

func (e driverError) Unwrap() error { return e.err }

func code(err error) apperr.Code {
	var (
		connectErr *pgconn.ConnectError
		pgErr      *pgconn.PgError
		netErr     net.Error
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), pgconn.Timeout(err):
		return apperr.Timeout
	case errors.As(err, &connectErr):
		// Refused, unreachable, or turned away by the server (for example
		// "database is not currently accepting connections").
		return apperr.Unavailable
	case errors.As(err, &pgErr):
		return sqlStateCode(pgErr.Code)
	case errors.Is(err, pgconn.ErrConnClosed), pgconn.SafeToRetry(err),
		errors.As(err, &netErr), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		// The connection broke under the statement.
		return apperr.Unavailable
	}
	return apperr.Internal
}

// sqlStateCode maps a server error's SQLSTATE (PostgreSQL manual,
// appendix A) to a code.
func sqlStateCode(state string) apperr.Code {
	switch {
	case state == "57014": // query_canceled: statement_timeout or a cancel request
		return apperr.Timeout
	case strings.HasPrefix(state, "23"): // integrity constraint violation
		return apperr.Conflict
	case state == "40001", state == "40P01", // serialization failure, deadlock: retry
		strings.HasPrefix(state, "08"),                       // connection exception
		strings.HasPrefix(state, "53"),                       // insufficient resources (too many connections...)
		state == "57P01", state == "57P02", state == "57P03", // shutting down, cannot connect now
		state == "25006": // read-only transaction: a replica after a failover
		return apperr.Unavailable
	}
	return apperr.Internal
}
