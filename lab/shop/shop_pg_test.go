package shop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mercado-lab/mercado/internal/postgres/pgtest"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/lab/shop"
)

// pgShop is the shop running on a PostgreSQL database of its own.
type pgShop struct {
	*shop.Shop
	db     pgtest.Database
	client *http.Client
	stop   func()
}

// startPGShop starts the whole shop on a fresh database, or skips t when
// no PostgreSQL server is configured (MERCADO_TEST_DATABASE_URL).
func startPGShop(t *testing.T, cfg shop.Config) *pgShop {
	t.Helper()
	return startShopOn(t, cfg, pgtest.NewDatabase(t))
}

// startShopOn starts the whole shop on db; it stops when t ends, or
// earlier with Stop.
func startShopOn(t *testing.T, cfg shop.Config, db pgtest.Database) *pgShop {
	t.Helper()
	cfg.Shared.DatabaseURL, cfg.Shared.DBMaxConns = db.URL, 4
	s, err := shop.Start(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	stopped := false
	ps := &pgShop{Shop: s, db: db, client: &http.Client{Timeout: 10 * time.Second}}
	ps.stop = func() {
		if !stopped {
			stopped = true
			if err := s.Stop(); err != nil {
				t.Errorf("stop: %v", err)
			}
		}
	}
	t.Cleanup(ps.stop)
	return ps
}

// pgReply is the gateway's answer to one request.
type pgReply struct {
	status      int
	contentType string
	body        []byte
	took        time.Duration
}

func (s *pgShop) do(t *testing.T, method, path, key, body string) pgReply {
	t.Helper()
	req, err := http.NewRequest(method, s.GatewayURL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", `"`+key+`"`)
	}
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return pgReply{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: b, took: time.Since(start)}
}

func (s *pgShop) checkout(t *testing.T, key string) pgReply {
	t.Helper()
	return s.do(t, http.MethodPost, "/api/checkout", key,
		`{"customer":"pg","items":[{"sku":"mug-stoneware","qty":1}],"address":"1 Test Way"}`)
}

// readyz returns the status of a service's /readyz.
func (s *pgShop) readyz(t *testing.T, p *serve.Process) int {
	t.Helper()
	resp, err := s.client.Get("http://" + p.AdminAddr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// admin runs one statement on the server's maintenance database.
func (s *pgShop) admin(t *testing.T, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pgtest.Exec(t, ctx, s.db.AdminURL, sql, args...)
}

// TestShopOnPostgres: the whole shop on one database, one schema per
// service — a checkout lands in all four, and the shop started again on
// the same database finds it there.
func TestShopOnPostgres(t *testing.T) {
	s := startPGShop(t, shop.EphemeralConfig())
	r := s.checkout(t, "pg-1")
	if r.status != http.StatusCreated {
		t.Fatalf("checkout: %d %s", r.status, r.body)
	}
	var order struct {
		OrderID    string `json:"order_id"`
		Status     string `json:"status"`
		ChargeID   string `json:"charge_id"`
		ShipmentID string `json:"shipment_id"`
	}
	if err := json.Unmarshal(r.body, &order); err != nil {
		t.Fatal(err)
	}
	if order.Status != "confirmed" || order.ChargeID == "" || order.ShipmentID == "" {
		t.Errorf("order = %s, want confirmed with a charge and a shipment", r.body)
	}
	// The replay comes from the orders schema's key table.
	if again := s.checkout(t, "pg-1"); again.status != http.StatusCreated || !strings.Contains(string(again.body), order.OrderID) {
		t.Errorf("replay: %d %s, want the same order", again.status, again.body)
	}
	for _, p := range s.Processes() {
		if code := s.readyz(t, p); code != http.StatusOK {
			t.Errorf("%s /readyz = %d, want 200", p.Name, code)
		}
	}
	counts := countRows(t, s.db.URL)
	want := map[string]int64{"orders": 1, "keys": 1, "reservations": 1, "charges": 1, "shipments": 1, "stock_taken": 1}
	for k, v := range want {
		if counts[k] != v {
			t.Errorf("%s = %d, want %d (all rows: %v)", k, counts[k], v, counts)
		}
	}

	// Restarted on the same database: migrations and the seed find their
	// work done, and the order and the stock are still there.
	s.stop()
	s = startShopOn(t, shop.EphemeralConfig(), s.db)
	if r := s.do(t, http.MethodGet, "/api/orders/"+order.OrderID, "", ""); r.status != http.StatusOK || !strings.Contains(string(r.body), `"status":"confirmed"`) {
		t.Errorf("after a restart, GET order: %d %s", r.status, r.body)
	}
	if again := s.checkout(t, "pg-1"); again.status != http.StatusCreated || !strings.Contains(string(again.body), order.OrderID) {
		t.Errorf("after a restart, replay: %d %s, want the same order", again.status, again.body)
	}
	if r := s.do(t, http.MethodGet, "/api/products/mug-stoneware", "", ""); !strings.Contains(string(r.body), `"stock":999999`) {
		t.Errorf("after a restart, the mug: %s, want 999999 in stock", r.body)
	}
}

// TestShopSurvivesDatabaseOutage makes the database unreachable in the
// middle of a run, without stopping the shared server: connections to the
// shop's database are refused, and those it had are cut. Checkouts must
// then fail fast — 503 problem+json well within the budget, never a hang
// — with nothing half-written, /readyz must say the services are not
// ready, and once the database is back the shop must resume by itself.
func TestShopSurvivesDatabaseOutage(t *testing.T) {
	cfg := shop.EphemeralConfig()
	// The breakers may open during the outage; let them try again after a
	// second rather than the lesson's 30 s, so the test need not wait.
	res := serve.DefaultResilience()
	res.BreakerOpen = time.Second
	cfg.Shared.Resilience = res
	s := startPGShop(t, cfg)

	var confirmed []string
	checkoutOK := func(key string) {
		t.Helper()
		r := s.checkout(t, key)
		if r.status != http.StatusCreated {
			t.Fatalf("checkout %s: %d %s", key, r.status, r.body)
		}
		var o struct {
			OrderID string `json:"order_id"`
		}
		if err := json.Unmarshal(r.body, &o); err != nil || o.OrderID == "" {
			t.Fatalf("checkout %s: %s", key, r.body)
		}
		confirmed = append(confirmed, o.OrderID)
	}
	for i := range 5 {
		checkoutOK(fmt.Sprintf("before-%d", i))
	}

	// The outage.
	ident := pgx.Identifier{s.db.Name}.Sanitize()
	s.admin(t, "ALTER DATABASE "+ident+" ALLOW_CONNECTIONS false")
	// The shop's own connections: an autovacuum worker may be in the
	// database too, and only a superuser may end it.
	s.admin(t, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND usename = current_user", s.db.Name)
	restored := false
	restore := func() {
		if !restored {
			restored = true
			s.admin(t, "ALTER DATABASE "+ident+" ALLOW_CONNECTIONS true")
		}
	}
	t.Cleanup(restore)

	var slowest time.Duration
	for i := range 5 {
		r := s.checkout(t, fmt.Sprintf("during-%d", i))
		slowest = max(slowest, r.took)
		if i == 0 {
			t.Logf("a checkout during the outage: %d %s in %v: %s", r.status, r.contentType, r.took.Round(time.Millisecond), r.body)
		}
		if r.status != http.StatusServiceUnavailable {
			t.Errorf("checkout during the outage: %d %s, want 503", r.status, r.body)
		}
		if !strings.HasPrefix(r.contentType, "application/problem+json") {
			t.Errorf("checkout during the outage: Content-Type %q, want problem+json", r.contentType)
		}
		if r.took > 2*time.Second {
			t.Errorf("checkout during the outage took %v, want a fast failure (budget 1200 ms)", r.took)
		}
	}
	for _, p := range []*serve.Process{s.Orders, s.Catalog, s.Payments, s.Shipping} {
		if code := s.readyz(t, p); code != http.StatusServiceUnavailable {
			t.Errorf("%s /readyz during the outage = %d, want 503", p.Name, code)
		}
	}
	if code := s.readyz(t, s.Gateway); code != http.StatusOK {
		t.Errorf("gateway /readyz = %d, want 200: it keeps no state", code)
	}

	t.Logf("5 checkouts during the outage: the slowest answered in %v", slowest.Round(time.Millisecond))

	// The database is back: the services are ready again by themselves,
	// and checkouts succeed.
	restore()
	back := time.Now()
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range []*serve.Process{s.Orders, s.Catalog, s.Payments, s.Shipping} {
		for s.readyz(t, p) != http.StatusOK {
			if time.Now().After(deadline) {
				t.Fatalf("%s is not ready 10 s after the database came back", p.Name)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for i := 0; ; i++ {
		r := s.checkout(t, fmt.Sprintf("after-first-%d", i))
		if r.status == http.StatusCreated {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no checkout succeeds 10 s after the database came back: %d %s", r.status, r.body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("checkouts succeed again %v after the database came back", time.Since(back).Round(time.Millisecond))
	// The first success above is not in confirmed: its order is counted
	// below from the database.
	for i := range 5 {
		checkoutOK(fmt.Sprintf("after-%d", i))
	}

	// Every order the shop answered for is confirmed, and read back so.
	for _, id := range confirmed {
		r := s.do(t, http.MethodGet, "/api/orders/"+id, "", "")
		if r.status != http.StatusOK || !strings.Contains(string(r.body), `"status":"confirmed"`) {
			t.Errorf("GET order %s: %d %s, want confirmed", id, r.status, r.body)
		}
	}
	// Nothing half-written: every order in the database is in a final
	// state, and each schema holds exactly one row per confirmed order.
	counts := countRows(t, s.db.URL)
	n := counts["orders"]
	if n != int64(len(confirmed))+1 {
		t.Errorf("%d orders in the database, want %d: the outage's checkouts must leave none", n, len(confirmed)+1)
	}
	if counts["orders_not_final"] != 0 {
		t.Errorf("%d orders are not confirmed: %v", counts["orders_not_final"], counts)
	}
	for _, k := range []string{"keys", "reservations", "charges", "shipments", "stock_taken"} {
		if counts[k] != n {
			t.Errorf("%s = %d, want %d, one per order (all rows: %v)", k, counts[k], n, counts)
		}
	}
}

// countRows counts what the shop wrote, schema by schema.
func countRows(t *testing.T, databaseURL string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for name, q := range map[string]string{
		"orders":           `SELECT count(*) FROM orders.orders`,
		"orders_not_final": `SELECT count(*) FROM orders.orders WHERE status <> 'confirmed' OR shipment_status <> 'booked'`,
		"keys":             `SELECT count(*) FROM orders.idempotency_keys WHERE completed`,
		"keys_open":        `SELECT count(*) FROM orders.idempotency_keys WHERE NOT completed`,
		"reservations":     `SELECT count(*) FROM catalog.reservations WHERE NOT released`,
		"stock_taken":      `SELECT 1000000 - stock FROM catalog.products WHERE sku = 'mug-stoneware'`,
		"charges":          `SELECT count(*) FROM psp.charges WHERE status = 'succeeded'`,
		"shipments":        `SELECT count(*) FROM shipping.shipments`,
	} {
		out[name] = pgtest.QueryInt(t, databaseURL, q)
	}
	if out["keys_open"] != 0 {
		t.Errorf("%d idempotency keys are held with no answer", out["keys_open"])
	}
	return out
}
