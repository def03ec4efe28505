package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/internal/timing"
	"github.com/mercado-lab/mercado/lab/shop"
	"github.com/mercado-lab/mercado/services/catalog"
	"github.com/mercado-lab/mercado/services/gateway"
)

// These tests drive the gateway's handlers through the whole shop: all
// five services in this process on loopback ports, talking real gRPC, as
// `mercado serve all` runs them.

// api is a client of one running shop.
type api struct {
	base string
	c    *http.Client
}

// startShop starts a fresh shop (so stock starts at the seed) and stops it
// when the test ends.
func startShop(t *testing.T) api {
	t.Helper()
	a, _ := startShopWith(t, shop.EphemeralConfig())
	return a
}

// startShopWith is startShop with the configuration cfg, and the shop
// itself, for its admin addresses.
func startShopWith(t *testing.T, cfg shop.Config) (api, *shop.Shop) {
	t.Helper()
	s, err := shop.Start(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("starting the shop: %v", err)
	}
	tr := &http.Transport{}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		if err := s.Stop(); err != nil {
			t.Errorf("stopping the shop: %v", err)
		}
	})
	return api{base: s.GatewayURL(), c: &http.Client{Transport: tr, Timeout: 10 * time.Second}}, s
}

// response is what the gateway answered.
type response struct {
	code   int
	header http.Header
	body   []byte
}

func (a api) do(t *testing.T, method, path string, body io.Reader, header map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, a.base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := a.c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return response{code: resp.StatusCode, header: resp.Header, body: b}
}

func (a api) get(t *testing.T, path string, header map[string]string) response {
	t.Helper()
	return a.do(t, http.MethodGet, path, nil, header)
}

// checkout posts body as JSON with a fresh Idempotency-Key, plus header.
func (a api) checkout(t *testing.T, body string, header map[string]string) response {
	t.Helper()
	h := map[string]string{"Content-Type": "application/json", "Idempotency-Key": fmt.Sprintf(`"%s"`, t.Name())}
	for k, v := range header {
		h[k] = v
	}
	return a.do(t, http.MethodPost, "/api/checkout", strings.NewReader(body), h)
}

// checkoutBody is a valid checkout with the given items.
func checkoutBody(items ...gateway.Item) string {
	b, err := json.Marshal(gateway.CheckoutRequest{Customer: "ada", Address: "1 Loop Rd", Items: items})
	if err != nil {
		panic(err)
	}
	return string(b)
}

var oneTea = checkoutBody(gateway.Item{SKU: "tea-sencha", Qty: 1})

// problemDoc is the part of an RFC 9457 document the tests check.
type problemDoc struct {
	Status int    `json:"status"`
	Title  string `json:"title"`
	Detail string `json:"detail"`
}

// checkProblem checks r is a problem+json answer with status code whose
// detail contains detail.
func checkProblem(t *testing.T, r response, code int, detail string) {
	t.Helper()
	if r.code != code {
		t.Errorf("status = %d, want %d (body %s)", r.code, code, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type = %q, want application/problem+json", ct)
	}
	var p problemDoc
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("problem body %q is not JSON: %v", r.body, err)
	}
	if p.Status != code {
		t.Errorf("problem status = %d, want %d", p.Status, code)
	}
	if p.Detail == "" || !strings.Contains(p.Detail, detail) {
		t.Errorf("problem detail = %q, want it to contain %q", p.Detail, detail)
	}
}

func decode[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	return v
}

