package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/problem"
	"github.com/mercado-lab/mercado/lab/console"
	"github.com/mercado-lab/mercado/lab/shop"
	"github.com/mercado-lab/mercado/loadtest"
)

// startShop runs the embedded shop on free ports with the console on its
// gateway's admin listener, as mercado lab console does, and returns the
// console's base URL.
func startShop(t *testing.T, cfg shop.Config) (*shop.Shop, string) {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	cfg.Gateway.Console = console.Gateway(log)
	s, err := shop.Start(context.Background(), cfg, log)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return s, "http://" + s.Gateway.AdminAddr + "/console/"
}

// call sends one request to the console and returns its status, content
// type and body.
func call(t *testing.T, method, url, token, contentType, body string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}

// events opens the console's event stream for up to limit, closed when
// the test ends, and returns its Content-Type and a reader of its events.
func events(t *testing.T, base string, limit time.Duration) (string, *bufio.Reader) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp.Header.Get("Content-Type"), bufio.NewReader(resp.Body)
}

// traceCheckout sends one traced checkout through the console's API,
// with body, and returns it as the console answered.
func traceCheckout(t *testing.T, base, body string) console.Checkout {
	t.Helper()
	status, _, b := call(t, http.MethodPost, base+"api/checkout", "", "application/json", body)
	var co console.Checkout
	if status != http.StatusOK || json.Unmarshal(b, &co) != nil {
		t.Fatalf("POST api/checkout = %d %s", status, b)
	}
	return co
}

func TestPageAndAssetsAreServedFromTheBinary(t *testing.T) {
	_, base := startShop(t, shop.EphemeralConfig())
	for _, tc := range []struct{ path, wantType, wantText string }{
		{"", "text/html", `<script src="static/console.js"`},
		{"static/console.js", "javascript", "new EventSource(\"events\")"},
		{"static/console.css", "text/css", "--vermillion"},
	} {
		status, ctype, body := call(t, http.MethodGet, base+tc.path, "", "", "")
		if status != http.StatusOK || !strings.Contains(ctype, tc.wantType) || !strings.Contains(string(body), tc.wantText) {
			t.Errorf("GET /console/%s = %d %s, want 200 %s holding %q", tc.path, status, ctype, tc.wantType, tc.wantText)
		}
	}
	// Nothing in the page or its assets names another host: it works
	// offline.
	for _, path := range []string{"", "static/console.js", "static/console.css"} {
		_, _, body := call(t, http.MethodGet, base+path, "", "", "")
		for _, bad := range []string{"http://", "https://", "//cdn", "@import"} {
			if strings.Contains(strings.ReplaceAll(string(body), "http://www.w3.org/2000/svg", ""), bad) {
				t.Errorf("/console/%s holds %q: the page must load nothing from elsewhere", path, bad)
			}
		}
	}
}

// The event stream is server-sent events: each event a name and one data
// line of JSON, ended by a blank line; the first is a tick with the
// whole state.
func TestEventsAreServerSentEvents(t *testing.T) {
	_, base := startShop(t, shop.EphemeralConfig())
	ct, r := events(t, base, 30*time.Second)
	if ct != "text/event-stream" {
		t.Fatalf("Content-Type %q, want text/event-stream", ct)
	}
	var events []string
	for len(events) < 2 {
		name, data := readEvent(t, r)
		if name == "" {
			continue // the retry advice
		}
		if name != "tick" {
			t.Fatalf("event %q, want tick", name)
		}
		var tick console.TickEvent
		if err := json.Unmarshal([]byte(data), &tick); err != nil {
			t.Fatalf("tick data is not JSON: %v: %s", err, data)
		}
		if len(tick.State.Services) != 5 || tick.State.Services[0].Mode == nil || tick.State.Services[0].Mode.Mode != mode.Budgeted {
			t.Fatalf("tick state = %+v, want five services, the gateway budgeted", tick.State.Services)
		}
		events = append(events, name)
	}
}

// readEvent reads one event's name and data, up to its blank line.
func readEvent(t *testing.T, r *bufio.Reader) (name, data string) {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			return name, data
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if data != "" {
				t.Fatalf("event %q has more than one data line", name)
			}
			data = strings.TrimPrefix(line, "data: ")
		case strings.HasPrefix(line, "retry: "):
		default:
			t.Fatalf("unexpected line in the stream: %q", line)
		}
	}
}

