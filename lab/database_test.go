package lab

import (
	"context"
	"log/slog"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/postgres/pgtest"
	"github.com/mercado-lab/mercado/loadtest"
)

// TestScenarioOnPostgresGivesEachModeItsOwnDatabase runs a short scenario
// of both modes on PostgreSQL: each mode's shop answers from a database
// of its own, which the run drops after, and the load buys from the
// seeded catalogue there as on the memory store.
// dbURL is admin's URL naming the database name.
func dbURL(t *testing.T, admin, name string) string {
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func TestScenarioOnPostgresGivesEachModeItsOwnDatabase(t *testing.T) {
	admin := pgtest.AdminURL(t)
	ctx := context.Background()
	labDatabases := func() map[string]bool {
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		rows, _ := conn.Query(ctx, `SELECT datname FROM pg_database WHERE datname LIKE 'mercado\_lab\_%'`)
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, n := range names {
			out[n] = true
		}
		return out
	}
	before := labDatabases()

	sc := loadtest.Scenario{
		Name: "pg", Modes: []mode.Mode{mode.Naive, mode.Budgeted}, Deadline: loadtest.Duration(time.Second),
		Classes: map[string]loadtest.ClassSpec{"checkout": {Rate: 10}, "browse": {Rate: 5}},
		Phases:  []loadtest.Phase{{Name: "only", Duration: loadtest.Duration(2 * time.Second)}},
	}
	// The orders each mode's run left in each database the lab made.
	orders := map[string]int{}
	countOrders := func(name string) int {
		conn, err := pgx.Connect(ctx, dbURL(t, admin, name))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM orders.orders`).Scan(&n); err != nil {
			return -1 // not migrated: no shop used it
		}
		return n
	}
	gen := func(ctx context.Context, sc loadtest.Scenario, shop Target) (loadtest.Results, error) {
		res, err := loadtest.RunScenario(ctx, sc, shop.Drive(), loadtest.RunOptions{})
		for n := range labDatabases() {
			if !before[n] && orders[n] == 0 {
				orders[n] = countOrders(n)
			}
		}
		return res, err
	}
	res, err := ScenarioApart(ctx, sc, slog.New(slog.DiscardHandler), ScenarioRun{Generator: gen, DatabaseURL: admin, DBMaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	// The first mode's database holds its orders alone by the time the
	// second's is made; the second's, the second mode's.
	var counts []int
	for _, n := range orders {
		counts = append(counts, n)
	}
	if len(orders) != 2 || counts[0] < 20 || counts[1] < 20 {
		t.Errorf("orders by database the lab made: %v; want two databases, each with a mode's orders (20 or more)", orders)
	}
	for _, m := range res.Modes {
		for _, s := range m.Classes {
			if s.Requests < 10 || s.Good != s.Requests {
				t.Errorf("%s %s: %d of %d good; want every one, on PostgreSQL", m.Mode, s.Class, s.Good, s.Requests)
			}
		}
	}
	for n := range labDatabases() {
		if !before[n] {
			t.Errorf("database %s is left behind after the run", n)
		}
	}
}
