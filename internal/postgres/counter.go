package postgres

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A checkout's cost on PostgreSQL is mostly its commits: each one waits
// for the write-ahead log to reach the disk (docs/performance.md). So
// every pool Open returns counts what its connections commit, in two
// kinds:
//
//   - request commits, made while serving a request: a checkout waits for
//     them, one after the other;
//   - deferred commits, made by work nobody waits for — a service's
//     background workers and the audit trail (their contexts are marked
//     with [Deferred]).
//
// It also counts the transactions open on the pool right now, so that a
// test can check that none is held across a call to another service.
// GET /admin/db reports the figures (see internal/serve), and
// CountsOf reads them.

// Counts are a pool's commit counters.
type Counts struct {
	// RequestCommits and DeferredCommits count committed transactions,
	// explicit ones and single statements alike, as the server's
	// pg_stat_database.xact_commit does: read-only ones too.
	RequestCommits  int64 `json:"request_commits"`
	DeferredCommits int64 `json:"deferred_commits"`
	// OpenTransactions are the explicit transactions begun and not yet
	// ended.
	OpenTransactions int64 `json:"open_transactions"`
	// LivenessPings are the pings the pool sends before handing out a
	// connection that sat idle for over a second (pgx's rule). The server
	// counts each as a commit; they are neither kind above, as they serve
	// no one's work, and a busy machine makes more of them.
	LivenessPings int64 `json:"liveness_pings"`
}

// Deferred marks ctx as deferred work: the commits made under it count as
// DeferredCommits.
func Deferred(ctx context.Context) context.Context {
	return context.WithValue(ctx, deferredKey{}, true)
}

type deferredKey struct{}

// CountsOf returns the counters of a pool that Open returned; zero for
// any other.
func CountsOf(pool *pgxpool.Pool) Counts {
	c, ok := pool.Config().ConnConfig.Tracer.(*counter)
	if !ok {
		return Counts{}
	}
	return Counts{RequestCommits: c.request.Load(), DeferredCommits: c.deferred.Load(),
		OpenTransactions: c.open.Load(), LivenessPings: c.pings.Load()}
}

// counter is the pool's pgx tracer: it sees every statement and batch end
// on every connection, and the connection's transaction status after it
// ('I': idle, no transaction open).
type counter struct {
	request, deferred, open, pings atomic.Int64
}

// shouldPing is pgx's rule for pinging a connection before handing it out
// (idle for over a second), counted.
func (c *counter) shouldPing(_ context.Context, p pgxpool.ShouldPingParams) bool {
	if p.IdleDuration <= time.Second {
		return false
	}
	c.pings.Add(1)
	return true
}

var (
	_ pgx.QueryTracer = (*counter)(nil)
	_ pgx.BatchTracer = (*counter)(nil)
)

// txStatement marks the context of a statement that begins or ends an
// explicit transaction (pgx sends "begin …", "commit" and "rollback").
type txStatement struct{}

const (
	stmtBegin = iota + 1
	stmtCommit
	stmtRollback
)

func (c *counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	switch {
	case d.SQL == "commit":
		return context.WithValue(ctx, txStatement{}, stmtCommit)
	case d.SQL == "rollback":
		return context.WithValue(ctx, txStatement{}, stmtRollback)
	case len(d.SQL) >= 5 && d.SQL[:5] == "begin":
		return context.WithValue(ctx, txStatement{}, stmtBegin)
	}
	return ctx
}

func (c *counter) TraceQueryEnd(ctx context.Context, conn *pgx.Conn, d pgx.TraceQueryEndData) {
	kind, _ := ctx.Value(txStatement{}).(int)
	switch kind {
	case stmtBegin:
		if d.Err == nil {
			c.open.Add(1)
		}
	case stmtCommit:
		// Ended either way: pgx closes a connection whose commit failed.
		c.open.Add(-1)
		if d.Err == nil && d.CommandTag.String() != "ROLLBACK" {
			c.committed(ctx)
		}
	case stmtRollback:
		c.open.Add(-1)
	default:
		c.ended(ctx, conn, d.Err)
	}
}

func (c *counter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (c *counter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (c *counter) TraceBatchEnd(ctx context.Context, conn *pgx.Conn, d pgx.TraceBatchEndData) {
	c.ended(ctx, conn, d.Err)
}

// ended counts a statement or batch that succeeded outside an explicit
// transaction: the server ran it as a transaction of its own, and
// committed it.
func (c *counter) ended(ctx context.Context, conn *pgx.Conn, err error) {
	if err == nil && conn.PgConn().TxStatus() == 'I' {
		c.committed(ctx)
	}
}

func (c *counter) committed(ctx context.Context) {
	if deferred, _ := ctx.Value(deferredKey{}).(bool); deferred {
		c.deferred.Add(1)
		return
	}
	c.request.Add(1)
}
