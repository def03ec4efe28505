package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/netfault"
)

// newWire serves the wire's admin API for a Network with two links.
func newWire(t *testing.T, tok string) *httptest.Server {
	t.Helper()
	n := netfault.New()
	t.Cleanup(n.Close)
	for _, l := range []string{netfault.OrdersShipping, netfault.GatewayOrders} {
		if _, err := n.Add(l, "127.0.0.1:0", "127.0.0.1:1"); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(admin.NetworkHandler(admin.NetworkOptions{Network: n, Token: tok, Log: slog.New(slog.DiscardHandler)}))
	t.Cleanup(srv.Close)
	return srv
}

func linkFaults(t *testing.T, body string) map[string]string {
	t.Helper()
	var v struct {
		Links []struct {
			Link   string `json:"link"`
			Faults string `json:"faults"`
		} `json:"links"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	m := map[string]string{}
	for _, l := range v.Links {
		m[l.Link] = l.Faults
	}
	return m
}

func TestNetworkAPIListSetClear(t *testing.T) {
	srv := newWire(t, token)
	auth := map[string]string{"Authorization": "Bearer " + token}
	a := send(t, http.MethodGet, srv.URL+"/admin/network", "", nil)
	if got := linkFaults(t, a.body); a.code != 200 || got["orders-shipping"] != "none" || got["gateway-orders"] != "none" || len(got) != 2 {
		t.Fatalf("GET = %d %v, want both links with no faults", a.code, got)
	}
	a = send(t, http.MethodPut, srv.URL+"/admin/network/orders-shipping", "latency=300ms,jitter=20ms\n", auth)
	if got := linkFaults(t, a.body); a.code != 200 || got["orders-shipping"] != "latency=300ms,jitter=20ms" {
		t.Fatalf("PUT = %d %v", a.code, got)
	}
	send(t, http.MethodPut, srv.URL+"/admin/network/gateway-orders", "stall", auth)
	a = send(t, http.MethodDelete, srv.URL+"/admin/network/orders-shipping", "", auth)
	if got := linkFaults(t, a.body); got["orders-shipping"] != "none" || got["gateway-orders"] != "stall" {
		t.Fatalf("DELETE one link = %v, want only orders-shipping cleared", got)
	}
	a = send(t, http.MethodDelete, srv.URL+"/admin/network", "", auth)
	if got := linkFaults(t, a.body); got["gateway-orders"] != "none" {
		t.Fatalf("DELETE all = %v, want every link cleared", got)
	}
	if a := send(t, http.MethodGet, srv.URL+"/metrics", "", nil); a.code != 200 || !strings.Contains(a.body, `mercado_netfault_faults_set_total{kind="stall",link="gateway-orders"} 1`) {
		t.Errorf("metrics = %d %s, want the stall set counted", a.code, a.body)
	}
}

func TestNetworkAPIRefusals(t *testing.T) {
	srv := newWire(t, token)
	auth := map[string]string{"Authorization": "Bearer " + token}
	for _, tc := range []struct {
		name, method, path, body string
		header                   map[string]string
		code                     int
		detail                   string
	}{
		{"bad spec", http.MethodPut, "/admin/network/orders-shipping", "latency=fast", auth, 400, `spec: latency: "fast" is not a duration`},
		{"bad direction", http.MethodPut, "/admin/network/orders-shipping", "stall,direction=sideways", auth, 400, "spec: stall: direction:"},
		{"empty spec", http.MethodPut, "/admin/network/orders-shipping", "  ", auth, 400, "spec: the body is empty"},
		{"unknown link", http.MethodPut, "/admin/network/orders-fraud", "stall", auth, 404, "want one of " + netfault.LinkList()},
		{"link not proxied", http.MethodDelete, "/admin/network/orders-payments", "", auth, 404, "this proxy has gateway-orders, orders-shipping"},
		{"no token", http.MethodPut, "/admin/network/orders-shipping", "stall", nil, 401, "admin token"},
		{"wrong token", http.MethodDelete, "/admin/network", "", map[string]string{"Authorization": "Bearer nope"}, 401, "admin token"},
		{"wrong method", http.MethodPost, "/admin/network", "", auth, 405, "POST is not allowed"},
		{"no such route", http.MethodGet, "/admin/nothing", "", nil, 404, "no such admin route"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkProblem(t, send(t, tc.method, srv.URL+tc.path, tc.body, tc.header), tc.code, tc.detail)
		})
	}
	// Nothing refused changed anything.
	if got := linkFaults(t, send(t, http.MethodGet, srv.URL+"/admin/network", "", nil).body); got["orders-shipping"] != "none" {
		t.Errorf("after the refusals orders-shipping has %q", got["orders-shipping"])
	}
}

func TestNetworkClient(t *testing.T) {
	srv := newWire(t, token)
	c := admin.Client{URL: srv.URL, Token: token}
	spec, _ := netfault.Parse("bandwidth=64,direction=up")
	v, err := c.SetNetwork(context.Background(), netfault.OrdersShipping, spec)
	if err != nil || v.Links[1].Faults.String() != "bandwidth=64,direction=up" {
		t.Fatalf("SetNetwork = %+v, %v", v, err)
	}
	if v, err = c.ClearNetwork(context.Background(), ""); err != nil || len(v.Links[1].Faults) != 0 {
		t.Fatalf("ClearNetwork = %+v, %v", v, err)
	}
	_, err = c.SetNetwork(context.Background(), "orders-fraud", spec)
	var serr *admin.StatusError
	if !errors.As(err, &serr) || serr.Status != 404 {
		t.Fatalf("SetNetwork on an unknown link = %v, want a 404", err)
	}
}
