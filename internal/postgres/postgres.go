package postgres

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercado-lab/mercado/internal/apperr"
)

// Defaults of [Options].
const (
	// DefaultMaxConns is the pool size of one service (as
	// internal/serve.DefaultDBMaxConns).
	DefaultMaxConns = 4
	// DefaultConnectTimeout bounds establishing one connection (TCP, TLS,
	// password exchange), so that a database that does not answer fails
	// fast instead of waiting out the operating system's minutes-long
	// TCP timeout. A request's budget bounds its own connection sooner;
	// this bounds the rest (start-up, background work, naive mode). Long
	// enough for the password exchange on a loaded machine.
	DefaultConnectTimeout = 5 * time.Second
	// ReadyTimeout bounds one readiness ping.
	ReadyTimeout = time.Second
)

// Options size the pool. The zero value takes every default.
type Options struct {
	// MaxConns bounds the pool; 0 means DefaultMaxConns. Requests beyond it
	// wait for a connection, within their budget.
	MaxConns int
	// ConnectTimeout bounds establishing one connection; 0 means
	// DefaultConnectTimeout. A connect_timeout in the URL wins.
	ConnectTimeout time.Duration
}

// Open returns a connection pool to the database at databaseURL (a
// postgres:// URL or a key=value string, as libpq takes). It pings the
// database once, so that a wrong URL or an unreachable server is reported
// at start-up rather than by the first request; that error has the code
// Unavailable or Timeout (see [Error]) and says which host, user and
// database it tried, never the password.
func Open(ctx context.Context, databaseURL string, o Options) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("postgres: the database URL: %w", err)
	}
	if o.MaxConns < 0 || o.MaxConns > 10_000 {
		return nil, fmt.Errorf("postgres: max conns %d is outside 0 to 10000", o.MaxConns)
	}
	cfg.MaxConns = int32(cmp.Or(o.MaxConns, DefaultMaxConns))
	// Counts its commits (counter.go). pgx's statement cache stays on, as
	// by default: each connection prepares a statement the first time it
	// runs it and reuses it after (QueryExecModeCacheStatement, 512
	// statements per connection).
	c := &counter{}
	cfg.ConnConfig.Tracer, cfg.ShouldPing = c, c.shouldPing
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = cmp.Or(o.ConnectTimeout, DefaultConnectTimeout)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, Error(err, "opening the connection pool")
	}
	// The first connection: bounded by ctx and the connect timeout. Its
	// error is for the operator starting the service, not for a client,
	// so it keeps the driver's text: which host, user and database (never
	// the password).
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, apperr.Wrap(code(err), err, "connecting to the database")
	}
	return pool, nil
}

// Ready pings the database, for at most ReadyTimeout: the readiness check
// of a service that keeps its state there.
func Ready(ctx context.Context, pool *pgxpool.Pool) error {
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	if err := pool.Ping(ctx); err != nil {
		return Error(err, "pinging the database")
	}
	return nil
}