func TestProducts(t *testing.T) {
	a := startShop(t)

	t.Run("list", func(t *testing.T) {
		r := a.get(t, "/api/products", nil)
		if r.code != http.StatusOK {
			t.Fatalf("status = %d, want 200 (body %s)", r.code, r.body)
		}
		var want []gateway.Product
		for _, p := range catalog.Seed() {
			want = append(want, gateway.Product{SKU: p.SKU, Name: p.Name, PriceCents: p.PriceCents, Stock: p.Stock})
		}
		slices.SortFunc(want, func(a, b gateway.Product) int { return strings.Compare(a.SKU, b.SKU) })
		first := decode[gateway.Page](t, r)
		if len(first.Products) != catalog.DefaultPageSize || first.NextPageToken == "" {
			t.Errorf("first page = %d products, next %q; want %d and a token", len(first.Products), first.NextPageToken, catalog.DefaultPageSize)
		}
		// Paged through with the tokens, the pages are the seed in SKU
		// order.
		var got []gateway.Product
		for token, pages := "", 0; ; pages++ {
			if pages > len(want) {
				t.Fatal("the pages never end")
			}
			r := a.get(t, "/api/products?page_size=100&page_token="+token, nil)
			if r.code != http.StatusOK {
				t.Fatalf("page %d: status = %d, want 200 (body %s)", pages+1, r.code, r.body)
			}
			p := decode[gateway.Page](t, r)
			got = append(got, p.Products...)
			if token = p.NextPageToken; token == "" {
				break
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("paged through, the products are %d, want the seed's %d in SKU order", len(got), len(want))
		}
		// Browse calls catalog only, and says so.
		hops := serverTiming(t, r)
		if names := hopNames(hops); !slices.Equal(names, []string{"catalog", "total"}) {
			t.Errorf("Server-Timing hops = %q, want catalog and total", names)
		}
	})
	t.Run("one", func(t *testing.T) {
		r := a.get(t, "/api/products/filter-paper", nil)
		if r.code != http.StatusOK {
			t.Fatalf("status = %d, want 200 (body %s)", r.code, r.body)
		}
		want := gateway.Product{SKU: "filter-paper", Name: "Paper filters, 100 pack", PriceCents: 450, Stock: 10}
		if got := decode[gateway.Product](t, r); got != want {
			t.Errorf("product = %+v, want %+v", got, want)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		checkProblem(t, a.get(t, "/api/products/no-such-thing", nil), http.StatusNotFound, "no-such-thing")
	})
	t.Run("sku too long", func(t *testing.T) {
		checkProblem(t, a.get(t, "/api/products/"+strings.Repeat("s", 65), nil), http.StatusBadRequest, "longer than 64")
	})
}

func serverTiming(t *testing.T, r response) []timing.Hop {
	t.Helper()
	v := r.header.Get("Server-Timing")
	if v == "" {
		t.Fatal("no Server-Timing header")
	}
	hops, err := timing.Parse(v)
	if err != nil {
		t.Fatalf("Server-Timing %q: %v", v, err)
	}
	return hops
}

func hopNames(hops []timing.Hop) []string {
	var names []string
	for _, h := range hops {
		names = append(names, h.Name)
	}
	return names
}

func TestCheckout(t *testing.T) {
	a := startShop(t)
	r := a.checkout(t, checkoutBody(gateway.Item{SKU: "tea-sencha", Qty: 2}, gateway.Item{SKU: "mug-stoneware", Qty: 1}), nil)
	if r.code != http.StatusCreated {
		t.Fatalf("status = %d, want 201 (body %s)", r.code, r.body)
	}
	o := decode[gateway.Order](t, r)
	if o.OrderID == "" || o.Status != "confirmed" || o.Customer != "ada" || o.Address != "1 Loop Rd" {
		t.Errorf("order = %+v", o)
	}
	if o.TotalCents != 2*1250+1800 || o.ChargeID == "" || o.ShipmentID == "" || o.Failure != "" {
		t.Errorf("order total %d charge %q shipment %q failure %q", o.TotalCents, o.ChargeID, o.ShipmentID, o.Failure)
	}
	wantItems := []gateway.Item{{SKU: "tea-sencha", Qty: 2, UnitPriceCents: 1250}, {SKU: "mug-stoneware", Qty: 1, UnitPriceCents: 1800}}
	if !slices.Equal(o.Items, wantItems) {
		t.Errorf("items = %+v, want %+v", o.Items, wantItems)
	}
	if age := time.Since(o.CreatedAt); age < 0 || age > time.Minute {
		t.Errorf("created_at = %v, not just now", o.CreatedAt)
	}
	if loc := r.header.Get("Location"); loc != "/api/orders/"+o.OrderID {
		t.Errorf("Location = %q, want /api/orders/%s", loc, o.OrderID)
	}

	// Server-Timing shows every hop of the chain: the gateway's call to
	// orders, the four calls orders made — the reservation and the fraud
	// screen at once (budgeted mode), in the order they ended, then the
	// charge and the shipment — and the gateway's total; and the optional
	// estimate, run beside the chain, when it came back before the answer
	// left.
	hops := serverTiming(t, r)
	names := slices.DeleteFunc(hopNames(hops), func(n string) bool { return n == "estimate" })
	if len(names) == 6 {
		slices.Sort(names[1:3])
	}
	if !slices.Equal(names, []string{"orders", "catalog", "fraud", "payments", "shipping", "total"}) {
		t.Errorf("Server-Timing hops = %q, want orders, catalog and fraud, payments, shipping, total", hopNames(hops))
	}
	// The estimate is in the answer: the carrier's quote, or — when the
	// quote lost the race with the chain on a busy machine — the default,
	// marked degraded.
	switch e := o.DeliveryEstimate; {
	case e == nil:
		t.Error("the confirmed order has no delivery estimate")
	case len(o.Degraded) == 0 && e.MinBusinessDays < 1:
		t.Errorf("delivery estimate %+v, not degraded: want the carrier's quote", *e)
	case len(o.Degraded) > 0 && (!slices.Equal(o.Degraded, []string{"delivery_estimate"}) || *e != gateway.DeliveryEstimate{MinBusinessDays: 3, MaxBusinessDays: 5}):
		t.Errorf("delivery estimate %+v, degraded %q: want the default 3–5 days under [delivery_estimate]", *e, o.Degraded)
	}
	for _, h := range hops {
		if h.Name != "total" && h.Outcome != "ok" {
			t.Errorf("hop %s outcome = %q, want ok", h.Name, h.Outcome)
		}
	}

	t.Run("the order can be fetched", func(t *testing.T) {
		r := a.get(t, "/api/orders/"+o.OrderID, nil)
		if r.code != http.StatusOK {
			t.Fatalf("status = %d, want 200 (body %s)", r.code, r.body)
		}
		got := decode[gateway.Order](t, r)
		if got.OrderID != o.OrderID || got.Status != o.Status || got.TotalCents != o.TotalCents ||
			got.ChargeID != o.ChargeID || got.ShipmentID != o.ShipmentID || !slices.Equal(got.Items, o.Items) ||
			!got.CreatedAt.Equal(o.CreatedAt) {
			t.Errorf("GET order = %+v, want %+v", got, o)
		}
	})
	t.Run("an unknown order is 404", func(t *testing.T) {
		checkProblem(t, a.get(t, "/api/orders/ord_0000000000000000", nil), http.StatusNotFound, "ord_0000000000000000")
	})
	t.Run("an order id over 64 characters is 400", func(t *testing.T) {
		checkProblem(t, a.get(t, "/api/orders/"+strings.Repeat("o", 65), nil), http.StatusBadRequest, "longer than 64")
	})
}

// filter-paper is seeded with 10: a checkout for 11 is refused, and one
// for the 10 left then succeeds and empties the stock.
func TestCheckoutOutOfStock(t *testing.T) {
	a := startShop(t)
	r := a.checkout(t, checkoutBody(gateway.Item{SKU: "filter-paper", Qty: 11}), nil)
	checkProblem(t, r, http.StatusConflict, "out of stock")

	if r := a.checkout(t, checkoutBody(gateway.Item{SKU: "filter-paper", Qty: 10}), map[string]string{"Idempotency-Key": "second"}); r.code != http.StatusCreated {
		t.Fatalf("checkout of the 10 left = %d, want 201 (body %s): the refused one must not have held stock", r.code, r.body)
	}
	p := decode[gateway.Product](t, a.get(t, "/api/products/filter-paper", nil))
	if p.Stock != 0 {
		t.Errorf("filter-paper stock = %d, want 0", p.Stock)
	}
}

// The fraud screen declines a customer on its watch list: the checkout is
// refused as a declined payment is (409), nothing is charged, and the
// stock the reservation took is back. The screen is held back 50 ms, so
// the reservation has its answer when the screen declines.
func TestCheckoutDeclinedByTheFraudScreen(t *testing.T) {
	cfg := shop.EphemeralConfig()
	cfg.Payments.Faults = faults.Set{sim.PaymentsScreenOrder: {Latency: 50 * time.Millisecond}}
	a, _ := startShopWith(t, cfg)
	before := decode[gateway.Product](t, a.get(t, "/api/products/tea-sencha", nil))

	declined := checkoutBodyWith(func(c *gateway.CheckoutRequest) {
		c.Customer, c.Items = "mallory", []gateway.Item{{SKU: "tea-sencha", Qty: 40}}
	})
	r := a.checkout(t, declined, nil)
	checkProblem(t, r, http.StatusConflict, "declined by the fraud screen")

	if after := decode[gateway.Product](t, a.get(t, "/api/products/tea-sencha", nil)); after.Stock != before.Stock {
		t.Errorf("tea-sencha stock = %d after the declined checkout, want %d back", after.Stock, before.Stock)
	}
	if r := a.checkout(t, checkoutBody(gateway.Item{SKU: "tea-sencha", Qty: 40}), map[string]string{"Idempotency-Key": "second"}); r.code != http.StatusCreated {
		t.Errorf("the same checkout by another customer = %d, want 201 (body %s)", r.code, r.body)
	}
}

func TestCheckoutRejects(t *testing.T) {
	a := startShop(t)
	items := func(n int) []gateway.Item {
		out := make([]gateway.Item, n)
		for i := range out {
			out[i] = gateway.Item{SKU: "tea-sencha", Qty: 1}
		}
		return out
	}
	tests := []struct {
		name   string
		body   string
		header map[string]string
		code   int
		detail string
	}{
		{"malformed JSON", `{"customer": "ada",`, nil, http.StatusBadRequest, "malformed JSON"},
		{"not JSON at all", `customer=ada`, nil, http.StatusBadRequest, "malformed JSON"},
		{"empty body", ``, nil, http.StatusBadRequest, "empty"},
		{"two JSON values", oneTea + oneTea, nil, http.StatusBadRequest, "one JSON value"},
		{"wrong field type", `{"customer": 7}`, nil, http.StatusBadRequest, "customer"},
		{"unknown field", `{"customer":"ada","address":"x","items":[{"sku":"tea-sencha","qty":1}],"coupon":"FREE"}`, nil,
			http.StatusBadRequest, "coupon"},
		{"client sets a price", `{"customer":"ada","address":"x","items":[{"sku":"tea-sencha","qty":1,"unit_price_cents":1}]}`, nil,
			http.StatusBadRequest, "unit_price_cents"},
		{"wrong content type", oneTea, map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType, "application/json"},
		{"form content type", oneTea, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType, "application/json"},
		{"json with charset is fine but bad body", `{`, map[string]string{"Content-Type": "application/json; charset=utf-8"}, http.StatusBadRequest, "malformed JSON"},
		{"body over 64 KiB", `{"customer":"` + strings.Repeat("a", 65<<10) + `"}`, nil, http.StatusRequestEntityTooLarge, "larger than"},
		{"no customer", checkoutBodyWith(func(c *gateway.CheckoutRequest) { c.Customer = "" }), nil, http.StatusBadRequest, "customer"},
		{"no address", checkoutBodyWith(func(c *gateway.CheckoutRequest) { c.Address = "" }), nil, http.StatusBadRequest, "address"},
		{"no items", checkoutBodyWith(func(c *gateway.CheckoutRequest) { c.Items = nil }), nil, http.StatusBadRequest, "got 0"},
		{"51 items", checkoutBodyWith(func(c *gateway.CheckoutRequest) { c.Items = items(51) }), nil, http.StatusBadRequest, "got 51"},
		{"qty 0", checkoutBody(gateway.Item{SKU: "tea-sencha", Qty: 0}), nil, http.StatusBadRequest, "qty"},
		{"negative qty", checkoutBody(gateway.Item{SKU: "tea-sencha", Qty: -1}), nil, http.StatusBadRequest, "qty"},
		{"qty 1001", checkoutBody(gateway.Item{SKU: "tea-sencha", Qty: 1001}), nil, http.StatusBadRequest, "qty"},
		{"empty sku", checkoutBody(gateway.Item{SKU: "", Qty: 1}), nil, http.StatusBadRequest, "sku"},
		{"unknown sku", checkoutBody(gateway.Item{SKU: "no-such-thing", Qty: 1}), nil, http.StatusUnprocessableEntity, "no-such-thing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkProblem(t, a.checkout(t, tt.body, tt.header), tt.code, tt.detail)
		})
	}
	t.Run("no content type", func(t *testing.T) {
		r := a.do(t, http.MethodPost, "/api/checkout", strings.NewReader(oneTea), map[string]string{"Idempotency-Key": "k"})
		checkProblem(t, r, http.StatusUnsupportedMediaType, "application/json")
	})
	// None of the rejected checkouts reached stock.
	p := decode[gateway.Product](t, a.get(t, "/api/products/tea-sencha", nil))
	if p.Stock != 1_000_000 {
		t.Errorf("tea-sencha stock = %d after rejected checkouts, want 1000000", p.Stock)
	}
}

func checkoutBodyWith(change func(*gateway.CheckoutRequest)) string {
	c := gateway.CheckoutRequest{Customer: "ada", Address: "1 Loop Rd", Items: []gateway.Item{{SKU: "tea-sencha", Qty: 1}}}
	change(&c)
	b, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Boundaries that must be accepted.
func TestCheckoutAcceptsLimits(t *testing.T) {
	a := startShop(t)
	fifty := make([]gateway.Item, 50)
	for i := range fifty {
		fifty[i] = gateway.Item{SKU: "tea-sencha", Qty: 1}
	}
	tests := []struct {
		name string
		body string
	}{
		{"50 items", checkoutBodyWith(func(c *gateway.CheckoutRequest) { c.Items = fifty })},
		{"qty 1000", checkoutBody(gateway.Item{SKU: "tea-sencha", Qty: 1000})},
		{"charset parameter", oneTea},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := map[string]string{}
			if tt.name == "charset parameter" {
				h["Content-Type"] = "application/json; charset=utf-8"
			}
			if r := a.checkout(t, tt.body, h); r.code != http.StatusCreated {
				t.Errorf("status = %d, want 201 (body %s)", r.code, r.body)
			}
		})
	}
}

