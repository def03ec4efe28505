package admin_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/mercado-lab/mercado/internal/mode"
)

// The bad-input matrix of the admin API: each kind of bad request to each
// route, the status it gets, and a piece of the detail. Every refusal is a
// problem document that says what to fix, and nothing about the inside.

const token = "s3cret-admin-token"

// leaks are fragments no admin answer may hold.
var leaks = []string{
	"json:", "cannot unmarshal", "Go struct", "Go value", "faults.", "mode.", "admin.", "specJSON", "time:",
	"float64", "int64", ".go:", "goroutine", "runtime", "panic", token,
}

type answer struct {
	code   int
	header http.Header
	body   string
}

func send(t *testing.T, method, url, body string, header map[string]string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// checkProblem checks a is a problem document with code whose detail
// contains detail, and that it leaks nothing.
func checkProblem(t *testing.T, a answer, code int, detail string) {
	t.Helper()
	if a.code != code {
		t.Errorf("status = %d, want %d (body %s)", a.code, code, a.body)
	}
	if ct := a.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type = %q, want application/problem+json", ct)
	}
	var p struct {
		Status int    `json:"status"`
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal([]byte(a.body), &p); err != nil {
		t.Fatalf("body %q is not a problem document: %v", a.body, err)
	}
	if p.Status != code || !strings.Contains(p.Detail, detail) {
		t.Errorf("problem = %+v, want status %d and a detail containing %q", p, code, detail)
	}
	for _, l := range leaks {
		if strings.Contains(a.body, l) {
			t.Errorf("answer leaks %q: %s", l, a.body)
		}
	}
}

func jsonHeader() map[string]string {
	return map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + token}
}

