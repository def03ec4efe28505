package gateway_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/services/gateway"
)

// The bad-input matrix of the public API: for every route, each kind of
// bad request, the status the client gets, and a piece of the detail it
// reads. Every answer must be a problem document that tells the client
// what to fix and nothing about the inside of the shop (see checkNoLeak).

// badCase is one bad request and the answer it must get.
type badCase struct {
	name   string
	method string
	path   string
	body   string
	header map[string]string
	code   int
	detail string
}

// leaks are fragments that must never reach a client: Go type names and
// decoder internals, stack and source text, gRPC and transport errors,
// SQL and connection strings, internal addresses.
var leaks = []string{
	"json:", "cannot unmarshal", "Go struct", "Go value", "int64", "float64", "gateway.", "CheckoutRequest",
	"reflect", ".go:", "/work/", "goroutine", "runtime", "panic", "rpc error", "desc =", "transport",
	"dial tcp", "127.0.0.1", "localhost", "SELECT", "INSERT", "UPDATE ", "postgres://", "sslmode", "SQLSTATE",
	"deadline: bad", "context deadline exceeded",
}

// checkNoLeak fails when body holds anything the client must not see.
func checkNoLeak(t *testing.T, body []byte) {
	t.Helper()
	for _, l := range leaks {
		if strings.Contains(string(body), l) {
			t.Errorf("answer leaks %q: %s", l, body)
		}
	}
}

func runMatrix(t *testing.T, a api, cases []badCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := a.do(t, tc.method, tc.path, strings.NewReader(tc.body), tc.header)
			checkProblem(t, r, tc.code, tc.detail)
			checkNoLeak(t, r.body)
		})
	}
}

// Header sets for the checkout: the required ones, plus changes.
func hdr(kv ...string) map[string]string {
	h := map[string]string{"Content-Type": "application/json", "Idempotency-Key": `"matrix"`}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(h, kv[i])
			continue
		}
		h[kv[i]] = kv[i+1]
	}
	return h
}

// deadlineCases are the bad X-Deadline-Ms values, checked on every route:
// the edge reads the header before any handler runs.
func deadlineCases(method, path, body string, h func(...string) map[string]string) []badCase {
	var out []badCase
	for _, tc := range []struct{ name, value, reason string }{
		{"letters", "abc", `"abc" is not a whole number of milliseconds`},
		{"negative", "-1", `"-1" is not a whole number of milliseconds`},
		{"zero", "0", "must be at least 1 ms"},
		{"eleven digits (overflow)", "12345678901", "more than 10 digits"},
		{"twenty digits (overflow)", "99999999999999999999", "more than 10 digits"},
		{"a unit", "500ms", `"500ms" is not a whole number of milliseconds`},
		{"an exponent", "1e3", `"1e3" is not a whole number of milliseconds`},
		{"hex", "0x10", `"0x10" is not a whole number of milliseconds`},
		{"a sign", "+500", `"+500" is not a whole number of milliseconds`},
		{"fractional", "1.5", `"1.5" is not a whole number of milliseconds`},
	} {
		out = append(out, badCase{
			name: "X-Deadline-Ms " + tc.name, method: method, path: path, body: body,
			header: h("X-Deadline-Ms", tc.value), code: http.StatusBadRequest,
			detail: "invalid X-Deadline-Ms deadline header: " + tc.reason,
		})
	}
	return out
}

func plain(kv ...string) map[string]string {
	h := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		h[kv[i]] = kv[i+1]
	}
	return h
}

