package shop_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/lab/shop"
)

// fragileShop starts the shop in the fragile mode with the given
// overrides, shipping's booking hung for an hour, and a short drain, so
// that stopping it is bounded by the drains and not by the hang.
func fragileShop(t *testing.T, overrides string) *shop.Shop {
	t.Helper()
	cfg := shop.EphemeralConfig()
	cfg.Shared.Mode = mode.Fragile
	if err := cfg.Shared.Overrides.Set(overrides); err != nil {
		t.Fatal(err)
	}
	cfg.Shared.DrainTimeout = 300 * time.Millisecond
	cfg.Shipping.Faults = faults.Set{"CreateShipment": {Hang: time.Hour}}
	s, err := shop.Start(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A fragile checkout against a dependency that never answers waits: no
// timeout fires anywhere, not at orders, not at the gateway, not at the
// edge's HTTP server. Only the harness ends it: Stop drains each tier
// for its drain timeout, then cuts off the work still in flight, and
// returns within a few seconds although the checkout would wait an hour.
func TestFragileCheckoutWaitsUntilStopped(t *testing.T) {
	t.Parallel()
	const stillWaiting = 4 * time.Second
	s := fragileShop(t, "")
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = s.Stop()
		}
	})

	reply := make(chan drainReply, 1)
	go func() {
		reply <- drainSend(&http.Client{Timeout: drainBound}, http.MethodPost, s.GatewayURL()+"/api/checkout", "fragile-hung", checkoutBody)
	}()
	waitUntil(t, "the booking to be in flight at shipping", func() bool {
		return poolInFlight(t, s.Shipping.AdminAddr, "shared") > 0
	})
	select {
	case r := <-reply:
		t.Fatalf("the checkout answered %d %s (err %v) while shipping hangs: a timeout fired", r.status, r.body, r.err)
	case <-time.After(stillWaiting):
	}
	if hasCapGauge(t, s.Orders.AdminAddr, "shipping") {
		t.Error("orders exports a cap for shipping in the fragile mode, which has none")
	}
	if n := poolInFlight(t, s.Orders.AdminAddr, "shared"); n != 1 {
		t.Errorf("orders has %v requests in flight after %v, want the checkout still waiting there", n, stillWaiting)
	}

	start := time.Now()
	stopped = true
	if err := s.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	// Three tiers, each drained for 300 ms then cut off: seconds, not
	// the hour the booking hangs.
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Stop took %v with a checkout hung at shipping, want a few seconds", took)
	}
	select {
	case r := <-reply:
		if r.err == nil && r.status < 500 {
			t.Errorf("the cut-off checkout = %d %s, want no answer or a 5xx", r.status, r.body)
		}
	case <-time.After(drainBound):
		t.Fatal("the checkout still waits after the shop stopped")
	}
}

// The same shop with caps=on (stage 1 of armouring it): the booking is
// cut at shipping's cap, and the checkout answers 504 at about that cap
// (retries off, so one attempt is measured).
func TestFragileWithCapsAnswersAtTheCap(t *testing.T) {
	s := fragileShop(t, "caps=on,retries=off")
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	if !hasCapGauge(t, s.Orders.AdminAddr, "shipping") {
		t.Error("orders exports no mercado_hop_cap_seconds for shipping with caps on")
	}
	start := time.Now()
	r := drainSend(&http.Client{Timeout: drainBound}, http.MethodPost, s.GatewayURL()+"/api/checkout", "fragile-capped", checkoutBody)
	took := time.Since(start)
	if r.err != nil || r.status != http.StatusGatewayTimeout {
		t.Fatalf("checkout = %d %s (err %v), want 504 at shipping's cap", r.status, r.body, r.err)
	}
	// A generous bound over the 300 ms cap: the rest of the chain takes
	// milliseconds, and a busy machine may add a second.
	cap := shop.EphemeralConfig().Orders.ShippingCap
	if took < cap || took > cap+3*time.Second {
		t.Errorf("the capped checkout took %v, want about shipping's %v cap", took, cap)
	}
}

// hasCapGauge reports whether a service's /metrics has
// mercado_hop_cap_seconds for dep: the cap in force on its calls.
func hasCapGauge(t *testing.T, adminAddr, dep string) bool {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + adminAddr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "mercado_hop_cap_seconds{") && strings.Contains(line, `dep="`+dep+`"`) {
			return true
		}
	}
	return false
}
