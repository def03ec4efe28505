package serve_test

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/serve"
)

// discard is the logger of every test: the servers' logs are not under test.
var discard = slog.New(slog.DiscardHandler)

// stopBound is how long a clean stop may take at most; far above what it
// takes, so that a slow CI machine never fails the test.
const stopBound = 10 * time.Second

// newHTTPClient returns a client with its own connections, closed when the
// test ends.
func newHTTPClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: stopBound}
}

// get fetches url and returns the status and body.
func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading body: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// waitFor polls cond every few milliseconds until it holds, failing the
// test if it does not within stopBound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(stopBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitStopped waits for p to stop and returns what Wait returned.
func waitStopped(t *testing.T, p *serve.Process) error {
	t.Helper()
	select {
	case <-p.Done():
		return p.Wait()
	case <-time.After(stopBound):
		t.Fatalf("%s did not stop within %v", p.Name, stopBound)
		return nil
	}
}

// refused reports whether a new connection to addr fails.
func refused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return true
	}
	c.Close()
	return false
}

// checkAdminStopped checks the admin listener no longer answers.
func checkAdminStopped(t *testing.T, p *serve.Process) {
	t.Helper()
	if p.Ready() {
		t.Error("Ready() = true after stopping")
	}
	if !refused(p.AdminAddr) {
		t.Error("admin listener still accepts connections after stopping")
	}
}

// busyAddr returns an address something already listens on.
func busyAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

var errTestTimeout = errors.New("test: handler waited too long")
