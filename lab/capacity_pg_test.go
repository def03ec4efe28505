package lab

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/postgres/pgtest"
)

// TestCapacityOnPostgresHoldsARateTwiceAfresh: on PostgreSQL every shop
// of a search shares one database, and the search may hold one rate twice
// (its second try, the overhead comparison). The second time must place
// orders of its own, not have its checkouts answered from the first's
// idempotency keys at no cost.
func TestCapacityOnPostgresHoldsARateTwiceAfresh(t *testing.T) {
	db := pgtest.NewDatabase(t)
	cfg := DefaultCapacity()
	cfg.DatabaseURL, cfg.DBMaxConns, cfg.Step, cfg.P99 = db.URL, 4, time.Second, time.Second
	orders := func() int64 { return pgtest.QueryInt(t, db.URL, `SELECT count(*) FROM orders.orders`) }
	log := slog.New(slog.DiscardHandler)
	if _, err := holdRateFresh(t.Context(), cfg, mode.Budgeted, 20, log); err != nil {
		t.Fatal(err)
	}
	before := orders()
	st, err := holdRateFresh(t.Context(), cfg, mode.Budgeted, 20, log)
	if err != nil {
		t.Fatal(err)
	}
	if placed := orders() - before; st.Sent == 0 || placed < int64(st.Sent) {
		t.Errorf("the rate held a second time sent %d checkouts and placed %d new orders: its checkouts were answered from the first time's keys", st.Sent, placed)
	}
}

// TestCapacityOnPostgresGivesEachModeItsOwnDatabase: each mode's search
// runs on a database of its own, created on the URL's server and dropped
// after, so the second mode does not meet the first's thousands of rows;
// the URL's own database is left untouched.
func TestCapacityOnPostgresGivesEachModeItsOwnDatabase(t *testing.T) {
	db := pgtest.NewDatabase(t)
	cfg := DefaultCapacity()
	cfg.DatabaseURL, cfg.DBMaxConns = db.URL, 4
	cfg.Start, cfg.Max, cfg.Step, cfg.Refine, cfg.P99 = 10, 10, 500*time.Millisecond, 0, time.Second
	query := func(url, sql string) []string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, sql)
		if err != nil {
			t.Fatal(err)
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	// Only the databases this search made: other runs on the server (a
	// parallel test, a lab run) make and drop their own.
	modeDatabases := func(m mode.Mode) []string {
		return query(db.AdminURL, `SELECT datname FROM pg_database WHERE datname LIKE 'mercado_lab_`+string(m)+`_%'`)
	}
	before := map[string]bool{}
	for _, m := range []mode.Mode{mode.Naive, mode.Budgeted} {
		for _, name := range modeDatabases(m) {
			before[name] = true
		}
	}
	modes := map[string][]string{}
	progress := func(line string) {
		for _, m := range []mode.Mode{mode.Naive, mode.Budgeted} {
			if strings.HasPrefix(line, string(m)) && modes[string(m)] == nil {
				modes[string(m)] = slices.DeleteFunc(modeDatabases(m), func(name string) bool { return before[name] })
			}
		}
	}
	if _, err := Capacity(t.Context(), cfg, slog.New(slog.DiscardHandler), progress); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"naive", "budgeted"} {
		if len(modes[m]) == 0 {
			t.Errorf("no database of the %s mode's own while it was searched", m)
		}
		for _, name := range modes[m] {
			if left := query(db.AdminURL, `SELECT datname FROM pg_database WHERE datname = '`+name+`'`); len(left) > 0 {
				t.Errorf("the %s mode's database %s was left behind", m, name)
			}
		}
	}
	if tables := query(db.URL, `SELECT table_schema FROM information_schema.tables WHERE table_schema = 'orders'`); len(tables) > 0 {
		t.Error("the search wrote to the URL's own database")
	}
}