// With an admin token, every change through the console needs it, and
// with it the change reaches every service; reads stay open.
func TestChangesNeedTheToken(t *testing.T) {
	cfg := shop.EphemeralConfig()
	cfg.Shared.AdminToken = "s3cret"
	s, base := startShop(t, cfg)
	changes := []struct{ method, path, body string }{
		{http.MethodPut, "api/mode", `{"mode":"naive"}`},
		{http.MethodPut, "api/faults/shipping/CreateShipment", `{"latency":"10ms"}`},
		{http.MethodDelete, "api/faults", ""},
		{http.MethodPut, "api/traffic", `{"checkout":1,"deadline_ms":1000}`},
		{http.MethodDelete, "api/traffic", ""},
		{http.MethodPost, "api/checkout", ""},
		{http.MethodPost, "api/scenario", `{"name":"lesson7"}`},
		{http.MethodDelete, "api/scenario", ""},
		{http.MethodPost, "api/presets/lesson7", ""},
	}
	for _, tok := range []string{"", "wrong"} {
		for _, c := range changes {
			status, ctype, body := call(t, c.method, base+c.path, tok, "application/json", c.body)
			if status != http.StatusUnauthorized || ctype != problem.ContentType {
				t.Errorf("%s %s with token %q = %d %s %s, want 401 problem+json", c.method, c.path, tok, status, ctype, body)
			}
		}
	}
	if status, _, _ := call(t, http.MethodGet, base+"api/state", "", "", ""); status != http.StatusOK {
		t.Errorf("GET api/state without the token = %d, want 200: reads are open", status)
	}
	status, _, body := call(t, http.MethodPut, base+"api/mode", "s3cret", "application/json", `{"mode":"naive"}`)
	if status != http.StatusOK {
		t.Fatalf("PUT api/mode with the token = %d %s, want 200", status, body)
	}
	for _, p := range s.Processes() {
		v, err := admin.Client{URL: "http://" + p.AdminAddr}.Mode(context.Background())
		if err != nil || v.Mode != mode.Naive {
			t.Errorf("%s is in %q (%v) after the console's switch, want naive", p.Name, v.Mode, err)
		}
	}
}

// Bad input is refused with a problem document that says what is wanted,
// before anything reaches the shop.
func TestBadInputIsAProblem(t *testing.T) {
	_, base := startShop(t, shop.EphemeralConfig())
	for _, tc := range []struct {
		name, method, path, ctype, body string
		status                          int
		detail                          string
	}{
		{"no such route", http.MethodGet, "api/nothing", "", "", 404, "no such console route"},
		{"wrong method", http.MethodGet, "api/mode", "", "", 405, "GET is not allowed"},
		{"not JSON", http.MethodPut, "api/mode", "text/plain", "naive", 415, "Content-Type must be application/json"},
		{"broken JSON", http.MethodPut, "api/mode", "application/json", `{"mode":`, 400, ""},
		{"unknown field", http.MethodPut, "api/mode", "application/json", `{"mode":"naive","speed":9}`, 400, "speed"},
		{"unknown mode", http.MethodPut, "api/mode", "application/json", `{"mode":"reckless"}`, 400, `"fragile", "naive" or "budgeted"`},
		{"unknown service", http.MethodPut, "api/faults/warehouse/Ship", "application/json", `{"latency":"1s"}`, 404, "service must be one of gateway, orders"},
		{"unknown method", http.MethodPut, "api/faults/shipping/Teleport", "application/json", `{"latency":"1s"}`, 400, "CreateShipment"},
		{"bad fault", http.MethodPut, "api/faults/shipping/CreateShipment", "application/json", `{"latency":"soon"}`, 400, "latency"},
		{"no wire", http.MethodPut, "api/network/orders-shipping", "application/json", `{"spec":"stall"}`, 409, "--network-proxy"},
		{"rate too high", http.MethodPut, "api/traffic", "application/json", `{"checkout":5000,"deadline_ms":1000}`, 400, "1 to 1000"},
		{"no rate", http.MethodPut, "api/traffic", "application/json", `{"deadline_ms":1000}`, 400, "at least one rate"},
		{"deadline too short", http.MethodPut, "api/traffic", "application/json", `{"checkout":1,"deadline_ms":5}`, 400, "deadline_ms must be 50 to 60000"},
		{"unknown popularity", http.MethodPut, "api/traffic", "application/json", `{"checkout":1,"deadline_ms":1000,"buys":{"popularity":"pareto"}}`, 400, `unknown "pareto"`},
		{"unknown scenario", http.MethodPost, "api/scenario", "application/json", `{"name":"../../etc/passwd"}`, 400, "name must be one of"},
		{"scenario with network faults on a shop without a wire", http.MethodPost, "api/scenario", "application/json", `{"name":"network-stall"}`, 409, "fault proxies"},
		{"no run to stop", http.MethodDelete, "api/scenario", "", "", 409, "no scenario is running"},
		{"no such report", http.MethodGet, "runs/7/report.html", "", "", 404, "no such report"},
		{"checkout deadline", http.MethodPost, "api/checkout", "application/json", `{"deadline_ms":1}`, 400, "deadline_ms must be"},
		{"unknown lesson preset", http.MethodPost, "api/presets/lesson99", "", "", 404, "choose " + console.PresetNames()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, ctype, body := call(t, tc.method, base+tc.path, "", tc.ctype, tc.body)
			var p problem.Details
			if status != tc.status || ctype != problem.ContentType || json.Unmarshal(body, &p) != nil || !strings.Contains(p.Detail, tc.detail) {
				t.Errorf("%s %s = %d %s %s, want %d problem+json with %q", tc.method, tc.path, status, ctype, body, tc.status, tc.detail)
			}
		})
	}
}