func TestCheckoutIdempotencyKeyHeader(t *testing.T) {
	a := startShop(t)
	tests := []struct {
		name   string
		key    string
		code   int
		detail string
	}{
		{"quoted string", `"abc"`, http.StatusCreated, ""},
		{"bare token", "abc-123_XYZ.~", http.StatusCreated, ""},
		{"uuid token", "8e03978e-40d5-43e8-bc93-6894a57f9324", http.StatusCreated, ""},
		{"255 characters", strings.Repeat("k", 255), http.StatusCreated, ""},
		{"quoted 255 characters", `"` + strings.Repeat("k", 255) + `"`, http.StatusCreated, ""},
		{"256 characters", strings.Repeat("k", 256), http.StatusBadRequest, "longer than 255"},
		{"quoted 256 characters", `"` + strings.Repeat("k", 256) + `"`, http.StatusBadRequest, "longer than 255"},
		{"space in a token", "abc def", http.StatusBadRequest, "neither a quoted string nor a token"},
		{"comma in a token", "abc,def", http.StatusBadRequest, "neither a quoted string nor a token"},
		{"semicolon in a token", "abc;def", http.StatusBadRequest, "neither a quoted string nor a token"},
		{"unterminated quote", `"abc`, http.StatusBadRequest, "unterminated"},
		{"a lone quote", `"`, http.StatusBadRequest, "unterminated"},
		{"empty", "", http.StatusBadRequest, "Idempotency-Key is required"},
		{"empty quoted string", `""`, http.StatusBadRequest, "Idempotency-Key is required"},
		{"escape in a quoted string", `"a\"b"`, http.StatusBadRequest, "escapes"},
		{"non-ASCII in a quoted string", "\"caf\u00e9\"", http.StatusBadRequest, "printable ASCII"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := a.checkout(t, oneTea, map[string]string{"Idempotency-Key": tt.key})
			if tt.code == http.StatusCreated {
				if r.code != tt.code {
					t.Errorf("status = %d, want %d (body %s)", r.code, tt.code, r.body)
				}
				return
			}
			checkProblem(t, r, tt.code, tt.detail)
		})
	}
}

