package shop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/internal/slowtest"
	"github.com/mercado-lab/mercado/lab/shop"
	"github.com/mercado-lab/mercado/services/payments"
)

// These tests hold the Idempotency-Key contract (docs/idempotency.md) end to
// end: HTTP into the gateway, gRPC through orders to
// payments, and the charges counted by payments' admin API.

const checkoutBody = `{"customer":"e2e","items":[{"sku":"mug-stoneware","qty":1}],"address":"1 Test Way"}`

// answer is what the gateway answered one request.
type answer struct {
	code   int
	header http.Header
	body   []byte
}

// postCheckout posts body under key (no Idempotency-Key header when key is
// empty), with X-Deadline-Ms when deadlineMs is set.
func postCheckout(ctx context.Context, c *http.Client, base, key, body, deadlineMs string) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/checkout", strings.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", `"`+key+`"`)
	}
	if deadlineMs != "" {
		req.Header.Set("X-Deadline-Ms", deadlineMs)
	}
	resp, err := c.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{code: resp.StatusCode, header: resp.Header, body: b}, err
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode
}

// chargeStats reads payments' count of charges.
func chargeStats(t *testing.T, s *shop.Shop) payments.Stats {
	t.Helper()
	var st payments.Stats
	if code := getJSON(t, "http://"+s.Payments.AdminAddr+"/admin/charges", &st); code != http.StatusOK {
		t.Fatalf("GET /admin/charges: %d", code)
	}
	return st
}

// settledStats waits, up to within, until every charge has its outcome and
// the counts have stopped changing, and returns them.
func settledStats(t *testing.T, s *shop.Shop, within time.Duration) payments.Stats {
	t.Helper()
	end := time.Now().Add(within)
	var last payments.Stats
	for stable := 0; ; {
		time.Sleep(250 * time.Millisecond)
		st := chargeStats(t, s)
		if st == last && st.Charges == st.Succeeded {
			stable++
		} else {
			stable = 0
		}
		last = st
		if stable == 2 {
			return st
		}
		if time.Now().After(end) {
			t.Logf("charges still moving after %v: %+v", within, st)
			return st
		}
	}
}

type orderView struct {
	OrderID        string `json:"order_id"`
	Status         string `json:"status"`
	ChargeID       string `json:"charge_id"`
	ShipmentStatus string `json:"shipment_status"`
}

