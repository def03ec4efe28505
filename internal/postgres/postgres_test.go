package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/postgres"
	"github.com/mercado-lab/mercado/internal/postgres/pgtest"
)

func codeOfErr(err error) apperr.Code {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func TestErrorCodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want apperr.Code
	}{
		{"deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), apperr.Timeout},
		{"cancelled", context.Canceled, apperr.Timeout},
		{"statement timeout", &pgconn.PgError{Code: "57014"}, apperr.Timeout},
		{"unique violation", &pgconn.PgError{Code: "23505"}, apperr.Conflict},
		{"check violation", &pgconn.PgError{Code: "23514"}, apperr.Conflict},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, apperr.Unavailable},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, apperr.Unavailable},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, apperr.Unavailable},
		{"too many connections", &pgconn.PgError{Code: "53300"}, apperr.Unavailable},
		{"connection failure", &pgconn.PgError{Code: "08006"}, apperr.Unavailable},
		{"syntax error", &pgconn.PgError{Code: "42601"}, apperr.Internal},
		{"broken connection", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), apperr.Unavailable},
		{"network", &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}, apperr.Unavailable},
		{"closed connection", fmt.Errorf("x: %w", pgconn.ErrConnClosed), apperr.Unavailable},
		{"anything else", errors.New("cannot scan"), apperr.Internal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := postgres.Error(tc.err, "doing it")
			if got := codeOfErr(err); got != tc.want {
				t.Errorf("code = %q, want %q", got, tc.want)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("the error does not wrap the driver's")
			}
			if tc.want != apperr.Internal && contains(err.Error(), tc.err.Error()) {
				t.Errorf("message %q repeats the driver's text", err)
			}
		})
	}
	if postgres.Error(nil, "x") != nil {
		t.Error("Error(nil) is not nil")
	}
}

// An unreachable database fails Open fast, as Unavailable; the error is
// for the operator and never shows the password.
func TestOpenUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused
	start := time.Now()
	_, err = postgres.Open(context.Background(), "postgres://u:s3cret@"+addr+"/db?sslmode=disable", postgres.Options{})
	if codeOfErr(err) != apperr.Unavailable {
		t.Fatalf("Open = %v, want Unavailable", err)
	}
	if took := time.Since(start); took > postgres.DefaultConnectTimeout {
		t.Errorf("Open took %v", took)
	}
	if s := err.Error(); contains(s, "s3cret") {
		t.Errorf("error shows the password: %s", s)
	}
}

// A server that accepts the connection and never answers is cut off by
// the connect timeout.
func TestOpenConnectTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold it, say nothing
		}
	}()
	start := time.Now()
	_, err = postgres.Open(context.Background(), "postgres://u@"+ln.Addr().String()+"/db?sslmode=disable",
		postgres.Options{ConnectTimeout: 200 * time.Millisecond})
	if err == nil {
		t.Fatal("Open succeeded")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Open took %v, want about the 200 ms connect timeout", took)
	}
}

