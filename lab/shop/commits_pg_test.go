package shop_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/postgres/pgtest"
	"github.com/mercado-lab/mercado/lab/shop"
)

// commitsPerCheckoutBound is the most transactions a PostgreSQL checkout
// may commit, in any mode. TestPostgresCommitsPerCheckout measured 7.6
// naive and 9.9 budgeted; the rest is room for the workers' polls, which
// run a little longer in a run with checkouts than in one without.
const commitsPerCheckoutBound = 11

// TestPostgresCommitsPerCheckout counts the transactions a checkout
// commits on PostgreSQL, from the server's own counter for the shop's
// database (pg_stat_database.xact_commit, which counts every committed
// transaction, read-only ones included), so the figure cannot drift up
// unnoticed. A server process adds its counts to that view when it has
// been idle a moment or when it ends, so every count is taken with the
// shop stopped. Starting and stopping a shop commits too (migrations,
// readiness checks, the workers' polls), so a run without checkouts is
// subtracted from a run with them.
func TestPostgresCommitsPerCheckout(t *testing.T) {
	db := pgtest.NewDatabase(t)
	const checkouts = 100
	for _, m := range []mode.Mode{mode.Naive, mode.Budgeted} {
		t.Run(string(m), func(t *testing.T) {
			run := func(n int) int64 {
				before := settledCommits(t, db)
				cfg := shop.EphemeralConfig()
				cfg.Shared.Mode = m
				s := startShopOn(t, cfg, db)
				for i := range n {
					if r := s.checkout(t, fmt.Sprintf("commits-%s-%d-%d", m, n, i)); r.status != http.StatusCreated {
						t.Fatalf("checkout %d: %d %s", i, r.status, r.body)
					}
				}
				s.stop()
				return settledCommits(t, db) - before
			}
			run(1) // the first start migrates the schemas
			idle, busy := run(0), run(checkouts)
			per := float64(busy-idle) / checkouts
			t.Logf("%s: %d commits with %d checkouts, %d without: %.2f per checkout", m, busy, checkouts, idle, per)
			if per > commitsPerCheckoutBound {
				t.Errorf("%s: %.2f commits per checkout, want at most %d", m, per, commitsPerCheckoutBound)
			}
			if per < 1 {
				t.Errorf("%s: %.2f commits per checkout: the count missed the checkouts' own", m, per)
			}
		})
	}
}

// settledCommits is db's committed transactions once the count stops
// moving: nothing is connected to db, and the last server processes have
// reported theirs.
func settledCommits(t *testing.T, db pgtest.Database) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, db.AdminURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
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