// 100 concurrent checkouts with one key and one body are one order and one
// charge. Every answer is the original one replayed (same status, same
// body) or 409 while it was still in flight. The key with another body is
// 422; a checkout without a key is 400.
func TestCheckoutIdempotencyKeyConcurrent(t *testing.T) {
	const n = 100
	cfg := shop.EphemeralConfig()
	// Pools large enough for the burst: this test is about the key, not
	// about shedding load (bulkheads have tests of their own).
	res := serve.DefaultResilience()
	res.Bulkhead, res.MaxWait = n, 5*time.Second
	cfg.Shared.Resilience = res
	s := startShop(t, cfg)
	base := s.GatewayURL()
	tr := &http.Transport{MaxIdleConnsPerHost: n}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr, Timeout: 20 * time.Second}

	var stock struct {
		Stock int64 `json:"stock"`
	}
	getJSON(t, base+"/api/products/mug-stoneware", &stock)
	stockBefore := stock.Stock

	const key = "e2e-concurrent-1"
	answers := make([]answer, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			// Half at once, half spread over the next half second: some
			// arrive while the first is in flight, some after it has its
			// answer.
			if i%2 == 1 {
				time.Sleep(time.Duration(i) * 5 * time.Millisecond)
			}
			answers[i], errs[i] = postCheckout(context.Background(), c, base, key, checkoutBody, "5000")
		})
	}
	close(start)
	wg.Wait()

	var original *answer
	codes := map[int]int{}
	for i, a := range answers {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		codes[a.code]++
		switch a.code {
		case http.StatusCreated:
			if original == nil {
				original = &answers[i]
			} else if string(a.body) != string(original.body) || a.header.Get("Location") != original.header.Get("Location") {
				t.Errorf("request %d: 201 %s\nwant the original 201 %s", i, a.body, original.body)
			}
		case http.StatusConflict:
			if ct := a.header.Get("Content-Type"); ct != "application/problem+json" || !strings.Contains(string(a.body), "still in flight") {
				t.Errorf("request %d: 409 %s %s, want a problem saying the key is in flight", i, ct, a.body)
			}
		default:
			t.Errorf("request %d: %d %s, want the original answer or 409", i, a.code, a.body)
		}
	}
	t.Logf("%d concurrent requests under one key: %v", n, codes)
	if original == nil {
		t.Fatal("no request got the order")
	}
	var o orderView
	if err := json.Unmarshal(original.body, &o); err != nil {
		t.Fatal(err)
	}
	if o.Status != "confirmed" || o.ChargeID == "" {
		t.Errorf("order = %s, want confirmed and charged", original.body)
	}

	// Later retries replay it too.
	again, err := postCheckout(context.Background(), c, base, key, checkoutBody, "")
	if err != nil {
		t.Fatal(err)
	}
	if again.code != http.StatusCreated || string(again.body) != string(original.body) || again.header.Get("Location") != "/api/orders/"+o.OrderID {
		t.Errorf("replay after the burst: %d %s, want the original 201 %s", again.code, again.body, original.body)
	}

	// One order took stock, one charge took money.
	getJSON(t, base+"/api/products/mug-stoneware", &stock)
	if got := stockBefore - stock.Stock; got != 1 {
		t.Errorf("stock went down by %d, want 1: one order", got)
	}
	if st := chargeStats(t, s); st != (payments.Stats{Charges: 1, Succeeded: 1, RequestIDs: 1}) {
		t.Errorf("charges = %+v, want exactly one", st)
	}

	// The key with another request, and no key at all.
	changed := strings.Replace(checkoutBody, `"qty":1`, `"qty":2`, 1)
	for _, tt := range []struct {
		name, key, body string
		code            int
		detail          string
	}{
		{"same key, changed body", key, changed, http.StatusUnprocessableEntity, "different request"},
		{"no key", "", checkoutBody, http.StatusBadRequest, "Idempotency-Key is required"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, err := postCheckout(context.Background(), c, base, tt.key, tt.body, "")
			if err != nil {
				t.Fatal(err)
			}
			if a.code != tt.code || a.header.Get("Content-Type") != "application/problem+json" || !strings.Contains(string(a.body), tt.detail) {
				t.Errorf("%d %s %s, want %d problem containing %q", a.code, a.header.Get("Content-Type"), a.body, tt.code, tt.detail)
			}
		})
	}
	if st := chargeStats(t, s); st.Charges != 1 {
		t.Errorf("charges = %+v after the refused requests, want still one", st)
	}
}

// The duplicate-charge load. The client's budget is shorter than orders'
// own cap on payments (800 ms), as in the lesson, and the client waits for
// its budget and the way back. The payment provider is slow at random: a
// good share of charges outlast the budget (about 10% take over 500 ms,
// 1% over 2 s). Modest concurrency keeps the shop's own overhead small
// next to those numbers, even under the race detector on two cores.
const (
	loadCheckouts     = 500
	loadWorkers       = 25
	loadRetries       = 3
	loadDeadlineMs    = "500"
	loadClientTimeout = 600 * time.Millisecond
	loadBackoff       = 100 * time.Millisecond
)

var slowPSP = faults.Set{"CreateCharge": {P50: 100 * time.Millisecond, P99: 2 * time.Second}}

// loadResult is what one mode's load came to.
type loadResult struct {
	final    map[string]int // the last answer of each checkout: "201", "202", "timeout" ...
	attempts int
	// retriedToOrder counts the checkouts that got their order (201 or
	// 202) only after retrying: the retries that could charge twice.
	retriedToOrder int
	charges        payments.Stats
}

