// Package pgtest gives each PostgreSQL test a database of its own, on the
// server named by MERCADO_TEST_DATABASE_URL (or, failing that,
// MERCADO_DATABASE_URL). Without either, the tests that need one skip.
//
// Each call to [NewDatabase] runs CREATE DATABASE t_<random> on that
// server and DROP DATABASE ... WITH (FORCE) when the test ends, so tests
// never see each other's rows, may run in parallel, and leave nothing
// behind. The role in the URL needs CREATEDB. Creating and dropping a
// database costs a good part of a second, so store suites run their
// tests in parallel (t.Parallel). Migrating the new
// database is each test's own business, so every test that uses one
// exercises the migrations too.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercado-lab/mercado/internal/postgres"
)

// The environment variables naming the server tests use.
const (
	EnvTestURL = "MERCADO_TEST_DATABASE_URL"
	EnvURL     = "MERCADO_DATABASE_URL"
)

// SkipMessage is why PostgreSQL tests skip when no server is configured.
const SkipMessage = "set " + EnvTestURL + " to run the PostgreSQL store tests " +
	"(e.g. postgres://mercado:mercado@127.0.0.1:5432/mercado?sslmode=disable; see docs/running.md)"

// AdminURL returns the URL of the server's maintenance database, from
// which test databases are created, or skips t when none is configured.
func AdminURL(t testing.TB) string {
	t.Helper()
	for _, env := range []string{EnvTestURL, EnvURL} {
		if v := os.Getenv(env); v != "" {
			return v
		}
	}
	t.Skip(SkipMessage)
	return ""
}

// Database is one test's database.
type Database struct {
	// Name is the database's name.
	Name string
	// URL connects to it.
	URL string
	// AdminURL connects to the maintenance database it was created from.
	AdminURL string
}

// NewDatabase creates an empty database for t, dropped when t ends, or
// skips t when no server is configured.
func NewDatabase(t testing.TB) Database {
	t.Helper()
	admin := AdminURL(t)
	u, err := url.Parse(admin)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("%s must be a postgres:// URL", EnvTestURL)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "t_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	Exec(t, ctx, admin, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := postgres.DropDatabase(ctx, admin, name); err != nil {
			t.Fatal(err)
		}
	})
	u.Path = "/" + name
	return Database{Name: name, URL: u.String(), AdminURL: admin}
}

// Open creates a database for t (see NewDatabase) and returns a pool of at
// most maxConns connections to it, closed when t ends.
func Open(t testing.TB, maxConns int) (*pgxpool.Pool, Database) {
	t.Helper()
	db := NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := postgres.Open(ctx, db.URL, postgres.Options{MaxConns: maxConns})
	if err != nil {
		t.Fatalf("opening %s: %v", db.Name, err)
	}
	t.Cleanup(pool.Close)
	return pool, db
}

// Exec runs one statement on its own connection to databaseURL, failing t
// if it fails. Statements such as CREATE DATABASE cannot run in a
// transaction, hence no pool.
func Exec(t testing.TB, ctx context.Context, databaseURL, sql string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		t.Fatalf("connecting to the test server: %v", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", firstWords(sql), err)
	}
}

func firstWords(sql string) string {
	f := strings.Fields(sql)
	if len(f) > 3 {
		f = f[:3]
	}
	return strings.Join(f, " ")
}

// QueryInt runs sql, whose one row is one integer, on a connection of its
// own to databaseURL, and returns that integer; it fails t on any error.
func QueryInt(t testing.TB, databaseURL, sql string, args ...any) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int64
	if err := conn.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// SettledCommits is db's committed transactions as the server counts them
// (pg_stat_database.xact_commit, read-only transactions included), once
// the count stops moving. A server process adds its counts to that view
// when it has been idle a while or when it ends, so call it with nothing
// connected to db: it first waits until the server processes of the
// connections closed last have ended.
func SettledCommits(t testing.TB, db Database) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, db.AdminURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for {
		var sessions int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1`, db.Name).Scan(&sessions)
		if err != nil {
			t.Fatalf("counting %s's sessions: %v", db.Name, err)
		}
		if sessions == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s still has %d sessions", db.Name, sessions)
		case <-time.After(100 * time.Millisecond):
		}
	}
	last := int64(-1)
	for {
		var n int64
		// Each query is a transaction of its own, so each reads the
		// counter afresh rather than the first read's snapshot.
		err := conn.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = $1`, db.Name).Scan(&n)
		if err != nil {
			t.Fatalf("reading %s's commits: %v", db.Name, err)
		}
		if n == last {
			return n
		}
		last = n
		select {
		case <-ctx.Done():
			t.Fatalf("%s's commit count kept moving", db.Name)
		case <-time.After(1500 * time.Millisecond):
		}
	}
}
