package netfault_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/dial"
	"github.com/mercado-lab/mercado/internal/netfault"
)

// callee is a gRPC server (the health service) on a free loopback port.
func callee(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}

// proxied starts a Network with link orders-shipping in front of a
// callee, and a client connected through it with a warm connection (one
// call answered), as a service holds it.
func proxied(t *testing.T, connect time.Duration) (*netfault.Network, healthpb.HealthClient) {
	t.Helper()
	n := netfault.New()
	t.Cleanup(n.Close)
	addr, err := n.Add(netfault.OrdersShipping, "127.0.0.1:0", callee(t))
	if err != nil {
		t.Fatal(err)
	}
	o := dial.Options{}
	if connect > 0 {
		o.ConnectTimeout = func() time.Duration { return connect }
	}
	cc, err := dial.Conn(addr, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	c := healthpb.NewHealthClient(cc)
	if _, err := check(c, 5*time.Second, grpc.WaitForReady(true)); err != nil {
		t.Fatalf("a call through the proxy with no fault: %v", err)
	}
	return n, c
}

// check makes one call with deadline d (none when d is 0) and says how
// long it took.
func check(c healthpb.HealthClient, d time.Duration, opts ...grpc.CallOption) (time.Duration, error) {
	ctx := context.Background()
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	start := time.Now()
	_, err := c.Check(ctx, &healthpb.HealthCheckRequest{}, opts...)
	return time.Since(start), err
}

func set(t *testing.T, n *netfault.Network, text string) {
	t.Helper()
	spec, err := netfault.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Set(netfault.OrdersShipping, spec); err != nil {
		t.Fatal(err)
	}
}

// TestLatencyWithJitter: the open connection feels the new latency; a
// call takes at least the latency less the jitter, and after Clear it is
// fast again.
func TestLatencyWithJitter(t *testing.T) {
	n, c := proxied(t, 0)
	set(t, n, "latency=300ms,jitter=50ms")
	for range 3 {
		took, err := check(c, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if took < 250*time.Millisecond {
			t.Errorf("a call took %v under latency=300ms,jitter=50ms, want at least 250ms", took)
		}
	}
	if err := n.Clear(netfault.OrdersShipping); err != nil {
		t.Fatal(err)
	}
	if took, err := check(c, 5*time.Second); err != nil || took > 200*time.Millisecond {
		t.Errorf("after Clear a call took %v (%v), want well under the 300ms latency", took, err)
	}
}

// TestBandwidth: a large response through a thin link takes at least its
// size over the rate.
func TestBandwidth(t *testing.T) {
	const size = 96 << 10 // bytes
	body := bytes.Repeat([]byte("x"), size)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) })}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	n := netfault.New()
	t.Cleanup(n.Close)
	addr, err := n.Add(netfault.OrdersShipping, "127.0.0.1:0", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	set(t, n, "bandwidth=64") // 64 KB/s: 96 KB take at least 1.5 s
	start := time.Now()
	resp, err := http.Get("http://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if err != nil || len(got) != size {
		t.Fatalf("read %d bytes (%v), want %d", len(got), err, size)
	}
	if want := 1400 * time.Millisecond; took < want {
		t.Errorf("%d KB at 64 KB/s took %v, want at least %v", size>>10, took, want)
	}
}

// TestStall: data stops on the open connection while the socket stays
// open. A call with a 500 ms deadline ends DeadlineExceeded; one with no
// deadline is still waiting at 2 s.
func TestStall(t *testing.T) {
	n, c := proxied(t, 0)
	set(t, n, "stall")
	took, err := check(c, 500*time.Millisecond)
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("a call with a 500ms deadline over a stalled link: %v, want DeadlineExceeded", err)
	}
	if took > 1500*time.Millisecond {
		t.Errorf("it ended after %v, want about its 500ms deadline", took)
	}
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, err := c.Check(ctx, &healthpb.HealthCheckRequest{})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a call with no deadline over a stalled link ended: %v, want it still waiting at 2s", err)
	case <-time.After(2 * time.Second):
	}
	cancel()
	<-done
	// Clearing the stall closes the stalled connection: the client
	// connects again and is answered. (A call sent while the old
	// connection closes may fail Unavailable; the next one is answered.)
	if err := n.Clear(netfault.OrdersShipping); err != nil {
		t.Fatal(err)
	}
	var errs []error
	for range 3 {
		if _, err = check(c, 5*time.Second, grpc.WaitForReady(true)); err == nil {
			break
		}
		errs = append(errs, err)
	}
	if err != nil || len(errs) > 1 {
		t.Errorf("after Clear: %v, want an answer by the second call", errs)
	}
}

