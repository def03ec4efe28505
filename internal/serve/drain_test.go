package serve_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/mercado-lab/mercado/internal/faults"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/problem"
	"github.com/mercado-lab/mercado/internal/serve"
)

// reply is one HTTP answer, read whole.
type reply struct {
	code   int
	header http.Header
	close  bool
	body   string
	err    error
}

func do(c *http.Client, method, url string) reply {
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return reply{err: err}
	}
	return send(c, req)
}

func post(c *http.Client, url, body string) reply {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return reply{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	return send(c, req)
}

// countDials returns a dialer that counts the connections it opens.
func countDials(n *atomic.Int32) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		n.Add(1)
		return d.DialContext(ctx, network, addr)
	}
}

func send(c *http.Client, req *http.Request) reply {
	resp, err := c.Do(req)
	if err != nil {
		return reply{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{code: resp.StatusCode, header: resp.Header, close: resp.Close, body: string(b), err: err}
}

// holdingHandler serves /slow only once the test closes release (after
// telling it, on started, that the request is in flight) and anything
// else at once.
func holdingHandler(started chan<- struct{}, release <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/slow" {
			_, _ = w.Write([]byte("fast"))
			return
		}
		close(started)
		select {
		case <-release:
			_, _ = w.Write([]byte("done"))
		case <-time.After(2 * stopBound):
			http.Error(w, "test: never released", http.StatusInternalServerError)
		}
	})
}

// While an HTTP service drains: /readyz answers 503 from the start, a
// request in flight before the stop finishes with its 200, a new request
// on a connection opened before the stop is answered 503 problem+json
// with Retry-After and "Connection: close" (never a reset), a new
// connection is refused, and the process stops once the request in
// flight is done.
func TestHTTPDrainAnswers503ToNewRequests(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	s := startHTTP(t, holdingHandler(started, release), stopBound)

	// The request in flight, on a client of its own.
	slow := make(chan reply, 1)
	go func() { slow <- do(newHTTPClient(t), http.MethodGet, s.url("/slow")) }()
	<-started

	// Another client holds an idle keep-alive connection, opened before
	// the stop, as a load balancer or the gateway's client pool does.
	var conns atomic.Int32
	kept := newHTTPClient(t)
	kept.Transport.(*http.Transport).DialContext = countDials(&conns)
	if r := do(kept, http.MethodGet, s.url("/fast")); r.err != nil || r.code != http.StatusOK {
		t.Fatalf("GET /fast before the stop = %d %v, want 200", r.code, r.err)
	}

	s.cancel()
	waitFor(t, "/readyz to answer 503 while draining", func() bool {
		code, _ := get(t, s.web, s.admin("/readyz"))
		return code == http.StatusServiceUnavailable
	})
	// The gate closes before the listener does: once new connections are
	// refused, every new request is answered 503.
	waitFor(t, "the serving listener to refuse new connections", func() bool { return refused(s.p.Addr) })

	// A POST with a body on the connection kept from before the stop.
	r := post(kept, s.url("/fast"), `{"x":1}`)
	if r.err != nil {
		t.Fatalf("POST on the kept connection while draining: %v, want a 503 answer", r.err)
	}
	if got := conns.Load(); got != 1 {
		t.Errorf("the client dialled %d connections, want only the one kept from before the stop", got)
	}
	checkDrain503(t, r)
	if r := do(newHTTPClient(t), http.MethodGet, s.url("/fast")); r.err == nil {
		t.Errorf("GET on a new connection while draining = %d, want the connection refused", r.code)
	}

	select {
	case <-s.p.Done():
		t.Fatal("the process stopped while a request was in flight")
	case r := <-slow:
		t.Fatalf("the request in flight ended (%d %q, err %v) before it was released", r.code, r.body, r.err)
	default:
	}
	close(release)
	if r := <-slow; r.err != nil || r.code != http.StatusOK || r.body != "done" {
		t.Errorf("request in flight = %d %q (err %v), want 200 \"done\"", r.code, r.body, r.err)
	}
	if err := waitStopped(t, s.p); err != nil {
		t.Errorf("Wait() = %v, want nil", err)
	}
	checkAdminStopped(t, s.p)
}

// checkDrain503 checks r is the drain's answer: 503 problem+json, retry
// in a second, on a connection that closes.
func checkDrain503(t *testing.T, r reply) {
	t.Helper()
	if r.code != http.StatusServiceUnavailable {
		t.Fatalf("answer while draining = %d %q, want 503", r.code, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != problem.ContentType {
		t.Errorf("Content-Type = %q, want %q", ct, problem.ContentType)
	}
	if ra := r.header.Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After = %q, want \"1\"", ra)
	}
	if !r.close {
		t.Error("the 503 keeps its connection open, want Connection: close")
	}
	var d problem.Details
	if err := json.Unmarshal([]byte(r.body), &d); err != nil || d.Status != http.StatusServiceUnavailable || d.Detail == "" {
		t.Errorf("body = %q (%v), want a 503 problem document with a detail", r.body, err)
	}
}

