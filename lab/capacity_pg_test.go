package lab

import (
	"context"
	"log/slog"
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
	orders := func() int64 {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, db.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var n int64
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM orders.orders`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
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
