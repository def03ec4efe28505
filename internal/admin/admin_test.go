package admin_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
)

func newAPI(t *testing.T, token string, peers ...admin.Peer) (*httptest.Server, *mode.Live, *faults.Injector) {
	t.Helper()
	live := mode.NewLive(mode.Settings{Mode: mode.Budgeted, Mechanisms: mode.Budgeted.Mechanisms(), Margin: 3 * time.Millisecond, Workers: 200})
	inj := faults.NewInjector(faults.Set{}, live)
	srv := httptest.NewServer(admin.Handler(admin.Options{
		Service: "payments", Settings: live, Faults: inj, Token: token, Peers: peers, Log: slog.New(slog.DiscardHandler),
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "# metrics\n") }),
	}))
	t.Cleanup(srv.Close)
	return srv, live, inj
}

func do(t *testing.T, method, url, body, token string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func TestChangesNeedTheTokenReadsDoNot(t *testing.T) {
	srv, live, _ := newAPI(t, "s3cret")
	for _, tc := range []struct {
		name, method, path, body, token string
		want                            int
	}{
		{"read mode", http.MethodGet, "/admin/mode", "", "", 200},
		{"read faults", http.MethodGet, "/admin/faults", "", "", 200},
		{"read metrics", http.MethodGet, "/metrics", "", "", 200},
		{"switch without token", http.MethodPut, "/admin/mode", `{"mode":"naive"}`, "", 401},
		{"switch with a wrong token", http.MethodPut, "/admin/mode", `{"mode":"naive"}`, "guess", 401},
		{"fault without token", http.MethodPut, "/admin/faults/CreateCharge", `{"latency":"1s"}`, "", 401},
		{"clear without token", http.MethodDelete, "/admin/faults", "", "", 401},
		{"switch with the token", http.MethodPut, "/admin/mode", `{"mode":"naive"}`, "s3cret", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, tc.method, srv.URL+tc.path, tc.body, tc.token)
			if resp.StatusCode != tc.want {
				t.Fatalf("%d %s, want %d", resp.StatusCode, body, tc.want)
			}
			if tc.want == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
	if got := live.Load().Mode; got != mode.Naive {
		t.Errorf("mode %s after the authorised switch, want naive", got)
	}
}

func TestModeSwitchAppliesOverridesAndTellsListeners(t *testing.T) {
	srv, live, _ := newAPI(t, "")
	switched := 0
	live.OnSwitch(func(mode.Settings) { switched++ })
	resp, body := do(t, http.MethodPut, srv.URL+"/admin/mode", `{"mode":"budgeted","mechanisms":{"breakers":false,"retries":"naive"}}`, "")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	var v admin.ModeView
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	if v.Mode != mode.Budgeted || v.Mechanisms.Breakers || v.Mechanisms.Retries != mode.RetriesNaive || !v.Mechanisms.Bulkheads {
		t.Errorf("effective settings %+v", v)
	}
	if switched != 1 {
		t.Errorf("listeners ran %d times, want 1", switched)
	}
	for _, bad := range []string{`{"mode":"reckless"}`, `{"mode":"naive","mechanisms":{"retries":"often"}}`, `{"mode":"naive","extra":1}`, `not json`} {
		if resp, body := do(t, http.MethodPut, srv.URL+"/admin/mode", bad, ""); resp.StatusCode != 400 || !strings.Contains(resp.Header.Get("Content-Type"), "problem+json") {
			t.Errorf("%s: %d %s, want 400 problem+json", bad, resp.StatusCode, body)
		}
	}
}

// A switch may size the worker pools, as --workers does at start; one that
// names no size goes back to the size the service started with.
func TestModeSwitchSizesThePools(t *testing.T) {
	srv, live, _ := newAPI(t, "")
	started := live.Load().Workers
	for _, tc := range []struct {
		body string
		want int
	}{
		{`{"mode":"naive","workers":50}`, 50},
		{`{"mode":"budgeted"}`, started},
	} {
		resp, body := do(t, http.MethodPut, srv.URL+"/admin/mode", tc.body, "")
		var v admin.ModeView
		if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &v) != nil {
			t.Fatalf("%s: %d %s", tc.body, resp.StatusCode, body)
		}
		if v.Workers != tc.want || live.Load().Workers != tc.want {
			t.Errorf("%s: the view shows %d workers, the settings %d; want %d", tc.body, v.Workers, live.Load().Workers, tc.want)
		}
	}
}

func TestFaults(t *testing.T) {
	srv, _, inj := newAPI(t, "")
	if resp, body := do(t, http.MethodPut, srv.URL+"/admin/faults/CreateCharge", `{"hang":"10s"}`, ""); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if got := inj.Spec("CreateCharge").Hang; got != 10*time.Second {
		t.Errorf("hang = %v, want 10s", got)
	}
	for _, tc := range []struct{ path, body string }{
		{"/admin/faults/CreateCharge", `{"p50":"1s"}`},
		{"/admin/faults/CreateCharge", `{"error_rate":2}`},
		{"/admin/faults/CreateCharge", `{"latency":"soon"}`},
		{"/admin/faults/Bad-Name", `{"latency":"1s"}`},
		{"/admin/faults", `{"":{"latency":"1s"}}`},
	} {
		if resp, body := do(t, http.MethodPut, srv.URL+tc.path, tc.body, ""); resp.StatusCode != 400 {
			t.Errorf("PUT %s %s: %d %s, want 400", tc.path, tc.body, resp.StatusCode, body)
		}
	}
	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/admin/faults/CreateCharge", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "text/plain")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 415 {
		t.Errorf("text/plain body: %v %v, want 415", resp.StatusCode, err)
	}
	if resp, _ := do(t, http.MethodDelete, srv.URL+"/admin/faults", "", ""); resp.StatusCode != 200 || inj.Spec("CreateCharge").Hang != 0 {
		t.Errorf("clear: %d, hang %v", resp.StatusCode, inj.Spec("CreateCharge").Hang)
	}
}