// One checkout through the console comes back with its hops, each with
// the budget it had left on arrival, shrinking along the chain.
func TestOneCheckoutShowsItsHops(t *testing.T) {
	cfg := shop.EphemeralConfig()
	cfg.Payments.Faults = mustFaults(t, "CreateCharge:latency=60ms")
	_, base := startShop(t, cfg)
	co := traceCheckout(t, base, `{"deadline_ms":1000}`)
	if co.Status != http.StatusCreated || co.Result != "good" || co.Mode != mode.Budgeted || !co.Carried {
		t.Fatalf("checkout = %d %s in %q (carried %v), want 201 good, budgeted, its deadline carried", co.Status, co.Result, co.Mode, co.Carried)
	}
	rem := map[string]float64{}
	for _, h := range co.Hops {
		if h.Name != "total" && !h.HasRem {
			t.Errorf("hop %s has no remaining budget", h.Name)
		}
		rem[h.Name] = h.RemMS
	}
	if !(rem["orders"] <= 1000 && rem["orders"] > rem["payments"] && rem["payments"] >= rem["shipping"]+50) {
		t.Errorf("remaining budget orders %.1f, payments %.1f, shipping %.1f ms: want it shrinking along the chain, by payments' 60 ms before shipping",
			rem["orders"], rem["payments"], rem["shipping"])
	}
}

// A lesson preset sets the shop up in one step, as the lesson's scenario
// phase has it, and its first checkouts show the lesson: lesson 7's chain,
// budgeted, arrives with ~1200 ms, reaches payments with what catalog's
// 280 ms left, and clips the degraded shipping to the rest. Reset returns
// to a healthy shop.
func TestLessonPresetSetsUpTheShop(t *testing.T) {
	_, base := startShop(t, shop.EphemeralConfig())
	res, err := console.ApplyPreset(context.Background(), base, "", "lesson7")
	if err != nil {
		t.Fatal(err)
	}
	st := res.State
	if st.Preset != "lesson7" || !st.Traffic.Running || st.Traffic.DeadlineMS != 1200 || st.Traffic.Checkout != 10 {
		t.Errorf("state after lesson7: preset %q, traffic %+v; want lesson7, running 10 checkouts/s with a 1200 ms deadline", st.Preset, st.Traffic)
	}
	want := map[string]string{"catalog": "ReserveStock:latency=280ms", "payments": "CreateCharge:latency=760ms", "shipping": "CreateShipment:hang=5s"}
	for _, svc := range st.Services {
		var got string
		for method, spec := range svc.Faults {
			got = method + ":" + spec.String()
		}
		if len(svc.Faults) > 1 || got != want[svc.Name] || svc.Mode == nil || svc.Mode.Mode != mode.Budgeted {
			t.Errorf("%s after lesson7: faults %q, mode %+v; want %q, budgeted", svc.Name, got, svc.Mode, want[svc.Name])
		}
	}

	// The traffic's checkouts reach the chain; read the hops of the first
	// that reached shipping. (Catalog's 280 ms has 20 ms to spare under
	// its 300 ms cap: on a busy machine, one may time out there.)
	_, r := events(t, base, time.Minute)
	hops := map[string]console.Hop{}
	for seen := 0; hops["shipping"].Name == ""; {
		name, data := readEvent(t, r)
		if name != "checkout" {
			continue
		}
		if seen++; seen > 20 {
			t.Fatalf("none of 20 checkouts reached shipping; the last: %s", data)
		}
		var co console.Checkout
		if err := json.Unmarshal([]byte(data), &co); err != nil {
			t.Fatal(err)
		}
		for _, h := range co.Hops {
			hops[h.Name] = h
		}
		if hops["shipping"].Name == "" {
			clear(hops)
		}
	}
	orders, payments, shipping := hops["orders"].RemMS, hops["payments"].RemMS, hops["shipping"]
	if orders < 1150 || orders > 1200 || payments < orders-330 || payments > orders-280 || shipping.RemMS > payments-760 || shipping.Outcome != "budget_exhausted" {
		t.Errorf("lesson 7's chain: orders %.1f, payments %.1f, shipping %.1f ms left (%s); want ~1200 → ~917 → ~150, shipping clipped",
			orders, payments, shipping.RemMS, shipping.Outcome)
	}

	res, err = console.ApplyPreset(context.Background(), base, "", "healthy")
	if err != nil {
		t.Fatal(err)
	}
	for _, svc := range res.State.Services {
		if len(svc.Faults) != 0 || svc.Mode == nil || svc.Mode.Mode != mode.Budgeted {
			t.Errorf("%s after the reset: faults %v, mode %+v; want none, budgeted", svc.Name, svc.Faults, svc.Mode)
		}
	}
}