// checkoutRetrying is a well-behaved client: one key per checkout, and the
// same key again when it gets a 5xx or no answer in time, up to
// loadRetries times. It returns its last answer and how many requests it
// sent.
func checkoutRetrying(c *http.Client, base, key string) (final string, attempts int) {
	for attempt := 0; ; attempt++ {
		a, err := postCheckout(context.Background(), c, base, key, checkoutBody, loadDeadlineMs)
		switch {
		case err != nil:
			final = "timeout"
		default:
			final = fmt.Sprint(a.code)
		}
		if (err == nil && a.code < 500) || attempt == loadRetries {
			return final, attempt + 1
		}
		time.Sleep(loadBackoff)
	}
}

// runRetryingLoad runs loadCheckouts checkouts against a fresh shop in
// mode m, loadWorkers at a time, and counts the charges once they settle.
func runRetryingLoad(t *testing.T, m mode.Mode) loadResult {
	t.Helper()
	cfg := shop.EphemeralConfig()
	// A margin that leaves orders time to store the unknown outcome and
	// answer 202 within the budget.
	cfg.Shared.Mode, cfg.Shared.Margin, cfg.Shared.Floor = m, 20*time.Millisecond, serve.DefaultFloor
	// Breakers close again after a second, not 30: a machine too busy for
	// catalog's 300 ms cap must not shed the rest of the run.
	res := serve.DefaultResilience()
	res.BreakerOpen = time.Second
	cfg.Shared.Resilience = res
	cfg.Payments.Faults = slowPSP
	s := startShop(t, cfg)
	tr := &http.Transport{MaxIdleConnsPerHost: loadWorkers}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: loadClientTimeout}

	out := loadResult{final: map[string]int{}}
	var mu sync.Mutex
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range loadWorkers {
		wg.Go(func() {
			for i := range jobs {
				final, attempts := checkoutRetrying(c, s.GatewayURL(), fmt.Sprintf("load-%s-%d", m, i))
				mu.Lock()
				out.final[final]++
				out.attempts += attempts
				if attempts > 1 && (final == "201" || final == "202") {
					out.retriedToOrder++
				}
				mu.Unlock()
			}
		})
	}
	for i := range loadCheckouts {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	// Charges still at the provider, and orders waiting for the
	// reconciler, settle after the clients are done.
	out.charges = settledStats(t, s, 15*time.Second)
	return out
}

// Random payment timeouts and clients that retry with the same key: in
// budgeted mode no checkout is charged twice; in naive mode, where keys
// are ignored, the retries make new orders and new charges for checkouts
// already charged.
func TestDuplicateChargesUnderTimeouts(t *testing.T) {
	slowtest.Require(t, "retrying load in both modes, about 18 s")
	start := time.Now()
	results := map[mode.Mode]loadResult{}
	for _, m := range []mode.Mode{mode.Budgeted, mode.Naive} {
		began := time.Now()
		results[m] = runRetryingLoad(t, m)
		r := results[m]
		t.Logf("%s: %d requests for %d checkouts in %v; last answers %v, %d after retrying; charges %+v",
			m, r.attempts, loadCheckouts, time.Since(began).Round(time.Millisecond), r.final, r.retriedToOrder, r.charges)
	}
	b, n := results[mode.Budgeted], results[mode.Naive]
	t.Logf("duplicate charges over %d checkouts: budgeted %d, naive %d", loadCheckouts, b.charges.Duplicates, n.charges.Duplicates)
	t.Logf("took %v", time.Since(start).Round(time.Millisecond))

	if b.charges.Duplicates != 0 {
		t.Errorf("budgeted: %d duplicate charges, want 0", b.charges.Duplicates)
	}
	if n.charges.Duplicates == 0 {
		t.Errorf("naive: no duplicate charges; the load did not exercise the retries (%+v)", n.charges)
	}
	// The budgeted count means something only if the slow charges reached
	// the unknown-outcome path (a client retry, or a 202 processing, whose
	// naive equivalent is a second charge) and checkouts were charged.
	if b.retriedToOrder+b.final["202"] == 0 || b.charges.RequestIDs == 0 {
		t.Errorf("budgeted: %d checkouts got their order after retrying, %d answered 202, %d were charged; want the slow charges exercised",
			b.retriedToOrder, b.final["202"], b.charges.RequestIDs)
	}
	for m, r := range results {
		if r.charges.RequestIDs > loadCheckouts {
			t.Errorf("%s: %d checkouts charged, more than the %d sent", m, r.charges.RequestIDs, loadCheckouts)
		}
	}
}