// TestGatewayFansOut: a switch at the gateway reaches every peer and
// reports each one's result; an unreachable peer makes it a 502.
func TestGatewayFansOut(t *testing.T) {
	peer, peerLive, _ := newAPI(t, "tok")
	gw, _, _ := newAPI(t, "tok", admin.Peer{Name: "orders", URL: peer.URL}, admin.Peer{Name: "gone", URL: "http://127.0.0.1:1"})
	resp, body := do(t, http.MethodPut, gw.URL+"/admin/mode", `{"mode":"naive"}`, "tok")
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("status %d, want 502 with one peer down", resp.StatusCode)
	}
	var out struct {
		Services []admin.PeerResult `json:"services"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Services) != 3 || !out.Services[0].OK || !out.Services[1].OK || out.Services[2].OK {
		t.Errorf("results = %+v", out.Services)
	}
	if peerLive.Load().Mode != mode.Naive {
		t.Error("the peer was not switched")
	}
}

// The fragile mode switches the whole shop through the gateway like the
// others, with its overrides: here its caps back on (stage 1).
func TestGatewayFansOutFragile(t *testing.T) {
	peer, peerLive, _ := newAPI(t, "tok")
	gw, gwLive, _ := newAPI(t, "tok", admin.Peer{Name: "orders", URL: peer.URL})
	resp, body := do(t, http.MethodPut, gw.URL+"/admin/mode", `{"mode":"fragile","mechanisms":{"caps":true}}`, "tok")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	for name, live := range map[string]*mode.Live{"gateway": gwLive, "orders": peerLive} {
		s := live.Load()
		if s.Mode != mode.Fragile || !s.Mechanisms.Caps || s.Mechanisms.ConnectTimeout || s.Mechanisms.EdgeDeadline {
			t.Errorf("%s: %s %+v, want fragile with its caps on and nothing else", name, s.Mode, s.Mechanisms)
		}
	}
}
