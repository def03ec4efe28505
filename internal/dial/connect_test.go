package dial_test

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/dial"
	"github.com/mercado-lab/mercado/internal/faults"
)

// connect is the connect timeout under test; the call's own deadline is
// far longer, so only the connect timeout can end a call sooner.
const connect = 500 * time.Millisecond

// TestConnectTimeoutBoundsAnAddressThatAcceptsNothing calls a dependency
// whose address accepts no connections, with a real gRPC client: with the
// connect timeout, the call fails (Unavailable) within it, ± 20%; without
// it (naive: gRPC's default of 20 s a try) the call is still waiting at
// three times the connect timeout, when the test gives up on it.
func TestConnectTimeoutBoundsAnAddressThatAcceptsNothing(t *testing.T) {
	addrs := map[string]func(t *testing.T) string{
		// The backlog is full: the SYN goes unanswered.
		"no accept": func(t *testing.T) string {
			n, err := faults.ListenNoAccept()
			if err != nil {
				t.Skip(err)
			}
			t.Cleanup(func() { n.Close() })
			return n.Addr()
		},
		// The kernel completes the TCP connect, and nothing ever speaks:
		// the HTTP/2 handshake is what hangs.
		"silent": func(t *testing.T) string {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			return ln.Addr().String()
		},
	}
	for name, listen := range addrs {
		t.Run(name+"/budgeted", func(t *testing.T) {
			elapsed, err := check(t, listen(t), connect, 10*time.Second)
			t.Logf("connect timeout %v: the call ended after %v: %v", connect, elapsed.Round(time.Millisecond), err)
			if status.Code(err) != codes.Unavailable {
				t.Fatalf("call = %v, want Unavailable from the connect timeout", err)
			}
			if lo, hi := connect*8/10, connect*12/10; elapsed < lo || elapsed > hi {
				t.Errorf("the call failed after %v, want the connect timeout %v ± 20%%", elapsed, connect)
			}
		})
		t.Run(name+"/naive", func(t *testing.T) {
			patience := 3 * connect
			elapsed, err := check(t, listen(t), 0, patience)
			t.Logf("gRPC's default: the call ended after %v: %v", elapsed.Round(time.Millisecond), err)
			if status.Code(err) != codes.DeadlineExceeded || elapsed < patience*9/10 {
				t.Errorf("call = %v after %v, want it still waiting at %v (DeadlineExceeded from the test's own deadline)",
					err, elapsed, patience)
			}
		})
	}
}

// TestConnectTimeoutLeavesAHealthyConnectionAlone: the bound is the
// connection's making only; a call made long after it, on the connection
// it made, succeeds.
func TestConnectTimeoutLeavesAHealthyConnectionAlone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)

	limit := 200 * time.Millisecond
	cc, err := dial.Conn(ln.Addr().String(), dial.Options{ConnectTimeout: func() time.Duration { return limit }})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	client := healthpb.NewHealthClient(cc)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for i := range 2 {
		if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		time.Sleep(2 * limit) // past the connect timeout, on the same connection
	}
}

// check makes one call to addr through a connection whose attempts are
// bounded by limit (zero: gRPC's default), under a deadline of patience,
// and reports how long it took.
func check(t *testing.T, addr string, limit, patience time.Duration) (time.Duration, error) {
	t.Helper()
	cc, err := dial.Conn(addr, dial.Options{ConnectTimeout: func() time.Duration { return limit }})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	start := time.Now()
	_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	return time.Since(start), err
}