func TestOpenRejectsBadOptions(t *testing.T) {
	if _, err := postgres.Open(context.Background(), "postgres://u@127.0.0.1:1/db", postgres.Options{MaxConns: -1}); err == nil {
		t.Error("MaxConns -1 accepted")
	}
	if _, err := postgres.Open(context.Background(), "postgres://u@127.0.0.1:notaport/db", postgres.Options{}); err == nil {
		t.Error("a bad URL accepted")
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

var testMigrations = fstest.MapFS{
	"001_things.sql": {Data: []byte(`-- +goose Up
CREATE TABLE lab.things (id bigint PRIMARY KEY, name text NOT NULL);
-- +goose Down
DROP TABLE lab.things;
`)},
	"002_more.sql": {Data: []byte(`-- +goose Up
ALTER TABLE lab.things ADD COLUMN size int NOT NULL DEFAULT 0;
-- +goose Down
ALTER TABLE lab.things DROP COLUMN size;
`)},
}

func version(t *testing.T, ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, schema string) (max int64, rows int) {
	t.Helper()
	if err := q.QueryRow(ctx, "SELECT max(version_id), count(*) FROM "+schema+".goose_db_version").Scan(&max, &rows); err != nil {
		t.Fatal(err)
	}
	return max, rows
}

func TestMigrateTwice(t *testing.T) {
	pool, _ := pgtest.Open(t, 4)
	ctx := context.Background()
	for range 2 {
		if err := postgres.Migrate(ctx, pool, "lab", testMigrations); err != nil {
			t.Fatal(err)
		}
	}
	if v, n := version(t, ctx, pool, "lab"); v != 2 || n != 3 { // version 0 plus two migrations
		t.Errorf("version %d with %d rows, want 2 with 3", v, n)
	}
	if _, err := pool.Exec(ctx, "INSERT INTO lab.things (id, name, size) VALUES (1, 'a', 3)"); err != nil {
		t.Errorf("the migrated table: %v", err)
	}
}

// Three replicas starting at once: one migrates, the others wait for it
// and find nothing to do; every migration is applied exactly once.
func TestMigrateConcurrently(t *testing.T) {
	pool, _ := pgtest.Open(t, 8)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() { errs[i] = postgres.Migrate(ctx, pool, "lab", testMigrations) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("migrator %d: %v", i, err)
		}
	}
	if v, n := version(t, ctx, pool, "lab"); v != 2 || n != 3 {
		t.Errorf("version %d with %d rows, want 2 with 3", v, n)
	}
}

// Each schema keeps its own version table.
func TestMigrateSchemasApart(t *testing.T) {
	pool, _ := pgtest.Open(t, 4)
	ctx := context.Background()
	other := fstest.MapFS{"001_x.sql": {Data: []byte("-- +goose Up\nCREATE TABLE other.x (id int);\n")}}
	if err := postgres.Migrate(ctx, pool, "lab", testMigrations); err != nil {
		t.Fatal(err)
	}
	if err := postgres.Migrate(ctx, pool, "other", other); err != nil {
		t.Fatal(err)
	}
	if v, _ := version(t, ctx, pool, "other"); v != 1 {
		t.Errorf("other at version %d, want 1", v)
	}
	if v, _ := version(t, ctx, pool, "lab"); v != 2 {
		t.Errorf("lab at version %d, want 2", v)
	}
}

func TestMigrateRejectsSchemaName(t *testing.T) {
	for _, s := range []string{"", "Lab", "lab; DROP TABLE x", "1lab"} {
		if err := postgres.Migrate(context.Background(), nil, s, testMigrations); err == nil {
			t.Errorf("schema %q accepted", s)
		}
	}
}

// A transaction with a budget carries it to the server as its statement
// timeout, and a statement that outlives it fails as Timeout.
func TestInTxStatementTimeout(t *testing.T) {
	pool, _ := pgtest.Open(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var setting string
	start := time.Now()
	err := postgres.InTx(ctx, pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, "SHOW statement_timeout").Scan(&setting); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "SELECT pg_sleep(5)")
		return postgres.Error(err, "sleeping")
	})
	if codeOfErr(err) != apperr.Timeout {
		t.Errorf("InTx = %v, want Timeout", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("took %v, want about the 300 ms budget", took)
	}
	if setting == "0" || setting == "" {
		t.Errorf("statement_timeout = %q, want the budget", setting)
	}
	// SET LOCAL: the pool's connections keep no timeout afterwards.
	if err := pool.QueryRow(context.Background(), "SHOW statement_timeout").Scan(&setting); err != nil {
		t.Fatal(err)
	}
	if setting != "0" {
		t.Errorf("after the transaction statement_timeout = %q, want 0", setting)
	}
}

func TestInTxCommitsOrRollsBack(t *testing.T) {
	pool, _ := pgtest.Open(t, 4)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "CREATE TABLE t (v int)"); err != nil {
		t.Fatal(err)
	}
	if err := postgres.InTx(ctx, pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO t VALUES (1)")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := postgres.InTx(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO t VALUES (2)"); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("InTx = %v, want fn's error", err)
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("%d rows, want 1 (the second transaction rolled back)", n)
	}
	expired, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	if err := postgres.InTx(expired, pool, func(pgx.Tx) error { return nil }); codeOfErr(err) != apperr.Timeout {
		t.Errorf("InTx with a spent budget = %v, want Timeout", err)
	}
}

func TestReady(t *testing.T) {
	pool, _ := pgtest.Open(t, 2)
	if err := postgres.Ready(context.Background(), pool); err != nil {
		t.Errorf("Ready = %v", err)
	}
	pool.Close()
	if err := postgres.Ready(context.Background(), pool); err == nil {
		t.Error("Ready on a closed pool succeeded")
	}
}
