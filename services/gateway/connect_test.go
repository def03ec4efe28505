package gateway_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/services/gateway"
)

// TestConnectTimeoutAtTheEdge points the gateway at an orders whose
// address accepts no connections (faults.NoAccept: the SYN goes
// unanswered) and checks out with a budget far longer than the connect
// timeout. Budgeted, the checkout is answered when the gateway's
// connection attempt runs out, within the connect timeout ± 20% of the
// gateway's start (it connects at start, so the attempt is that old), and
// the next one at once, while gRPC backs off; naive connects under gRPC's
// default of 20 s, and the checkout is still waiting at three times the
// connect timeout, when the test gives up on it.
func TestConnectTimeoutAtTheEdge(t *testing.T) {
	const connect = 500 * time.Millisecond
	for _, m := range []mode.Mode{mode.Budgeted, mode.Naive} {
		t.Run(string(m), func(t *testing.T) {
			orders, err := faults.ListenNoAccept()
			if err != nil {
				t.Skip(err)
			}
			defer orders.Close()
			cfg := gateway.DefaultConfig()
			cfg.Mode, cfg.ConnectTimeout, cfg.DrainTimeout = m, connect, time.Second
			cfg.Addr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
			cfg.OrdersAddr, cfg.CatalogAddr, cfg.AdminPeers = orders.Addr(), orders.Addr(), nil
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			start := time.Now()
			p, err := gateway.Start(ctx, cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { stop(); _ = p.Wait() }()

			patience := 3 * connect
			c := &http.Client{Timeout: patience}
			checkout := func(key string) (int, time.Duration, error) {
				req, _ := http.NewRequest(http.MethodPost, "http://"+p.Addr+"/api/checkout", strings.NewReader(oneTea))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", `"`+key+`"`)
				req.Header.Set("X-Deadline-Ms", "8000")
				began := time.Now()
				resp, err := c.Do(req)
				if err != nil {
					return 0, time.Since(began), err
				}
				resp.Body.Close()
				return resp.StatusCode, time.Since(began), nil
			}
			code, took, err := checkout("connect-1")
			sinceStart := time.Since(start)
			t.Logf("%s: %d %v after %v (%v since the gateway started)", m, code, err, took.Round(time.Millisecond), sinceStart.Round(time.Millisecond))
			if m == mode.Naive {
				var ne interface{ Timeout() bool }
				if !errors.As(err, &ne) || !ne.Timeout() || took < patience*9/10 {
					t.Errorf("naive checkout = %d, %v after %v, want it still waiting at %v", code, err, took, patience)
				}
				return
			}
			if err != nil || code != http.StatusServiceUnavailable {
				t.Fatalf("budgeted checkout = %d, %v, want 503 when the connect timeout runs out", code, err)
			}
			if lo, hi := connect*8/10, connect*12/10; sinceStart < lo || sinceStart > hi {
				t.Errorf("budgeted checkout answered %v after the gateway started connecting, want the connect timeout %v ± 20%%", sinceStart, connect)
			}
			code, took, err = checkout("connect-2")
			t.Logf("%s, next checkout: %d %v after %v", m, code, err, took.Round(time.Millisecond))
			if err != nil || code != http.StatusServiceUnavailable || took > connect/2 {
				t.Errorf("the next budgeted checkout = %d, %v after %v, want 503 at once while gRPC backs off", code, err, took)
			}
		})
	}
}