func TestDeadlineHeader(t *testing.T) {
	a := startShop(t)
	tests := []struct {
		name, value string
		code        int
	}{
		{"letters", "abc", http.StatusBadRequest},
		{"negative", "-1", http.StatusBadRequest},
		{"zero", "0", http.StatusBadRequest},
		{"eleven digits", "12345678901", http.StatusBadRequest},
		{"with a unit", "500ms", http.StatusBadRequest},
		{"with a sign", "+500", http.StatusBadRequest},
		{"fractional", "1.5", http.StatusBadRequest},
		{"inner space", "5 00", http.StatusBadRequest},
		{"ordinary", "800", http.StatusOK},
		{"huge, capped", "99999999", http.StatusOK},
		{"ten digits, capped", "9999999999", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := a.get(t, "/api/products", map[string]string{"X-Deadline-Ms": tt.value})
			if tt.code == http.StatusOK {
				if r.code != http.StatusOK {
					t.Errorf("status = %d, want 200 (body %s)", r.code, r.body)
				}
				return
			}
			checkProblem(t, r, tt.code, "deadline header")
		})
	}
}

// A forged huge budget is capped at the gateway's maximum (10 s by
// default): the call to orders, which has no cap of its own, gets at most
// that. Without the header the default budget (1200 ms) applies.
func TestDeadlineHeaderCapsBudget(t *testing.T) {
	a := startShop(t)
	tests := []struct {
		name     string
		header   map[string]string
		min, max time.Duration
	}{
		{"huge value", map[string]string{"X-Deadline-Ms": "99999999"}, gateway.DefaultMaxBudget - time.Second, gateway.DefaultMaxBudget},
		{"no header", nil, gateway.DefaultBudget - time.Second, gateway.DefaultBudget},
		{"small value", map[string]string{"X-Deadline-Ms": "900"}, 900*time.Millisecond - time.Second/2, 900 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := a.checkout(t, oneTea, tt.header)
			if r.code != http.StatusCreated {
				t.Fatalf("status = %d, want 201 (body %s)", r.code, r.body)
			}
			hops := serverTiming(t, r)
			if len(hops) == 0 || hops[0].Name != "orders" {
				t.Fatalf("first hop = %+v, want orders", hops)
			}
			if got := hops[0].Timeout; got < tt.min || got > tt.max {
				t.Errorf("orders call timeout = %v, want within [%v, %v]", got, tt.min, tt.max)
			}
		})
	}
}

