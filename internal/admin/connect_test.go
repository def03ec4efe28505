package admin_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
)

// A mode switch fanned out to a peer whose address accepts nothing costs
// the connect timeout, not the call's whole 5 s.
func TestFanOutToAPeerThatAcceptsNothing(t *testing.T) {
	gone, err := faults.ListenNoAccept()
	if err != nil {
		t.Skip(err)
	}
	defer gone.Close()
	const connect = 300 * time.Millisecond
	live := mode.NewLive(mode.Settings{Mode: mode.Budgeted, Mechanisms: mode.Budgeted.Mechanisms()})
	gw := httptest.NewServer(admin.Handler(admin.Options{
		Service: "gateway", Settings: live, Faults: faults.NewInjector(faults.Set{}, live), Log: slog.New(slog.DiscardHandler),
		Peers: []admin.Peer{{Name: "orders", URL: "http://" + gone.Addr()}}, ConnectTimeout: connect,
	}))
	defer gw.Close()
	start := time.Now()
	resp, body := do(t, http.MethodPut, gw.URL+"/admin/mode", `{"mode":"naive"}`, "")
	took := time.Since(start)
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("status %d (%s), want 502 with the peer unreachable", resp.StatusCode, body)
	}
	if took < connect*8/10 || took > 3*connect {
		t.Errorf("the switch took %v, want about the connect timeout %v (the call's own timeout is 5 s)", took, connect)
	}
}