// A naive checkout says its deadline was not carried, and its hops what
// was left of the client's deadline when each was called: negative once
// the client had given up, as when shipping answers after the deadline.
func TestNaiveCheckoutSaysItsDeadlineWasNotCarried(t *testing.T) {
	cfg := shop.EphemeralConfig()
	cfg.Shared.Mode = mode.Naive
	cfg.Payments.Faults = mustFaults(t, "CreateCharge:latency=120ms")
	_, base := startShop(t, cfg)
	co := traceCheckout(t, base, `{"deadline_ms":100}`)
	if co.Mode != mode.Naive || co.Carried || co.Result != "late" {
		t.Fatalf("checkout in %q, carried %v, %s: want naive, not carried, late (the charge alone takes 120 ms of its 100)", co.Mode, co.Carried, co.Result)
	}
	for _, h := range co.Hops {
		if h.Name == "shipping" && (!h.HasRem || h.RemMS >= 0) {
			t.Errorf("shipping's hop %+v: want the client's deadline passed when it was called (negative)", h)
		}
	}
}

// Every preset applies on the shop the console serves, and says what it
// set. The fan-out preset shows exercise 2 with the shop's own caps: its
// reservation and fraud screen in series leave the charge too little of
// the 900 ms, in parallel enough.
func TestEveryPresetApplies(t *testing.T) {
	_, base := startShop(t, shop.EphemeralConfig())
	for _, p := range console.Presets {
		res, err := console.ApplyPreset(context.Background(), base, "", p.Name)
		if err != nil {
			t.Errorf("%s: %v", p.Name, err)
			continue
		}
		want := p.Mode
		if want == "" {
			want = mode.Budgeted
		}
		if res.State.Preset != p.Name || res.State.Services[0].Mode == nil || res.State.Services[0].Mode.Mode != want || !res.State.Traffic.Running {
			t.Errorf("%s: state shows preset %q, gateway %+v, traffic %+v; want it, in %s, with its traffic running", p.Name, res.State.Preset, res.State.Services[0].Mode, res.State.Traffic, want)
		}
		if p.Scenario != "" {
			sc, err := loadtest.LoadScenario(p.Scenario)
			if err != nil {
				t.Fatal(err)
			}
			if res.State.Traffic.Buys != sc.Checkout {
				t.Errorf("%s: the traffic buys %+v, want its scenario's %+v", p.Name, res.State.Traffic.Buys, sc.Checkout)
			}
		}
	}

	if _, err := console.ApplyPreset(context.Background(), base, "", "fanout"); err != nil {
		t.Fatal(err)
	}
	// In series the charge is given what is left and ends at orders' own
	// deadline, a few ms before the gateway's: on a busy machine the
	// gateway can give up on orders first and learn nothing of its hops,
	// so the charge is read from the first of a few checkouts that tell.
	charge := func() console.Hop {
		var co console.Checkout
		for range 10 {
			co = traceCheckout(t, base, `{"deadline_ms":900}`)
			for _, h := range co.Hops {
				if h.Name == "payments" {
					return h
				}
			}
		}
		t.Fatalf("no charge among the hops of 10 checkouts; the last: %+v", co.Hops)
		return console.Hop{}
	}
	if h := charge(); h.Outcome != "budget_exhausted" || h.TimeoutMS >= 500 {
		t.Errorf("fan-out in series: the charge got %.0f ms and ended %s; want less than its 500 ms of work, budget exhausted", h.TimeoutMS, h.Outcome)
	}
	if status, _, body := call(t, http.MethodPut, base+"api/mode", "", "application/json", `{"mode":"budgeted","mechanisms":{"fanout":"parallel"}}`); status != http.StatusOK {
		t.Fatalf("PUT api/mode = %d %s", status, body)
	}
	if h := charge(); h.Outcome != "ok" || h.TimeoutMS < 500 {
		t.Errorf("fan-out in parallel: the charge got %.0f ms and ended %s; want its 500 ms of work and ok", h.TimeoutMS, h.Outcome)
	}
}

func mustFaults(t *testing.T, spec string) faults.Set {
	t.Helper()
	set, err := faults.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return set
}