func TestRoutes(t *testing.T) {
	a := startShop(t)
	tests := []struct {
		name, method, path string
		code               int
		detail             string
	}{
		{"unknown route", http.MethodGet, "/api/nope", http.StatusNotFound, "no such route"},
		{"root", http.MethodGet, "/", http.StatusNotFound, "no such route"},
		{"admin routes are not public", http.MethodGet, "/healthz", http.StatusNotFound, "no such route"},
		{"GET checkout", http.MethodGet, "/api/checkout", http.StatusMethodNotAllowed, "GET is not allowed"},
		{"DELETE products", http.MethodDelete, "/api/products", http.StatusMethodNotAllowed, "DELETE is not allowed"},
		{"POST an order", http.MethodPost, "/api/orders/ord_1", http.StatusMethodNotAllowed, "POST is not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkProblem(t, a.do(t, tt.method, tt.path, bytes.NewReader(nil), nil), tt.code, tt.detail)
		})
	}
}

// The public server's write timeout outlasts every class's longest
// budget, so it never cuts an answer the budget still allows.
func TestWriteTimeoutOutlastsEveryBudget(t *testing.T) {
	cfg := gateway.DefaultConfig()
	cfg.Batch.Max = 45 * time.Minute
	if got := cfg.WriteTimeout(); got <= 45*time.Minute {
		t.Fatalf("write timeout %v is not above batch's 45m maximum", got)
	}
}
