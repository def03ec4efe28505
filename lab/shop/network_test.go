package shop_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/netfault"
	"github.com/mercado-lab/mercado/lab/shop"
)

// TestNetworkPutsAProxyOnEveryLink: with the network on, every caller
// reaches its callee through a proxy of its own, and the wire's admin
// API lists them; off, there is none.
func TestNetworkPutsAProxyOnEveryLink(t *testing.T) {
	off := startShop(t, shop.EphemeralConfig())
	if off.Network != nil || off.Netproxy != nil {
		t.Fatal("a shop without Config.Network has proxies")
	}
	cfg := shop.EphemeralConfig()
	cfg.Network = true
	s := startShop(t, cfg)
	upstream := map[string]string{
		netfault.GatewayOrders: s.Orders.Addr, netfault.GatewayCatalog: s.Catalog.Addr, netfault.OrdersCatalog: s.Catalog.Addr,
		netfault.OrdersPayments: s.Payments.Addr, netfault.OrdersShipping: s.Shipping.Addr,
	}
	v, err := admin.Client{URL: "http://" + s.Netproxy.AdminAddr}.Network(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Links) != len(netfault.Links()) {
		t.Fatalf("the wire lists %d links, want %d: %+v", len(v.Links), len(netfault.Links()), v.Links)
	}
	for _, l := range v.Links {
		if l.Upstream != upstream[l.Name] {
			t.Errorf("%s forwards to %s, want %s", l.Name, l.Upstream, upstream[l.Name])
		}
	}
	if resp, body, _ := checkout(t, s.GatewayURL(), ""); resp.StatusCode != http.StatusCreated {
		t.Fatalf("checkout through the proxies: %d %s", resp.StatusCode, body)
	}
}

// TestStalledShippingLink is the network's stall between orders and
// shipping, in the fragile and the budgeted presets. The connection
// orders holds to shipping stops carrying data, and its socket stays
// open: nothing but a deadline ends the wait. Fragile has none (no read
// cap, no budget), and the checkout waits until the client gives up (the
// harness, at 3 s); budgeted answers within the checkout's 1 s deadline
// (the shipment left to the outbox).
func TestStalledShippingLink(t *testing.T) {
	t.Parallel()
	const deadline = time.Second
	const harness = 3 * time.Second
	for _, m := range []mode.Mode{mode.Fragile, mode.Budgeted} {
		t.Run(string(m), func(t *testing.T) {
			cfg := shop.EphemeralConfig()
			cfg.Network = true
			cfg.Shared.Mode = m
			cfg.Shared.DrainTimeout = 200 * time.Millisecond // the fragile call to shipping never ends
			s := startShop(t, cfg)
			// One checkout first: orders' connection to shipping is open
			// and in use when the stall comes.
			if resp, body, _ := checkout(t, s.GatewayURL(), ""); resp.StatusCode != http.StatusCreated {
				t.Fatalf("checkout before the stall: %d %s", resp.StatusCode, body)
			}
			spec, _ := netfault.Parse("stall")
			if err := s.Network.Set(netfault.OrdersShipping, spec); err != nil {
				t.Fatal(err)
			}

			ctx, cancel := context.WithTimeout(context.Background(), harness)
			defer cancel()
			start := time.Now()
			a, err := postCheckout(ctx, http.DefaultClient, s.GatewayURL(), fmt.Sprintf("stall-%s", m), checkoutBody, fmt.Sprint(deadline.Milliseconds()))
			took := time.Since(start)
			if m == mode.Fragile {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("fragile checkout over a stalled link: %d %s after %v (%v); want it still waiting when the harness gave up at %v",
						a.code, a.body, took, err, harness)
				}
				return
			}
			if err != nil {
				t.Fatalf("budgeted checkout over a stalled link: %v after %v, want an answer within its %v deadline", err, took, deadline)
			}
			// The shipment is the outbox's to retry (201, shipment pending),
			// or the checkout fails in time (504/503): either way an answer.
			if a.code != http.StatusCreated && a.code != http.StatusGatewayTimeout && a.code != http.StatusServiceUnavailable {
				t.Errorf("budgeted checkout: %d %s, want 201 with the shipment pending, or 504 or 503", a.code, a.body)
			}
			// Generous: the answer must come at the deadline, not at the
			// harness's end; a busy machine may add a few hundred ms.
			if took > deadline+700*time.Millisecond {
				t.Errorf("budgeted checkout answered after %v, want within about its %v deadline", took, deadline)
			}
		})
	}
}
