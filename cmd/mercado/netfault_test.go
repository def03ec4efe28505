package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/mercado-lab/mercado/internal/netfault"
)

// serveUntil runs `mercado args...` until the test ends, and returns its
// run once n services log that they serve.
func serveUntil(t *testing.T, n int, args ...string) map[string]running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, env(nil), io.Discard, logs) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%v stopped with %v", args, err)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("%v did not stop", args)
		}
	})
	deadline := time.After(15 * time.Second)
	for countServing(logs.String()) < n {
		select {
		case err := <-done:
			t.Fatalf("%v stopped: %v; logs:\n%s", args, err, logs.String())
		case <-deadline:
			t.Fatalf("%v: not serving after 15 s; logs:\n%s", args, logs.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return parseRun(logs.String())
}

// mercado runs one short command and returns its stdout, stderr and exit
// code.
func mercado(args ...string) (string, string, int) {
	var stdout, stderr strings.Builder
	code := exitCode(run(context.Background(), args, env(nil), &stdout, &stderr), &stderr)
	return stdout.String(), stderr.String(), code
}

// TestServeAllNetworkProxy: serve all --network-proxy serves the wire's
// admin API beside the five services; mercado fault --network sets a
// link's faults through it (with the shop's admin token), a checkout
// feels them, and --clear takes them away.
func TestServeAllNetworkProxy(t *testing.T) {
	run := serveUntil(t, 6, "serve", "all", "--ephemeral-ports", "--network-proxy", "--admin-token=tok-wire")
	wire := "http://" + run["netproxy"].admin
	if run["netproxy"].admin == "" {
		t.Fatal("serve all --network-proxy logged no netproxy admin address")
	}
	body := get(t, wire+"/admin/network")
	for _, l := range netfault.Links() {
		if !strings.Contains(body, `"link": "`+l+`"`) {
			t.Errorf("GET /admin/network does not list %s: %s", l, body)
		}
	}
	if _, stderr, code := mercado("fault", "--network", "orders-shipping", "latency=300ms", "--admin", wire); code != 1 || !strings.Contains(stderr, "401") {
		t.Errorf("fault --network without the token: exit %d, %q; want 1 and the 401", code, stderr)
	}
	out, stderr, code := mercado("fault", "--network", "orders-shipping", "latency=300ms", "--admin", wire, "--admin-token", "tok-wire")
	if code != 0 || out != "orders-shipping latency=300ms\n" {
		t.Fatalf("fault --network orders-shipping latency=300ms: exit %d, %q %q", code, out, stderr)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+run["gateway"].addr+"/api/checkout",
		strings.NewReader(`{"customer":"wire","items":[{"sku":"mug-stoneware","qty":1}],"address":"1 Test Way"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", `"wire-1"`)
	req.Header.Set("X-Deadline-Ms", "5000")
	start := time.Now()
	if got := do(t, req); got != http.StatusCreated {
		t.Fatalf("checkout with 300ms on orders-shipping: %d, want 201", got)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("a checkout with 300ms of latency on orders-shipping took %v, want at least 300ms", took)
	}
	out, _, code = mercado("fault", "--network", "--clear", "--admin", wire, "--admin-token", "tok-wire")
	if code != 0 || !strings.Contains(out, "orders-shipping none\n") {
		t.Errorf("fault --network --clear: exit %d, %q", code, out)
	}
}

// TestFaultNetworkMistakes: a bad link or spec is a usage error naming
// what to fix; no shop answering says how to start one; --help lists the
// links and the kinds.
func TestFaultNetworkMistakes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"fault", "--network", "orders-fraud", "stall"}, 2, "unknown link \"orders-fraud\" (want one of " + netfault.LinkList()},
		{[]string{"fault", "--network", "orders-shipping", "latency=soon"}, 2, `latency: "soon" is not a duration`},
		{[]string{"fault", "--network", "orders-shipping", "stall", "--clear"}, 2, "a SPEC or --clear, not both"},
		{[]string{"fault", "--network", "--admin", "http://127.0.0.1:1"}, 1, "serve all --network-proxy"},
	} {
		_, stderr, code := mercado(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
	for _, args := range [][]string{{"fault", "--network"}, {"fault"}} {
		help := helpText(t, args...)
		for _, want := range append(netfault.Links(), "stall", "reset", "bandwidth=64", "down") {
			if !strings.Contains(help, want) {
				t.Errorf("mercado %v --help does not mention %s", args, want)
			}
		}
	}
}

// TestServeNetproxy: serve netproxy proxies the links it is given, with
// the wire's admin API; its mistakes are usage errors naming the flag.
func TestServeNetproxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)

	run := serveUntil(t, 1, "serve", "netproxy", "--admin-addr=127.0.0.1:0", "--link=orders-shipping=127.0.0.1:0,"+ln.Addr().String())
	body := get(t, "http://"+run["netproxy"].admin+"/admin/network")
	if !strings.Contains(body, `"upstream": "`+ln.Addr().String()+`"`) || strings.Contains(body, "gateway-orders") {
		t.Errorf("GET /admin/network = %s, want orders-shipping alone, to the callee", body)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "netproxy"}, "link: name at least one link"},
		{[]string{"serve", "netproxy", "--link=orders-shipping=:1"}, "want LINK=LISTEN,UPSTREAM"},
		{[]string{"serve", "netproxy", "--link=orders-fraud=:1,x:2"}, `unknown link "orders-fraud"`},
		{[]string{"serve", "netproxy", "--link=orders-shipping=:1,x:2", "--admin-addr=:9085"}, "no --admin-token is set"},
	} {
		_, stderr, code := mercado(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
