package driver_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/lab/driver"
	"github.com/mercado-lab/mercado/lab/shop"
)

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// TestDriverArrangesARun drives the in-process shop as a load test does: it
// finds every service through the gateway, switches the whole shop, puts a
// fault in force on one service only, and reads what the services counted.
func TestDriverArrangesARun(t *testing.T) {
	ctx := context.Background()
	s, err := shop.Start(ctx, shop.EphemeralConfig(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	d, err := driver.Discover(ctx, s.GatewayURL()+"/", "http://"+s.Gateway.AdminAddr, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.Services(), []string{"catalog", "gateway", "orders", "payments", "shipping"}; !slices.Equal(got, want) {
		t.Fatalf("services = %v, want %v", got, want)
	}
	if d.URL() != s.GatewayURL() {
		t.Errorf("URL = %q, want %q", d.URL(), s.GatewayURL())
	}

	if err := d.Switch(ctx, mode.Naive, mode.Overrides{}, 0); err != nil {
		t.Fatal(err)
	}
	for _, p := range s.Processes() {
		var v struct{ Mode mode.Mode }
		getJSON(t, "http://"+p.AdminAddr+"/admin/mode", &v)
		if v.Mode != mode.Naive {
			t.Errorf("%s is in mode %q after the switch, want naive", p.Name, v.Mode)
		}
	}

	if err := d.SetFaults(ctx, map[string]string{"shipping": "CreateShipment:latency=1ms"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range s.Processes() {
		var v struct{ Faults map[string]json.RawMessage }
		getJSON(t, "http://"+p.AdminAddr+"/admin/faults", &v)
		_, has := v.Faults["CreateShipment"]
		if want := p.Name == "shipping"; has != want || len(v.Faults) > 1 {
			t.Errorf("%s faults = %v, want CreateShipment only on shipping", p.Name, v.Faults)
		}
	}
	if err := d.SetFaults(ctx, map[string]string{"warehouse": "X:latency=1ms"}); err == nil || !strings.Contains(err.Error(), "warehouse") {
		t.Errorf("faults for an unknown service: err = %v", err)
	}

	before, err := d.Counters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, s.GatewayURL()+"/api/checkout",
		strings.NewReader(`{"customer":"driver","items":[{"sku":"tea-sencha","qty":1}],"address":"1 Test Street"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "driver-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("checkout: HTTP %d", resp.StatusCode)
	}
	after, err := d.Counters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, svc := range []string{"orders", "catalog", "payments", "shipping"} {
		if after.Requests[svc] <= before.Requests[svc] {
			t.Errorf("%s requests %v then %v: the checkout was not counted", svc, before.Requests[svc], after.Requests[svc])
		}
	}
	if c, err := d.Charges(ctx); err != nil || c.Succeeded != 1 || c.Duplicates != 0 {
		t.Errorf("charges = %+v, %v; want one, no duplicate", c, err)
	}
	g, err := d.Gauges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := g.PoolInFlight["gateway/shared"]; !ok {
		t.Errorf("pool gauges = %v, want the naive gateway's shared pool", g.PoolInFlight)
	}
}