func TestAdminBadInputMatrix(t *testing.T) {
	srv, live, inj := newAPI(t, token)
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	type tc struct {
		name, method, path, body string
		header                   map[string]string
		code                     int
		detail                   string
	}
	with := func(k, v string) map[string]string {
		h := jsonHeader()
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	var cases []tc
	// Body rules, the same on every route that reads one.
	for _, route := range []struct{ path, good, unknown string }{
		{"/admin/mode", `{"mode":"naive"}`, `{"mode":"naive","zzz":1}`},
		{"/admin/faults", `{"CreateCharge":{"latency":"1ms"}}`, `{"CreateCharge":{"latency":"1ms","zzz":1}}`},
		{"/admin/faults/CreateCharge", `{"latency":"1ms"}`, `{"latency":"1ms","zzz":1}`},
	} {
		put := func(name, body string, h map[string]string, code int, detail string) tc {
			return tc{name, http.MethodPut, route.path, body, h, code, detail}
		}
		cases = append(cases,
			put("malformed JSON", route.good[:len(route.good)-1], jsonHeader(), 400, "malformed JSON"),
			put("not JSON", `mode=naive`, jsonHeader(), 400, "malformed JSON at byte"),
			put("empty body", ``, jsonHeader(), 400, "body is empty"),
			put("null", `null`, jsonHeader(), 400, "not null"),
			put("an array", `[]`, jsonHeader(), 400, "must be an object"),
			put("two values", route.good+route.good, jsonHeader(), 400, "one JSON value"),
			put("over 64 KiB", `{"x":"`+strings.Repeat("x", 65<<10)+`"}`, jsonHeader(), 413, "larger than 65536 bytes"),
			put("deeply nested", deep, jsonHeader(), 400, "malformed JSON at byte"),
			put("unknown field", route.unknown, jsonHeader(), 400, `unknown field "zzz"`),
			put("no content type", route.good, with("Content-Type", ""), 415, "Content-Type must be application/json"),
			put("text/plain", route.good, with("Content-Type", "text/plain"), 415, "application/json"),
			put("a json look-alike", route.good, with("Content-Type", "application/jsonx"), 415, "application/json"),
		)
	}
	// The route's own rules.
	put := func(path, name, body string, code int, detail string) tc {
		return tc{name, http.MethodPut, path, body, jsonHeader(), code, detail}
	}
	cases = append(cases,
		put("/admin/mode", "unknown mode", `{"mode":"reckless"}`, 400, `mode must be "fragile", "naive" or "budgeted"`),
		put("/admin/mode", "no mode", `{}`, 400, `mode must be "fragile", "naive" or "budgeted"`),
		put("/admin/mode", "mode not a string", `{"mode":1}`, 400, `field "mode" must be a string`),
		put("/admin/mode", "a huge unknown mode, not echoed", `{"mode":"`+strings.Repeat("m", 60<<10)+`"}`, 400, `mode must be`),
		put("/admin/mode", "unknown mechanism", `{"mode":"naive","mechanisms":{"magic":true}}`, 400, `unknown field "magic"`),
		put("/admin/mode", "mechanism not a boolean", `{"mode":"naive","mechanisms":{"breakers":"off"}}`, 400, `field "mechanisms.breakers" must be true or false`),
		put("/admin/mode", "unknown retries", `{"mode":"naive","mechanisms":{"retries":"often"}}`, 400, `mechanisms.retries must be "naive", "budgeted" or "off"`),
		put("/admin/mode", "mechanisms not an object", `{"mode":"naive","mechanisms":[]}`, 400, `field "mechanisms" must be an object`),
		put("/admin/mode", "negative workers", `{"mode":"naive","workers":-1}`, 400, `workers must be 1 to 100000, or left out`),
		put("/admin/mode", "too many workers", `{"mode":"naive","workers":100001}`, 400, `workers must be 1 to 100000, or left out`),
		put("/admin/mode", "workers not a number", `{"mode":"naive","workers":"50"}`, 400, `field "workers" must be a whole number`),

		put("/admin/faults", "not a duration", `{"CreateCharge":{"latency":"soon"}}`, 400, "CreateCharge: latency: not a duration such as 280ms"),
		put("/admin/faults", "a number for a duration", `{"CreateCharge":{"latency":280}}`, 400, `CreateCharge: latency must be a duration such as "280ms"`),
		put("/admin/faults", "negative latency", `{"CreateCharge":{"latency":"-1s"}}`, 400, "latency: -1s is outside 0 to 1h"),
		put("/admin/faults", "hang over an hour", `{"CreateCharge":{"hang":"2h"}}`, 400, "hang: 2h0m0s is outside 0 to 1h"),
		put("/admin/faults", "duration overflow", `{"CreateCharge":{"delay":"9999999999h"}}`, 400, "delay: not a duration"),
		put("/admin/faults", "p50 alone", `{"CreateCharge":{"p50":"1s"}}`, 400, "p50 and p99 go together"),
		put("/admin/faults", "p99 below p50", `{"CreateCharge":{"p50":"2s","p99":"1s"}}`, 400, "below p50"),
		put("/admin/faults", "latency and a distribution", `{"CreateCharge":{"latency":"1s","p50":"1s","p99":"2s"}}`, 400, "not both"),
		put("/admin/faults", "error rate over 1", `{"CreateCharge":{"error_rate":2}}`, 400, "error-rate: 2 is outside 0 to 1"),
		put("/admin/faults", "negative error rate", `{"CreateCharge":{"error_rate":-0.5}}`, 400, "error-rate: -0.5 is outside 0 to 1"),
		put("/admin/faults", "error rate a string", `{"CreateCharge":{"error_rate":"often"}}`, 400, "CreateCharge: error_rate must be a number from 0 to 1"),
		put("/admin/faults", "unknown spec key", `{"CreateCharge":{"jitter":"1s"}}`, 400, `CreateCharge: unknown field "jitter" (want latency, p50, p99, delay, error_rate, refuse_rate, hang or slots)`),
		put("/admin/faults", "a spec in the flag syntax", `{"CreateCharge":"latency=1s"}`, 400, `CreateCharge: a fault spec must be an object such as {"latency":"280ms"}`),
		put("/admin/faults", "empty method", `{"":{"latency":"1s"}}`, 400, "method must be 1 to 64 characters"),
		put("/admin/faults", "method with a dash", `{"Bad-Name":{"latency":"1s"}}`, 400, "letters and digits only"),
		put("/admin/faults", "method over 64", `{"`+strings.Repeat("M", 65)+`":{"latency":"1s"}}`, 400, "method must be 1 to 64 characters"),
		put("/admin/faults/Bad-Name", "method with a dash in the path", `{"latency":"1s"}`, 400, "letters and digits only"),
		put("/admin/faults/"+strings.Repeat("M", 65), "method over 64 in the path", `{"latency":"1s"}`, 400, "method must be 1 to 64 characters"),
		put("/admin/faults/CreateCharge", "error rate over 1, one method", `{"error_rate":1.5}`, 400, "error-rate: 1.5 is outside 0 to 1"),
		put("/admin/faults/CreateCharge", "not a duration, one method", `{"hang":"forever"}`, 400, "hang: not a duration"),
		tc{"delete a method with a dash", http.MethodDelete, "/admin/faults/Bad-Name", "", jsonHeader(), 400, "letters and digits only"},
		put("/admin/faults/NoSuchMethod", "a method the service does not simulate", `{"latency":"1s"}`, 400,
			`unknown method "NoSuchMethod" for payments (want CreateCharge, ScreenOrder, RecordAudit or *)`),
		put("/admin/faults/createcharge", "a method in the wrong case", `{"latency":"1s"}`, 400,
			`unknown method "createcharge" for payments: names are case-sensitive, did you mean CreateCharge? (want CreateCharge, ScreenOrder, RecordAudit or *)`),
		put("/admin/faults", "another service's method", `{"CreateShipment":{"latency":"1s"}}`, 400,
			`unknown method "CreateShipment" for payments (want CreateCharge, ScreenOrder, RecordAudit or *)`),
		tc{"delete a method the service does not simulate", http.MethodDelete, "/admin/faults/NoSuchMethod", "", jsonHeader(), 400,
			`unknown method "NoSuchMethod" for payments (want CreateCharge, ScreenOrder, RecordAudit or *)`},
	)
	// Wrong methods and unknown routes.
	for _, m := range []struct{ method, path string }{
		{http.MethodPost, "/admin/mode"}, {http.MethodDelete, "/admin/mode"}, {http.MethodPatch, "/admin/mode"},
		{http.MethodPost, "/admin/faults"}, {http.MethodGet, "/admin/faults/CreateCharge"},
		{http.MethodPut, "/admin/peers"}, {http.MethodPost, "/metrics"},
	} {
		cases = append(cases, tc{"wrong method", m.method, m.path, "", jsonHeader(), 405, m.method + " is not allowed here"})
	}
	cases = append(cases,
		tc{"unknown admin route", http.MethodGet, "/admin/nope", "", nil, 404, "no such admin route"},
		tc{"debug handlers are not served", http.MethodGet, "/debug/pprof/", "", nil, 404, "no such admin route"},
	)

	before := live.Load()
	for _, c := range cases {
		t.Run(c.method+" "+c.path+": "+c.name, func(t *testing.T) {
			a := send(t, c.method, srv.URL+c.path, c.body, c.header)
			checkProblem(t, a, c.code, c.detail)
			if len(a.body) > 1024 {
				t.Errorf("a %d-byte refusal: the detail echoes the request", len(a.body))
			}
		})
	}
	if live.Load() != before {
		t.Errorf("a refused change changed the settings: %+v, was %+v", live.Load(), before)
	}
	if got := inj.Set(); len(got) != 0 {
		t.Errorf("a refused change set faults: %v", got)
	}

	t.Run("405 says which methods are allowed", func(t *testing.T) {
		for _, m := range []struct{ method, path, allow string }{
			{http.MethodPost, "/admin/mode", "GET, PUT"},
			{http.MethodPost, "/admin/faults", "GET, PUT, DELETE"},
			{http.MethodGet, "/admin/faults/CreateCharge", "PUT, DELETE"},
			{http.MethodPut, "/admin/peers", "GET"},
		} {
			if got := send(t, m.method, srv.URL+m.path, "", nil).header.Get("Allow"); got != m.allow {
				t.Errorf("%s %s: Allow = %q, want %q", m.method, m.path, got, m.allow)
			}
		}
	})
}

// Every change needs the token when one is set: without it, with a wrong
// one, or in another scheme, the answer is a 401 problem document with
// WWW-Authenticate, given before the body is even read. Reads stay open.
func TestAdminTokenMatrix(t *testing.T) {
	srv, live, _ := newAPI(t, token)
	changes := []struct{ method, path, body string }{
		{http.MethodPut, "/admin/mode", `{"mode":"naive"}`},
		{http.MethodPut, "/admin/faults", `{"CreateCharge":{"latency":"1ms"}}`},
		{http.MethodPut, "/admin/faults/CreateCharge", `{"latency":"1ms"}`},
		{http.MethodDelete, "/admin/faults", ``},
		{http.MethodDelete, "/admin/faults/CreateCharge", ``},
	}
	for _, auth := range []struct{ name, value string }{
		{"no Authorization", ""},
		{"a wrong token", "Bearer guess"},
		{"the token's prefix", "Bearer " + token[:len(token)-1]},
		{"the token and more", "Bearer " + token + "x"},
		{"an empty bearer", "Bearer "},
		{"the scheme alone", "Bearer"},
		{"the token without a scheme", token},
		{"basic auth", "Basic " + token},
		{"the token twice", "Bearer " + token + " " + token},
	} {
		for _, c := range changes {
			t.Run(auth.name+": "+c.method+" "+c.path, func(t *testing.T) {
				h := map[string]string{"Content-Type": "text/plain"} // 401 comes before 415
				if auth.value != "" {
					h["Authorization"] = auth.value
				}
				a := send(t, c.method, srv.URL+c.path, c.body, h)
				checkProblem(t, a, http.StatusUnauthorized, "changes need the admin token")
				if !strings.HasPrefix(a.header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("WWW-Authenticate = %q, want a Bearer challenge", a.header.Get("WWW-Authenticate"))
				}
			})
		}
	}
	if live.Load().Mode != mode.Budgeted {
		t.Fatal("an unauthorised switch changed the mode")
	}
	t.Run("the scheme is case-insensitive", func(t *testing.T) {
		a := send(t, http.MethodPut, srv.URL+"/admin/mode", `{"mode":"naive"}`,
			map[string]string{"Content-Type": "application/json", "Authorization": "bearer " + token})
		if a.code != http.StatusOK {
			t.Errorf("status = %d, want 200 (body %s)", a.code, a.body)
		}
	})
	t.Run("reads need no token", func(t *testing.T) {
		for _, path := range []string{"/admin/mode", "/admin/faults", "/admin/peers", "/metrics"} {
			if a := send(t, http.MethodGet, srv.URL+path, "", nil); a.code != http.StatusOK {
				t.Errorf("GET %s = %d, want 200", path, a.code)
			}
		}
	})
}

// The token check must not tell a guess by how long it took: the guard
// (requireToken, which every admin API's changes go through) compares in
// constant time, never with == or strings functions.
func TestAdminTokenComparedInConstantTime(t *testing.T) {
	src, err := os.ReadFile("admin.go")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	if !strings.Contains(s, "subtle.ConstantTimeCompare([]byte(got), []byte(token))") {
		t.Error("the guard does not compare the token with subtle.ConstantTimeCompare")
	}
	for _, bad := range []string{"== a.Token", "!= a.Token", "a.Token ==", "== token", "!= token", "token ==", "strings.EqualFold(got"} {
		if strings.Contains(s, bad) {
			t.Errorf("admin.go compares the token with %q", bad)
		}
	}
}
