package orders_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/postgres"
	"github.com/mercado-lab/mercado/services/orders"
)

// No transaction is held across a call to another service: a checkout
// on the PostgreSQL stores calls its dependencies with no transaction
// open on orders' pool. A transaction held across a call would keep its
// row locks and its connection for as long as the callee takes — a slow
// payments would pin every connection and stall every checkout, as in
// the lessons' pool-exhaustion outage. Every dependency here fails the
// test when it is called while the pool counts an open transaction
// (postgres.Counts.OpenTransactions).
func TestNoTransactionAcrossARemoteCall(t *testing.T) {
	pool := pgMigrated(t)
	store, err := orders.NewPGStore(pool)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := orders.NewPGKeys(pool)
	if err != nil {
		t.Fatal(err)
	}
	g := &txGuard{t: t, pool: pool}

	// The guard sees a transaction that is open: it can fail.
	if err := postgres.InTx(context.Background(), pool, func(pgx.Tx) error {
		if n := g.open(); n != 1 {
			t.Errorf("inside a transaction the guard saw %d open, want 1", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	// The delivery estimate and the audit event can run on goroutines of
	// their own, beside the checkout (criticality): such a call holds no
	// transaction of the checkout's, but a count of the pool's open
	// transactions taken when it starts can see the checkout's own final
	// write. So here every call is made in line, where the count is exact.
	log := &callLog{}
	for _, m := range []mode.Mode{mode.Naive, mode.Budgeted} {
		settings := settingsOf(m)
		settings.Mechanisms.Criticality = false
		svc, err := orders.NewService(orders.Deps{
			Store: store, Keys: keys,
			Catalog:  guardedCatalog{&fakeCatalog{log: log}, g},
			Payments: guardedPayments{&fakePayments{log: log}, g},
			Fraud:    guardedFraud{&fakeFraud{}, g},
			Shipping: guardedShipping{&fakeShipping{log: log}, g},
			Audit:    guardedAudit{&fakeAudit{}, g},
			Settings: mode.NewLive(settings), Log: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			t.Fatal(err)
		}
		req := request()
		req.IdempotencyKey = "key-" + string(m)
		if _, err := svc.PlaceOrder(context.Background(), req); err != nil {
			t.Fatalf("%s: checkout: %v", m, err)
		}
	}
	if n := g.checked(); n < 12 {
		t.Errorf("the dependencies were called %d times; the guard checked too little", n)
	}
}

// txGuard fails its test when a dependency is called with a transaction
// open on pool.
type txGuard struct {
	t     *testing.T
	pool  *pgxpool.Pool
	mu    sync.Mutex
	calls int
}

func (g *txGuard) checked() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls
}

func (g *txGuard) open() int64 { return postgres.CountsOf(g.pool).OpenTransactions }

func (g *txGuard) check(call string) {
	g.mu.Lock()
	g.calls++
	g.mu.Unlock()
	if n := g.open(); n != 0 {
		g.t.Errorf("%s called with %d transaction(s) open on orders' pool", call, n)
	}
}

type guardedCatalog struct {
	*fakeCatalog
	g *txGuard
}

func (c guardedCatalog) Reserve(ctx context.Context, orderID string, items []orders.Item) (orders.Reservation, error) {
	c.g.check("catalog.Reserve")
	return c.fakeCatalog.Reserve(ctx, orderID, items)
}

func (c guardedCatalog) Release(ctx context.Context, reservationID string) error {
	c.g.check("catalog.Release")
	return c.fakeCatalog.Release(ctx, reservationID)
}

type guardedPayments struct {
	*fakePayments
	g *txGuard
}

func (p guardedPayments) Charge(ctx context.Context, o orders.Order) (orders.Charge, error) {
	p.g.check("payments.Charge")
	return p.fakePayments.Charge(ctx, o)
}

func (p guardedPayments) Get(ctx context.Context, key string) (orders.Charge, error) {
	p.g.check("payments.Get")
	return p.fakePayments.Get(ctx, key)
}

func (p guardedPayments) Void(ctx context.Context, key string) (orders.Charge, error) {
	p.g.check("payments.Void")
	return p.fakePayments.Void(ctx, key)
}

type guardedFraud struct {
	*fakeFraud
	g *txGuard
}

func (f guardedFraud) Screen(ctx context.Context, o orders.Order) (orders.Screening, error) {
	f.g.check("payments.ScreenOrder")
	return f.fakeFraud.Screen(ctx, o)
}

type guardedShipping struct {
	*fakeShipping
	g *txGuard
}

func (s guardedShipping) Ship(ctx context.Context, o orders.Order) (string, error) {
	s.g.check("shipping.Ship")
	return s.fakeShipping.Ship(ctx, o)
}

func (s guardedShipping) Estimate(ctx context.Context, o orders.Order) (orders.DeliveryEstimate, error) {
	s.g.check("shipping.Estimate")
	return s.fakeShipping.Estimate(ctx, o)
}

type guardedAudit struct {
	*fakeAudit
	g *txGuard
}

func (a guardedAudit) Record(ctx context.Context, e orders.AuditEvent) error {
	a.g.check("payments.RecordAudit")
	return a.fakeAudit.Record(ctx, e)
}

func (a guardedAudit) RecordBatch(ctx context.Context, events []orders.AuditEvent) ([]error, error) {
	a.g.check("payments.RecordAudits")
	return a.fakeAudit.RecordBatch(ctx, events)
}
