package shop_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/problem"
	"github.com/mercado-lab/mercado/lab/shop"
)

// drainBound bounds every wait of the drain test: far above what each
// step takes, so that a busy machine under -race never fails it.
const drainBound = 20 * time.Second

// TestStopDrainsCheckoutInFlight stops the shop while a checkout is in
// flight at the gateway (held there by a fixed latency on the gateway's
// own work). The gateway stops first: /readyz answers 503, a new checkout
// sent on a connection opened before the stop gets 503 problem+json with
// Retry-After and "Connection: close", new connections are refused —
// while orders and the leaves still serve, so the checkout in flight
// completes with its 201 and a confirmed order. Then the shop stops.
func TestStopDrainsCheckoutInFlight(t *testing.T) {
	t.Parallel()
	// The hold is the margin the test has between seeing the checkout in
	// flight and checking the 503: milliseconds of work, seconds allowed.
	const hold = 4 * time.Second
	cfg := shop.EphemeralConfig()
	cfg.Gateway.Budget, cfg.Gateway.MaxBudget = drainBound, drainBound
	cfg.Gateway.Faults = faults.Set{"Checkout": {Latency: hold}}
	s, err := shop.Start(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	stopAsked := false
	t.Cleanup(func() {
		if !stopAsked {
			stopped <- s.Stop()
		}
		if err := <-stopped; err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	client := func() *http.Client {
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr, Timeout: drainBound}
	}

	// A client with a keep-alive connection opened before the stop.
	kept := client()
	if r := drainSend(kept, http.MethodGet, s.GatewayURL()+"/api/products", "", ""); r.status != http.StatusOK {
		t.Fatalf("GET /api/products = %d %s", r.status, r.body)
	}

	slow := make(chan drainReply, 1)
	go func() {
		slow <- drainSend(client(), http.MethodPost, s.GatewayURL()+"/api/checkout", "drain-in-flight", checkoutBody)
	}()
	waitUntil(t, "the checkout to be in flight at the gateway", func() bool {
		return poolInFlight(t, s.Gateway.AdminAddr, "checkout") > 0
	})

	stopAsked = true
	go func() { stopped <- s.Stop() }()
	waitUntil(t, "the gateway's /readyz to answer 503", func() bool {
		return statusOf(t, "http://"+s.Gateway.AdminAddr+"/readyz") == http.StatusServiceUnavailable
	})
	// The drain gate closes before the listener: once new connections
	// are refused, every new request is answered 503.
	waitUntil(t, "the gateway to refuse new connections", func() bool {
		c, err := net.DialTimeout("tcp", s.Gateway.Addr, time.Second)
		if err != nil {
			return true
		}
		c.Close()
		return false
	})

	r := drainSend(kept, http.MethodPost, s.GatewayURL()+"/api/checkout", "drain-new", checkoutBody)
	if r.err != nil {
		t.Fatalf("a new checkout on a connection from before the stop: %v, want a 503 answer", r.err)
	}
	if r.status != http.StatusServiceUnavailable || r.contentType != problem.ContentType {
		t.Errorf("a new checkout while draining = %d %s %s, want 503 problem+json", r.status, r.contentType, r.body)
	}
	if r.header.Get("Retry-After") == "" || !r.close {
		t.Errorf("the 503 has Retry-After %q and closes its connection: %v; want both",
			r.header.Get("Retry-After"), r.close)
	}
	if !s.Orders.Ready() {
		t.Error("orders stopped with the gateway, want it serving the gateway's drain")
	}
	select {
	case got := <-slow:
		t.Fatalf("the checkout in flight ended (%d %s) before its %v hold: the machine is too slow for this test", got.status, got.body, hold)
	default:
	}

	got := <-slow
	if got.err != nil || got.status != http.StatusCreated {
		t.Fatalf("the checkout in flight = %d %s (err %v), want 201", got.status, got.body, got.err)
	}
	var order struct{ Status string }
	if err := json.Unmarshal(got.body, &order); err != nil || order.Status != "confirmed" {
		t.Errorf("the checkout in flight = %s, want a confirmed order", got.body)
	}
	select {
	case err := <-stopped:
		stopped <- err // for the cleanup
	case <-time.After(drainBound):
		t.Fatal("the shop did not stop after its work in flight drained")
	}
	for _, p := range s.Processes() {
		if p.Ready() {
			t.Errorf("%s is still ready after the shop stopped", p.Name)
		}
	}
}

// drainReply is one HTTP answer, read whole.
type drainReply struct {
	status      int
	contentType string
	header      http.Header
	close       bool
	body        []byte
	err         error
}

func drainSend(c *http.Client, method, url, key, body string) drainReply {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return drainReply{err: err}
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", `"`+key+`"`)
	}
	resp, err := c.Do(req)
	if err != nil {
		return drainReply{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return drainReply{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), header: resp.Header,
		close: resp.Close, body: b, err: err}
}

// statusOf returns the status of GET url, 0 when it gets no answer.
func statusOf(t *testing.T, url string) int {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// poolInFlight reads the work in flight in one of a service's pools from its
// /metrics (mercado_pool_in_flight).
func poolInFlight(t *testing.T, adminAddr, pool string) float64 {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + adminAddr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var n float64
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "mercado_pool_in_flight{") || !strings.Contains(line, `pool="`+pool+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			n += v
		}
	}
	return n
}

// waitUntil polls cond until it holds, failing t after drainBound.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(drainBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