// TestStallClearsIntoAnOpenPort: clearing a stall ends the calls held on
// it (Unavailable: their connection closes), and the port never refuses.
// A caller that tries again at once, as a retry does, connects and is
// answered; a port that refused that connection, even for a moment, would
// fail it too and leave gRPC backing off for a second, failing every
// call meanwhile. A stall on either way, or on both, clears the same.
func TestStallClearsIntoAnOpenPort(t *testing.T) {
	for _, spec := range []string{"stall", "stall,direction=up", "stall,direction=down"} {
		t.Run(spec, func(t *testing.T) { stallClears(t, spec) })
	}
}

func stallClears(t *testing.T, spec string) {
	n, c := proxied(t, 0)
	set(t, n, spec)
	const held = 20
	type outcome struct{ held, again error }
	done := make(chan outcome, held)
	for range held {
		go func() {
			var o outcome
			_, o.held = check(c, 10*time.Second)
			_, o.again = check(c, 5*time.Second)
			done <- o
		}()
	}
	time.Sleep(200 * time.Millisecond) // the calls are on the stalled connection
	if err := n.Clear(netfault.OrdersShipping); err != nil {
		t.Fatal(err)
	}
	for range held {
		o := <-done
		if status.Code(o.held) != codes.Unavailable {
			t.Errorf("a call held by the stall, after Clear: %v, want Unavailable", o.held)
		}
		if o.again != nil {
			t.Errorf("the call tried again at once: %v, want an answer", o.again)
		}
	}
}

// TestReset: the connection is reset; the call fails Unavailable, at once.
func TestReset(t *testing.T) {
	n, c := proxied(t, 0)
	set(t, n, "reset")
	took, err := check(c, 5*time.Second)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("a call over a resetting link: %v, want Unavailable", err)
	}
	if took > 2*time.Second {
		t.Errorf("it failed after %v, want at once", took)
	}
}

// TestDown: the link's port refuses. The open connection is closed, and a
// call fails Unavailable well before its deadline, under the connect
// timeout; after Clear the same port serves again.
func TestDown(t *testing.T) {
	n, c := proxied(t, 200*time.Millisecond)
	before := n.List()[0].Listen
	set(t, n, "down")
	if _, err := net.DialTimeout("tcp", before, time.Second); err == nil {
		t.Errorf("dialing %s with the link down succeeded, want refused", before)
	}
	took, err := check(c, 5*time.Second)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("a call over a link that is down: %v, want Unavailable", err)
	}
	if took > 2*time.Second {
		t.Errorf("it failed after %v, want within about the 200ms connect timeout", took)
	}
	if err := n.Clear(netfault.OrdersShipping); err != nil {
		t.Fatal(err)
	}
	if after := n.List()[0].Listen; after != before {
		t.Errorf("after Clear the link listens on %s, want %s again", after, before)
	}
	if _, err := check(c, 5*time.Second, grpc.WaitForReady(true)); err != nil {
		t.Errorf("after Clear: %v, want an answer", err)
	}
}

func TestSetListClear(t *testing.T) {
	n := netfault.New()
	t.Cleanup(n.Close)
	for _, l := range []string{netfault.OrdersShipping, netfault.GatewayOrders} {
		if _, err := n.Add(l, "127.0.0.1:0", "127.0.0.1:1"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := n.Add(netfault.OrdersShipping, "127.0.0.1:0", "127.0.0.1:1"); err == nil {
		t.Error("adding a link twice succeeded")
	}
	if _, err := n.Add("orders-fraud", "127.0.0.1:0", "127.0.0.1:1"); err == nil {
		t.Error("adding an unknown link succeeded")
	}
	set(t, n, "latency=100ms;bandwidth=32")
	set(t, n, "stall") // replaces
	views := n.List()
	if len(views) != 2 || views[0].Name != netfault.GatewayOrders || views[1].Faults.String() != "stall" || len(views[0].Faults) != 0 {
		t.Fatalf("List = %+v, want gateway-orders clear and orders-shipping stalled", views)
	}
	err := n.Set(netfault.OrdersPayments, netfault.Spec{})
	if !errors.Is(err, netfault.ErrUnknownLink) || !strings.Contains(err.Error(), "gateway-orders, orders-shipping") {
		t.Errorf("Set on a link not proxied = %v, want ErrUnknownLink naming the links there are", err)
	}
	if err := n.Clear(""); err != nil {
		t.Fatal(err)
	}
	for _, v := range n.List() {
		if len(v.Faults) != 0 {
			t.Errorf("after Clear(\"\") %s has %s", v.Name, v.Faults)
		}
	}
}
