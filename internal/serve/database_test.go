package serve_test

import (
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/postgres/pgtest"
	"github.com/mercado-lab/mercado/internal/serve"
)

// /readyz answers 503 while the readiness check fails and 200 again once
// it passes; the closers run once, last registered first, after the
// process stopped.
func TestReadinessAndClosers(t *testing.T) {
	kit, err := serve.NewKit("web", common(mode.Budgeted), serve.KitOptions{}, discard)
	if err != nil {
		t.Fatal(err)
	}
	var down atomic.Bool
	kit.SetReadiness(func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("the readiness check has no deadline")
		}
		if down.Load() {
			return errors.New("the database is unavailable")
		}
		return nil
	})
	var (
		mu     sync.Mutex
		closed []string
	)
	closer := func(name string) func() {
		return func() {
			mu.Lock()
			defer mu.Unlock()
			closed = append(closed, name)
		}
	}
	kit.OnClose(closer("pool"))
	kit.OnClose(closer("workers"))

	ctx, cancel := context.WithCancel(context.Background())
	p, err := serve.StartHTTP(ctx, kit, http.NotFoundHandler())
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	web := newHTTPClient(t)
	readyz := "http://" + p.AdminAddr + "/readyz"
	if code, body := get(t, web, readyz); code != http.StatusOK || body != "ready\n" {
		t.Errorf("/readyz = %d %q, want 200 ready", code, body)
	}
	down.Store(true)
	if code, body := get(t, web, readyz); code != http.StatusServiceUnavailable || !strings.Contains(body, "database is unavailable") {
		t.Errorf("/readyz with the check failing = %d %q, want 503 and why", code, body)
	}
	if code, _ := get(t, web, "http://"+p.AdminAddr+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz with the check failing = %d, want 200: the process is alive", code)
	}
	down.Store(false)
	if code, _ := get(t, web, readyz); code != http.StatusOK {
		t.Errorf("/readyz once the check passes again = %d, want 200", code)
	}
	mu.Lock()
	if len(closed) != 0 {
		t.Errorf("closers ran while serving: %v", closed)
	}
	mu.Unlock()

	cancel()
	if err := waitStopped(t, p); err != nil {
		t.Fatal(err)
	}
	kit.Close() // again: nothing more happens
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(closed, ","); got != "workers,pool" {
		t.Errorf("closers ran as %q, want workers,pool (last registered first, once)", got)
	}
}

// A process that cannot listen runs its closers at once: nothing leaks.
func TestClosersRunWhenStartFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c := common(mode.Budgeted)
	c.Addr = ln.Addr().String() // taken
	kit, err := serve.NewKit("web", c, serve.KitOptions{}, discard)
	if err != nil {
		t.Fatal(err)
	}
	var closed atomic.Int32
	kit.OnClose(func() { closed.Add(1) })
	if _, err := serve.StartHTTP(context.Background(), kit, http.NotFoundHandler()); err == nil {
		t.Fatal("StartHTTP on a taken address succeeded")
	}
	if n := closed.Load(); n != 1 {
		t.Errorf("closers ran %d times, want 1", n)
	}
}

func TestDatabaseFlags(t *testing.T) {
	c := serve.Defaults(":1", "127.0.0.1:2")
	if c.DatabaseURL != "" || c.DBMaxConns != serve.DefaultDBMaxConns {
		t.Errorf("defaults: database %q, %d conns; want none and %d", c.DatabaseURL, c.DBMaxConns, serve.DefaultDBMaxConns)
	}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.RegisterFlags(fs)
	url := "postgres://mercado:mercado@127.0.0.1:5432/mercado?sslmode=disable"
	if err := fs.Parse([]string{"--database-url=" + url, "--db-max-conns=6"}); err != nil {
		t.Fatal(err)
	}
	if c.DatabaseURL != url || c.DBMaxConns != 6 {
		t.Errorf("parsed: %q, %d", c.DatabaseURL, c.DBMaxConns)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*serve.Common)
		want   string
	}{
		{"no connections", func(c *serve.Common) { c.DBMaxConns = 0 }, "db-max-conns:"},
		{"a URL that does not parse", func(c *serve.Common) { c.DatabaseURL = "postgres://u:s3cret@h:port/db" }, "database-url:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := c
			tc.change(&bad)
			err := bad.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}

// OpenDatabase opens the pool, runs the migration, checks the database in
// /readyz and closes the pool with the kit.
func TestOpenDatabase(t *testing.T) {
	db := pgtest.NewDatabase(t)
	c := common(mode.Budgeted)
	c.DatabaseURL = db.URL
	kit, err := serve.NewKit("web", c, serve.KitOptions{}, discard)
	if err != nil {
		t.Fatal(err)
	}
	migrated := false
	pool, err := kit.OpenDatabase(context.Background(), func(ctx context.Context, pool *pgxpool.Pool) error {
		migrated = true
		_, err := pool.Exec(ctx, "CREATE TABLE t (id int)")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !migrated {
		t.Error("the migration did not run")
	}
	ctx, cancel := context.WithCancel(context.Background())
	p, err := serve.StartHTTP(ctx, kit, http.NotFoundHandler())
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if code, body := get(t, newHTTPClient(t), "http://"+p.AdminAddr+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz = %d %q, want 200", code, body)
	}
	cancel()
	if err := waitStopped(t, p); err != nil {
		t.Fatal(err)
	}
	if err := pool.Ping(context.Background()); err == nil {
		t.Error("the pool is still open after the process stopped")
	}

	failing, err := serve.NewKit("web", c, serve.KitOptions{}, discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := failing.OpenDatabase(context.Background(), func(context.Context, *pgxpool.Pool) error {
		return errors.New("bad migration")
	}); err == nil || !strings.Contains(err.Error(), "bad migration") {
		t.Errorf("OpenDatabase with a failing migration = %v", err)
	}
	failing.Close()
}
