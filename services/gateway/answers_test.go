package gateway_test

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/lab/shop"
	"github.com/mercado-lab/mercado/services/gateway"
)

// Every answer on a route is reported to the observer the console sets:
// its route group, its status, how long the gateway took, and the
// deadline its client gave (X-Deadline-Ms, else its class's default
// budget). A request on no route, or refused before routing, is not.
func TestAnswersAreReported(t *testing.T) {
	cfg := shop.EphemeralConfig()
	cfg.Shipping.Faults = faults.Set{sim.ShippingCreateShipment: {Latency: 100 * time.Millisecond}}
	var mu sync.Mutex
	var got []gateway.Answer
	cfg.Gateway.Console = func(_ context.Context, at gateway.Listening) http.Handler {
		at.Answers.Observe(func(a gateway.Answer) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, a)
		})
		return http.NotFoundHandler()
	}
	a, _ := startShopWith(t, cfg)
	began := time.Now()

	for _, tc := range []struct {
		name        string
		send        func() response
		route       string // "" when no answer is reported
		status      int
		deadline    time.Duration
		tookAtLeast time.Duration
	}{
		{"a checkout, with the client's deadline", func() response { return a.checkout(t, oneTea, map[string]string{"X-Deadline-Ms": "2500"}) },
			"checkout", http.StatusCreated, 2500 * time.Millisecond, 100 * time.Millisecond},
		{"the product list, with the interactive default", func() response { return a.get(t, "/api/products", nil) },
			"browse", http.StatusOK, cfg.Gateway.Budget, 0},
		{"an unknown product", func() response {
			return a.get(t, "/api/products/no-such-sku", map[string]string{"X-Deadline-Ms": "700"})
		},
			"browse", http.StatusNotFound, 700 * time.Millisecond, 0},
		{"an export, with the batch class's default", func() response {
			return a.get(t, "/api/catalog/export?page_size=4", map[string]string{"X-Request-Class": "batch"})
		}, "export", http.StatusOK, cfg.Gateway.Batch.Default, 0},
		{"an order's status", func() response { return a.get(t, "/api/orders/no-such-order", nil) },
			"status", http.StatusNotFound, cfg.Gateway.Budget, 0},
		{"no such route", func() response { return a.get(t, "/api/nothing", nil) }, "", http.StatusNotFound, 0, 0},
		{"a malformed deadline, refused before routing", func() response {
			return a.get(t, "/api/products", map[string]string{"X-Deadline-Ms": "soon"})
		}, "", http.StatusBadRequest, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			if r := tc.send(); r.code != tc.status {
				t.Fatalf("status %d, want %d (body %s)", r.code, tc.status, r.body)
			}
			// The observer runs as the handler returns, which may be
			// just after the client has read the answer.
			var seen []gateway.Answer
			wait := 2 * time.Second
			if tc.route == "" {
				wait = 200 * time.Millisecond
			}
			for end := time.Now().Add(wait); ; time.Sleep(10 * time.Millisecond) {
				mu.Lock()
				seen = slices.Clone(got)
				mu.Unlock()
				if len(seen) > 0 || time.Now().After(end) {
					break
				}
			}
			if tc.route == "" {
				if len(seen) != 0 {
					t.Fatalf("reported %+v, want nothing", seen)
				}
				return
			}
			if len(seen) != 1 {
				t.Fatalf("reported %+v, want one answer", seen)
			}
			x := seen[0]
			if x.Route != tc.route || x.Status != tc.status || x.Deadline != tc.deadline {
				t.Errorf("reported %s %d, deadline %v; want %s %d, deadline %v", x.Route, x.Status, x.Deadline, tc.route, tc.status, tc.deadline)
			}
			if x.At.Before(began) || x.Took < tc.tookAtLeast || x.Took > time.Since(x.At) {
				t.Errorf("reported arrival %v (the test began at %v), took %v: want an arrival in the test, at least %v taken, and no more than since",
					x.At, began, x.Took, tc.tookAtLeast)
			}
		})
	}
}