func TestBadInputMatrix(t *testing.T) {
	a := startShop(t)
	items := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = `{"sku":"tea-sencha","qty":1}`
		}
		return `{"customer":"ada","address":"1 Loop Rd","items":[` + strings.Join(parts, ",") + `]}`
	}
	withQty := func(q string) string {
		return `{"customer":"ada","address":"1 Loop Rd","items":[{"sku":"tea-sencha","qty":` + q + `}]}`
	}
	nested := func(depth int) string {
		return `{"customer":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`
	}

	t.Run("POST /api/checkout", func(t *testing.T) {
		const path = "/api/checkout"
		post := func(name, body string, h map[string]string, code int, detail string) badCase {
			return badCase{name, http.MethodPost, path, body, h, code, detail}
		}
		cases := []badCase{
			// Malformed, oversized, nested.
			post("malformed JSON", `{"customer": "ada",`, hdr(), 400, "malformed JSON"),
			post("not JSON at all", `customer=ada`, hdr(), 400, "malformed JSON at byte"),
			post("empty body", ``, hdr(), 400, "body is empty"),
			post("two JSON values", oneTea+oneTea, hdr(), 400, "one JSON value"),
			post("trailing garbage", oneTea+`]`, hdr(), 400, "one JSON value"),
			post("null", `null`, hdr(), 400, "not null"),
			post("an array", `[]`, hdr(), 400, "body must be an object"),
			post("a string", `"ada"`, hdr(), 400, "body must be an object"),
			post("over 64 KiB", `{"customer":"`+strings.Repeat("a", 65<<10)+`"}`, hdr(), 413, "larger than 65536 bytes"),
			post("nested past the decoder's depth", nested(20000), hdr(), 400, "malformed JSON at byte"),
			post("nested within the depth", nested(5000), hdr(), 400, `field "customer" must be a string`),
			// Unknown fields and wrong types.
			post("unknown field", `{"customer":"ada","address":"x","items":[{"sku":"tea-sencha","qty":1}],"coupon":"FREE"}`, hdr(), 400, `unknown field "coupon"`),
			post("unknown item field", `{"customer":"ada","address":"x","items":[{"sku":"tea-sencha","qty":1,"gift":true}]}`, hdr(), 400, `unknown field "gift"`),
			post("customer a number", `{"customer":7}`, hdr(), 400, `field "customer" must be a string`),
			post("items an object", `{"items":{}}`, hdr(), 400, `field "items" must be an array`),
			post("client sets a price", `{"customer":"ada","address":"x","items":[{"sku":"tea-sencha","qty":1,"unit_price_cents":1}]}`, hdr(), 400, "unit_price_cents is set by the shop"),
			// Content types.
			post("no content type", oneTea, hdr("Content-Type", ""), 415, "Content-Type must be application/json"),
			post("text/plain", oneTea, hdr("Content-Type", "text/plain"), 415, "application/json"),
			post("form", oneTea, hdr("Content-Type", "application/x-www-form-urlencoded"), 415, "application/json"),
			post("xml", oneTea, hdr("Content-Type", "application/xml"), 415, "application/json"),
			post("a json look-alike", oneTea, hdr("Content-Type", "application/jsonp"), 415, "application/json"),
			post("unparseable content type", oneTea, hdr("Content-Type", "application/"), 415, "application/json"),
			// Quantities.
			post("qty 0", withQty("0"), hdr(), 400, "items[0].qty must be 1 to 1000, got 0"),
			post("qty negative", withQty("-5"), hdr(), 400, "items[0].qty must be 1 to 1000, got -5"),
			post("qty 1001", withQty("1001"), hdr(), 400, "items[0].qty must be 1 to 1000, got 1001"),
			post("qty the largest int64", withQty("9223372036854775807"), hdr(), 400, "items[0].qty must be 1 to 1000"),
			post("qty past int64", withQty("99999999999999999999"), hdr(), 400, `field "items.qty" must be a whole number`),
			post("qty 1e30", withQty("1e30"), hdr(), 400, `field "items.qty" must be a whole number`),
			post("qty fractional", withQty("1.5"), hdr(), 400, `field "items.qty" must be a whole number`),
			post("qty a string", withQty(`"1"`), hdr(), 400, `field "items.qty" must be a whole number`),
			// Items and SKUs.
			post("no items", items(0), hdr(), 400, "1 to 50 items, got 0"),
			post("51 items", items(51), hdr(), 400, "1 to 50 items, got 51"),
			post("2000 items", items(2000), hdr(), 400, "1 to 50 items, got 2000"),
			post("empty sku", checkoutBody(gateway.Item{SKU: "", Qty: 1}), hdr(), 400, "items[0].sku is empty"),
			post("sku over 64", checkoutBody(gateway.Item{SKU: strings.Repeat("s", 65), Qty: 1}), hdr(), 400, "items[0].sku is longer than 64"),
			post("sku with a space", checkoutBody(gateway.Item{SKU: "tea sencha", Qty: 1}), hdr(), 400, "items[0].sku may hold only"),
			post("unknown sku", checkoutBody(gateway.Item{SKU: "no-such-thing", Qty: 1}), hdr(), 422, `unknown sku "no-such-thing"`),
			post("customer over 500 bytes", checkoutBodyWith(func(c *gateway.CheckoutRequest) { c.Customer = strings.Repeat("c", 501) }), hdr(), 400, "customer must be 1 to 500 bytes"),
			post("address over 500 bytes", checkoutBodyWith(func(c *gateway.CheckoutRequest) { c.Address = strings.Repeat("a", 501) }), hdr(), 400, "address must be 1 to 500 bytes"),
			// Idempotency-Key.
			post("no Idempotency-Key", oneTea, hdr("Idempotency-Key", ""), 400, "Idempotency-Key is required"),
			post("Idempotency-Key over 255", oneTea, hdr("Idempotency-Key", strings.Repeat("k", 256)), 400, "longer than 255"),
			post("Idempotency-Key quoted, over 255", oneTea, hdr("Idempotency-Key", `"`+strings.Repeat("k", 256)+`"`), 400, "longer than 255"),
			post("Idempotency-Key with a space", oneTea, hdr("Idempotency-Key", "a b"), 400, "neither a quoted string nor a token"),
			post("Idempotency-Key unterminated", oneTea, hdr("Idempotency-Key", `"abc`), 400, "unterminated"),
			post("Idempotency-Key with an escape", oneTea, hdr("Idempotency-Key", `"a\"b"`), 400, "escapes"),
			post("Idempotency-Key not ASCII", oneTea, hdr("Idempotency-Key", "\"caf\u00e9\""), 400, "printable ASCII"),
		}
		cases = append(cases, deadlineCases(http.MethodPost, path, oneTea, hdr)...)
		runMatrix(t, a, cases)

		// The value of a bad key is not echoed back.
		r := a.checkout(t, oneTea, map[string]string{"Idempotency-Key": "secret value"})
		if strings.Contains(string(r.body), "secret value") {
			t.Errorf("the refusal echoes the key: %s", r.body)
		}
	})

	t.Run("GET /api/products", func(t *testing.T) {
		get := func(name, path string, code int, detail string) badCase {
			return badCase{name, http.MethodGet, path, "", nil, code, detail}
		}
		cases := []badCase{
			get("page_size 0", "/api/products?page_size=0", 400, "page_size must be one whole number from 1 to 100"),
			get("page_size 101", "/api/products?page_size=101", 400, "page_size must be"),
			get("page_size twice", "/api/products?page_size=1&page_size=2", 400, "page_size is given 2 times"),
			get("page_token with a space", "/api/products?page_token=tea%20sencha", 400, "page_token may hold only"),
			get("page_token over 64", "/api/products?page_token="+strings.Repeat("t", 65), 400, "page_token is longer than 64"),
			get("unknown parameter", "/api/products?page=2", 400, `unknown query parameter "page" (this route takes page_size and page_token)`),
		}
		cases = append(cases, deadlineCases(http.MethodGet, "/api/products", "", plain)...)
		runMatrix(t, a, cases)
	})

	t.Run("GET /api/products/{sku}", func(t *testing.T) {
		get := func(name, path string, code int, detail string) badCase {
			return badCase{name, http.MethodGet, path, "", nil, code, detail}
		}
		cases := []badCase{
			get("unknown sku", "/api/products/no-such-thing", 404, `unknown sku "no-such-thing"`),
			get("sku over 64", "/api/products/"+strings.Repeat("s", 65), 400, "sku is longer than 64"),
			get("sku with a space", "/api/products/tea%20sencha", 400, "sku may hold only"),
			get("sku with an encoded slash", "/api/products/tea%2Fsencha", 400, "sku may hold only"),
			get("sku with a quote", "/api/products/%22tea%22", 400, "sku may hold only"),
			get("sku not ASCII", "/api/products/t%C3%A9", 400, "sku may hold only"),
		}
		cases = append(cases, deadlineCases(http.MethodGet, "/api/products/tea-sencha", "", plain)...)
		runMatrix(t, a, cases)
	})

	t.Run("GET /api/orders/{id}", func(t *testing.T) {
		get := func(name, path string, code int, detail string) badCase {
			return badCase{name, http.MethodGet, path, "", nil, code, detail}
		}
		cases := []badCase{
			get("unknown id", "/api/orders/ord_0000000000000000", 404, "ord_0000000000000000"),
			get("unknown id of another shape", "/api/orders/42", 404, `unknown order "42"`),
			get("id over 64", "/api/orders/"+strings.Repeat("o", 65), 400, "order id is longer than 64"),
			get("id with a space", "/api/orders/ord%201", 400, "order id may hold only"),
			get("id with an encoded slash", "/api/orders/..%2F..%2Fetc", 400, "order id may hold only"),
			get("id with SQL in it", "/api/orders/1'%20OR%20'1'='1", 400, "order id may hold only"),
			get("id with a NUL", "/api/orders/ord%00", 400, "order id may hold only"),
		}
		cases = append(cases, deadlineCases(http.MethodGet, "/api/orders/ord_0000000000000000", "", plain)...)
		runMatrix(t, a, cases)
	})

	t.Run("wrong methods", func(t *testing.T) {
		for _, tc := range []struct{ method, path, allow string }{
			{http.MethodPost, "/api/products", "GET"},
			{http.MethodPut, "/api/products", "GET"},
			{http.MethodDelete, "/api/products", "GET"},
			{http.MethodPatch, "/api/products/tea-sencha", "GET"},
			{http.MethodDelete, "/api/products/tea-sencha", "GET"},
			{http.MethodGet, "/api/checkout", "POST"},
			{http.MethodPut, "/api/checkout", "POST"},
			{http.MethodDelete, "/api/checkout", "POST"},
			{http.MethodPost, "/api/orders/ord_1", "GET"},
			{http.MethodDelete, "/api/orders/ord_1", "GET"},
		} {
			t.Run(tc.method+" "+tc.path, func(t *testing.T) {
				r := a.do(t, tc.method, tc.path, strings.NewReader(""), nil)
				checkProblem(t, r, http.StatusMethodNotAllowed, tc.method+" is not allowed")
				checkNoLeak(t, r.body)
				if got := r.header.Get("Allow"); got != tc.allow {
					t.Errorf("Allow = %q, want %q", got, tc.allow)
				}
			})
		}
	})
}

