package admin_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/sim"
)

// The client reads and changes everything the admin API offers, with the
// token where changes need it.
func TestClient(t *testing.T) {
	ctx := context.Background()
	srv, live, inj := newAPI(t, "tok")
	c := admin.Client{URL: srv.URL + "/", Token: "tok"}

	v, err := c.Mode(ctx)
	if err != nil || v.Service != "payments" || v.Mode != mode.Budgeted {
		t.Fatalf("Mode = %+v, %v; want payments in budgeted mode", v, err)
	}
	res, err := c.Switch(ctx, admin.ModeChange{Mode: mode.Naive, Mechanisms: mode.Overrides{Breakers: new(true)}})
	if err != nil || len(res) != 1 || !res[0].OK || res[0].Settings == nil || res[0].Settings.Mode != mode.Naive {
		t.Errorf("Switch of a service without peers = %+v, %v; want its own result, naive", res, err)
	}
	if s := live.Load(); s.Mode != mode.Naive || !s.Mechanisms.Breakers {
		t.Errorf("settings after Switch = %+v, want naive with breakers on", s)
	}
	if v, err := c.SwitchSelf(ctx, admin.ModeChange{Mode: mode.Budgeted}); err != nil || v.Mode != mode.Budgeted {
		t.Errorf("SwitchSelf = %+v, %v; want budgeted", v, err)
	}

	if _, err := c.SetFaults(ctx, faults.Set{sim.PaymentsCreateCharge: {Latency: 5 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	if got := inj.Spec(sim.PaymentsCreateCharge).Latency; got != 5*time.Millisecond {
		t.Errorf("latency after SetFaults = %v, want 5ms", got)
	}
	if _, err := c.SetFault(ctx, sim.PaymentsCreateCharge, faults.Spec{Hang: time.Second}); err != nil {
		t.Fatal(err)
	}
	if f, err := c.Faults(ctx); err != nil || f.Faults[sim.PaymentsCreateCharge].Hang != time.Second {
		t.Errorf("Faults = %+v, %v; want CreateCharge hanging 1s", f, err)
	}
	if f, err := c.ClearFaults(ctx, sim.PaymentsCreateCharge); err != nil || len(f.Faults) != 0 {
		t.Errorf("ClearFaults(CreateCharge) = %+v, %v; want none left", f, err)
	}
	if _, err := c.SetFaults(ctx, faults.Set{faults.AllMethods: {Delay: time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	if f, err := c.ClearFaults(ctx, faults.AllMethods); err != nil || len(f.Faults) != 0 {
		t.Errorf("ClearFaults(*) = %+v, %v; want none left", f, err)
	}

	if peers, err := c.Peers(ctx); err != nil || len(peers) != 0 {
		t.Errorf("Peers = %v, %v; want none", peers, err)
	}
	if fams, err := c.Metrics(ctx); err != nil || fams == nil {
		t.Errorf("Metrics = %v, %v", fams, err)
	}
}

// A refusal is a *StatusError with the problem's detail; a call nothing
// answers wraps ErrNoAnswer.
func TestClientErrors(t *testing.T) {
	ctx := context.Background()
	srv, _, _ := newAPI(t, "tok")

	_, err := admin.Client{URL: srv.URL}.SetFaults(ctx, faults.Set{})
	var serr *admin.StatusError
	if !errors.As(err, &serr) || serr.Status != http.StatusUnauthorized || serr.Detail != "changes need the admin token: Authorization: Bearer <token>" {
		t.Errorf("a change without the token: %v, want a 401 StatusError with the problem's detail", err)
	}
	if want := "PUT /admin/faults: HTTP 401: changes need the admin token: Authorization: Bearer <token>"; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
	if _, err := (admin.Client{URL: srv.URL, Token: "tok"}).SetFault(ctx, "NoSuchMethod", faults.Spec{}); !errors.As(err, &serr) || serr.Status != http.StatusBadRequest {
		t.Errorf("an unknown method: %v, want a 400 StatusError", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	if _, err := (admin.Client{URL: closed}).Mode(ctx); !errors.Is(err, admin.ErrNoAnswer) {
		t.Errorf("a call to a closed port: %v, want ErrNoAnswer", err)
	}
}

// At the gateway, Switch reports every service's result, also when one
// failed; the error says so.
func TestClientSwitchAtTheGateway(t *testing.T) {
	peer, peerLive, _ := newAPI(t, "tok")
	gw, _, _ := newAPI(t, "tok", admin.Peer{Name: "orders", URL: peer.URL}, admin.Peer{Name: "gone", URL: "http://127.0.0.1:1"})
	res, err := admin.Client{URL: gw.URL, Token: "tok"}.Switch(context.Background(), admin.ModeChange{Mode: mode.Naive})
	var serr *admin.StatusError
	if !errors.As(err, &serr) || serr.Status != http.StatusBadGateway {
		t.Errorf("error = %v, want a 502 StatusError", err)
	}
	if len(res) != 3 || !res[0].OK || !res[1].OK || res[2].OK || res[2].Error == "" {
		t.Errorf("results = %+v, want payments and orders switched, gone failed with its reason", res)
	}
	if peerLive.Load().Mode != mode.Naive {
		t.Error("the peer was not switched")
	}
}