// A charge that outlasts the budget: the checkout answers 202 processing
// with the order's Location; the order is payment_pending until the
// provider answers, then the reconciler confirms it. A retry of the
// checkout replays the 202; nothing is charged twice.
func TestCheckoutProcessingThenSettled(t *testing.T) {
	cfg := shop.EphemeralConfig()
	cfg.Shared.Mode, cfg.Shared.Margin, cfg.Shared.Floor = mode.Budgeted, 50*time.Millisecond, serve.DefaultFloor
	cfg.Payments.Faults = faults.Set{"CreateCharge": {Latency: 700 * time.Millisecond}}
	s := startShop(t, cfg)
	base := s.GatewayURL()
	c := &http.Client{Timeout: 10 * time.Second}

	began := time.Now()
	a, err := postCheckout(context.Background(), c, base, "e2e-processing-1", checkoutBody, "300")
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	// On a machine too busy for orders to answer within the budget, the
	// gateway answers 504; a client retries that with the same key and
	// gets the stored answer.
	for retry := 0; a.code >= 500 && retry < 3; retry++ {
		t.Logf("checkout answered %d %s; retrying with the same key", a.code, a.body)
		if a, err = postCheckout(context.Background(), c, base, "e2e-processing-1", checkoutBody, "300"); err != nil {
			t.Fatal(err)
		}
	}
	var p struct {
		Status  string `json:"status"`
		OrderID string `json:"order_id"`
	}
	if err := json.Unmarshal(a.body, &p); err != nil {
		t.Fatalf("body %s: %v", a.body, err)
	}
	if a.code != http.StatusAccepted || p.Status != "processing" || p.OrderID == "" {
		t.Fatalf("checkout = %d %s, want 202 processing with the order id", a.code, a.body)
	}
	if loc := a.header.Get("Location"); loc != "/api/orders/"+p.OrderID {
		t.Errorf("Location = %q, want /api/orders/%s", loc, p.OrderID)
	}
	if took > 700*time.Millisecond {
		t.Errorf("checkout took %v, want an answer within the 300 ms budget (bound 700 ms), not after the charge", took)
	}

	var o orderView
	if code := getJSON(t, base+a.header.Get("Location"), &o); code != http.StatusOK || o.Status != "payment_pending" {
		t.Errorf("GET the order at once = %d %+v, want payment_pending", code, o)
	}

	// The retry replays the stored answer while the charge is pending.
	again, err := postCheckout(context.Background(), c, base, "e2e-processing-1", checkoutBody, "300")
	if err != nil {
		t.Fatal(err)
	}
	if again.code != http.StatusAccepted || string(again.body) != string(a.body) {
		t.Errorf("retry = %d %s, want the 202 replayed: %s", again.code, again.body, a.body)
	}

	// The provider answers after 700 ms; the reconciler waits a second
	// before touching an order and looks every 250 ms.
	end := time.Now().Add(10 * time.Second)
	for o.Status != "confirmed" && time.Now().Before(end) {
		time.Sleep(100 * time.Millisecond)
		getJSON(t, base+"/api/orders/"+p.OrderID, &o)
	}
	if o.Status != "confirmed" || o.ChargeID == "" || o.ShipmentStatus != "booked" {
		t.Errorf("order after %v = %+v, want confirmed, charged and shipped", time.Since(began).Round(time.Millisecond), o)
	}
	if st := chargeStats(t, s); st != (payments.Stats{Charges: 1, Succeeded: 1, RequestIDs: 1}) {
		t.Errorf("charges = %+v, want exactly one", st)
	}
}