// The public port serves the public API only: the admin API, metrics,
// probes and debug handlers live on the admin port, and here are 404s
// whatever the method.
func TestPublicPortHidesAdmin(t *testing.T) {
	a := startShop(t)
	for _, path := range []string{
		"/admin/mode", "/admin/faults", "/admin/faults/CreateCharge", "/admin/peers", "/admin/charges",
		"/metrics", "/healthz", "/readyz", "/debug/pprof/", "/debug/pprof/goroutine", "/debug/vars",
	} {
		for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
			t.Run(method+" "+path, func(t *testing.T) {
				r := a.do(t, method, path, strings.NewReader(`{"mode":"naive"}`),
					map[string]string{"Content-Type": "application/json", "Authorization": "Bearer x"})
				checkProblem(t, r, http.StatusNotFound, "no such route")
			})
		}
	}
}

// The edge trusts no deadline but X-Deadline-Ms, capped: a client that
// sends the internal headers — the passive client deadline, gRPC's own
// timeout — neither shortens nor stretches the budget, and the gateway does
// not pass them on.
func TestEdgeIgnoresInternalDeadlineHeaders(t *testing.T) {
	a := startShop(t)
	for _, tc := range []struct {
		name   string
		header map[string]string
	}{
		{"a tiny passive client deadline", map[string]string{"X-Client-Deadline-Ms": "1"}},
		{"a huge passive client deadline", map[string]string{"X-Client-Deadline-Ms": "9999999999"}},
		{"grpc-timeout", map[string]string{"Grpc-Timeout": "1n"}},
		{"internal metadata names", map[string]string{"X-Client-Deadline-Ms": "1", "Grpc-Timeout": "1n", "Grpc-Encoding": "gzip"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := a.checkout(t, oneTea, tc.header)
			if r.code != http.StatusCreated {
				t.Fatalf("status = %d, want 201 (body %s)", r.code, r.body)
			}
			hops := serverTiming(t, r)
			if len(hops) == 0 || hops[0].Name != "orders" {
				t.Fatalf("first hop = %+v, want orders", hops)
			}
			// The default budget, not the header's.
			if got := hops[0].Timeout; got < gateway.DefaultBudget-time.Second || got > gateway.DefaultBudget {
				t.Errorf("orders call timeout = %v, want about the default budget %v", got, gateway.DefaultBudget)
			}
			for _, h := range hops {
				if h.Name != "total" && h.Outcome != "ok" {
					t.Errorf("hop %+v: the internal header changed the outcome", h)
				}
			}
		})
	}
	t.Run("X-Deadline-Ms above the maximum is capped", func(t *testing.T) {
		r := a.checkout(t, oneTea, map[string]string{"X-Deadline-Ms": "9999999999"})
		if r.code != http.StatusCreated {
			t.Fatalf("status = %d, want 201 (body %s)", r.code, r.body)
		}
		if got := serverTiming(t, r)[0].Timeout; got > gateway.DefaultMaxBudget {
			t.Errorf("orders call timeout = %v, above the maximum budget %v", got, gateway.DefaultMaxBudget)
		}
	})
}