// With nothing in flight, the drain does not wait: the process stops at
// once, well within its drain timeout.
func TestHTTPDrainIdleStopsAtOnce(t *testing.T) {
	s := startHTTP(t, holdingHandler(make(chan struct{}), nil), time.Minute)
	kept := newHTTPClient(t)
	if r := do(kept, http.MethodGet, s.url("/fast")); r.code != http.StatusOK {
		t.Fatalf("GET /fast = %d %v", r.code, r.err)
	}
	asked := time.Now()
	s.cancel()
	if err := waitStopped(t, s.p); err != nil {
		t.Errorf("Wait() = %v, want nil", err)
	}
	// An idle keep-alive connection does not hold the drain up for the
	// minute of its drain timeout.
	if took := time.Since(asked); took > stopBound {
		t.Errorf("stopping took %v with nothing in flight", took)
	}
}

// While a gRPC service drains, a call in flight before the stop finishes,
// and new calls fail with Unavailable — at once, not at their deadline —
// whether on a connection opened before the stop (GOAWAY) or a new one
// (refused); /readyz answers 503 meanwhile.
func TestGRPCDrainRefusesNewCallsUnavailable(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	first.Store(true)
	pr := &probe{handle: func(ctx context.Context) error {
		if !first.Swap(false) {
			return nil // a later call that got in before the GOAWAY
		}
		close(started)
		select {
		case <-release:
			return nil
		case <-time.After(2 * stopBound):
			return errTestTimeout
		}
	}}
	s := startGRPC(t, common(mode.Budgeted), pr)

	inFlight := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*stopBound)
		defer cancel()
		inFlight <- s.call(ctx)
	}()
	<-started
	s.cancel()
	waitFor(t, "/readyz to answer 503 while draining", func() bool {
		code, _ := get(t, s.web, s.admin("/readyz"))
		return code == http.StatusServiceUnavailable
	})

	// On the connection opened before the stop. A call racing the GOAWAY
	// may still be taken, and then answered: that is work accepted, not
	// refused. Once the client has the GOAWAY, every call is Unavailable.
	waitFor(t, "a new call on the old connection to fail Unavailable", func() bool {
		err := callWithin(s.cc, stopBound)
		if err != nil && status.Code(err) != codes.Unavailable {
			t.Fatalf("new call while draining = %v, want OK or Unavailable", err)
		}
		return status.Code(err) == codes.Unavailable
	})
	// On a new connection: refused by the closed listener.
	cc, err := grpc.NewClient(s.p.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	if err := callWithin(cc, stopBound); status.Code(err) != codes.Unavailable {
		t.Errorf("call on a new connection while draining = %v, want Unavailable", err)
	}

	select {
	case <-s.p.Done():
		t.Fatal("the process stopped while a call was in flight")
	default:
	}
	close(release)
	if err := <-inFlight; err != nil {
		t.Errorf("the call in flight = %v, want success", err)
	}
	if err := waitStopped(t, s.p); err != nil {
		t.Errorf("Wait() = %v, want nil", err)
	}
}

// callWithin makes one probe call on cc and checks it fails fast: an
// Unavailable must come from the refusal, not from the deadline.
func callWithin(cc *grpc.ClientConn, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return cc.Invoke(ctx, probeMethod, &emptypb.Empty{}, &emptypb.Empty{})
}

// Work that ignores its context (HonourCancel off) and outlives the drain
// timeout is cut off, and ends with the process rather than running on
// inside it: the process's simulated work is halted.
func TestDrainTimeoutHaltsSimulatedWork(t *testing.T) {
	c := common(mode.Naive)
	c.DrainTimeout = 100 * time.Millisecond
	kit, err := serve.NewKit("probe", c, serve.KitOptions{}, discard)
	if err != nil {
		t.Fatal(err)
	}
	kit.Faults.Replace(faults.Set{"Call": {Latency: time.Hour}})
	started, ended := make(chan struct{}), make(chan error, 1)
	pr := &probe{handle: func(ctx context.Context) error {
		close(started)
		err := kit.Faults.Work(ctx, "Call") // naive: the wait ignores ctx
		ended <- err
		return err
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := serve.StartGRPC(ctx, kit, func(s *grpc.Server) { s.RegisterService(&probeDesc, pr) })
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(p.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	callErr := make(chan error, 1)
	go func() { callErr <- callWithin(cc, 2*stopBound) }()
	<-started
	cancel()
	if err := waitStopped(t, p); err != nil {
		t.Errorf("Wait() = %v, want nil", err)
	}
	select {
	case err := <-ended:
		if err == nil {
			t.Error("the simulated work ended without an error, want it halted")
		}
	case <-time.After(stopBound):
		t.Fatal("the simulated work runs on after its process stopped")
	}
	if err := <-callErr; err == nil {
		t.Error("the call cut off by the drain timeout succeeded")
	}
}