// A dependency that cannot be reached is a 503 with Retry-After and a
// detail in the shop's words: never the connection error, which names
// internal addresses.
func TestUnreachableDependencyLeaksNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()

	cfg := gateway.DefaultConfig()
	cfg.Addr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.OrdersAddr, cfg.CatalogAddr = closed, closed
	cfg.AdminPeers = nil
	ctx, cancel := context.WithCancel(context.Background())
	p, err := gateway.Start(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		cancel()
		_ = p.Wait()
	})
	a := api{base: "http://" + p.Addr, c: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
	for _, tc := range []struct {
		name string
		do   func() response
	}{
		{"browse", func() response { return a.get(t, "/api/products", nil) }},
		{"product", func() response { return a.get(t, "/api/products/tea-sencha", nil) }},
		{"order", func() response { return a.get(t, "/api/orders/ord_0000000000000000", nil) }},
		{"checkout", func() response { return a.checkout(t, oneTea, nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.do()
			if r.code != http.StatusServiceUnavailable && r.code != http.StatusGatewayTimeout {
				t.Fatalf("status = %d, want 503 or 504 (body %s)", r.code, r.body)
			}
			checkProblem(t, r, r.code, "")
			checkNoLeak(t, r.body)
			if r.code == http.StatusServiceUnavailable && r.header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			if strings.Contains(string(r.body), closed) {
				t.Errorf("the answer names the dependency's address: %s", r.body)
			}
		})
	}
}

// A request whose header block is over the server's limit is refused by
// the server itself (431) before any handler runs.
func TestHeaderTooLarge(t *testing.T) {
	a := startShop(t)
	r := a.get(t, "/api/products", map[string]string{"X-Padding": strings.Repeat("p", 64<<10)})
	if r.code != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("status = %d, want 431", r.code)
	}
}
