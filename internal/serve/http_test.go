package serve_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/serve"
)

// httpService is a running StartHTTP process with a client.
type httpService struct {
	p      *serve.Process
	cancel context.CancelFunc
	web    *http.Client
}

func (s httpService) url(path string) string   { return "http://" + s.p.Addr + path }
func (s httpService) admin(path string) string { return "http://" + s.p.AdminAddr + path }

// startHTTP runs h under StartHTTP on loopback ports. The process is
// stopped when the test ends, if the test did not stop it.
func startHTTP(t *testing.T, h http.Handler, drain time.Duration) httpService {
	t.Helper()
	c := common(mode.Budgeted)
	c.DrainTimeout = drain
	kit, err := serve.NewKit("web", c, serve.KitOptions{}, discard)
	if err != nil {
		t.Fatalf("NewKit: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p, err := serve.StartHTTP(ctx, kit, h)
	if err != nil {
		cancel()
		t.Fatalf("StartHTTP: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		<-p.Done()
	})
	return httpService{p: p, cancel: cancel, web: newHTTPClient(t)}
}

func TestStartHTTPServesAndStops(t *testing.T) {
	s := startHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("hello"))
	}), stopBound)

	for _, tt := range []struct{ url, want string }{
		{s.url("/"), "hello"},
		{s.admin("/healthz"), "ok\n"},
		{s.admin("/readyz"), "ready\n"},
	} {
		if code, body := get(t, s.web, tt.url); code != http.StatusOK || body != tt.want {
			t.Errorf("GET %s = %d %q, want 200 %q", tt.url, code, body, tt.want)
		}
	}
	// The kit's admin API shares the admin listener; the serving port
	// leaves every path to the service's own handler.
	if code, _ := get(t, s.web, s.admin("/metrics")); code != http.StatusOK {
		t.Errorf("GET admin /metrics = %d, want 200", code)
	}
	if code, body := get(t, s.web, s.url("/healthz")); body != "hello" {
		t.Errorf("GET serving /healthz = %d %q, want the service's own handler", code, body)
	}

	s.cancel()
	if err := waitStopped(t, s.p); err != nil {
		t.Errorf("Wait() = %v after a clean shutdown, want nil", err)
	}
	checkAdminStopped(t, s.p)
	if !refused(s.p.Addr) {
		t.Error("serving listener still accepts connections after stopping")
	}
}

// A request in flight when the process is told to stop still completes;
// meanwhile readiness is false and new connections are refused.
func TestStartHTTPDrainsInFlight(t *testing.T) {
	// The handler is the slow request: it finishes when the test says so
	// rather than after a sleep, so the test cannot race it.
	started, release := make(chan struct{}), make(chan struct{})
	s := startHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		select {
		case <-release:
		case <-time.After(stopBound):
			http.Error(w, "test: never released", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("done"))
	}), stopBound)

	type result struct {
		code int
		body string
		err  error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := s.web.Get(s.url("/slow"))
		if err != nil {
			res <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		res <- result{code: resp.StatusCode, body: string(b), err: err}
	}()
	<-started
	s.cancel()

	waitFor(t, "/readyz to answer 503 while draining", func() bool {
		code, _ := get(t, s.web, s.admin("/readyz"))
		return code == http.StatusServiceUnavailable
	})
	waitFor(t, "the serving listener to refuse new connections", func() bool { return refused(s.p.Addr) })
	select {
	case <-s.p.Done():
		t.Fatal("the process stopped while a request was in flight")
	default:
	}

	close(release)
	r := <-res
	if r.err != nil || r.code != http.StatusOK || r.body != "done" {
		t.Errorf("request in flight = %d %q (err %v), want 200 \"done\"", r.code, r.body, r.err)
	}
	if err := waitStopped(t, s.p); err != nil {
		t.Errorf("Wait() = %v, want nil", err)
	}
	checkAdminStopped(t, s.p)
}

// Work still running when the drain timeout ends is cut off, and the
// process stops anyway.
func TestStartHTTPDrainTimeoutCutsOff(t *testing.T) {
	const drain = 200 * time.Millisecond
	started := make(chan struct{})
	s := startHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		select {
		case <-r.Context().Done(): // the connection was closed under it
		case <-time.After(stopBound):
		}
	}), drain)

	callErr := make(chan error, 1)
	go func() {
		resp, err := s.web.Get(s.url("/stuck"))
		if err == nil {
			resp.Body.Close()
		}
		callErr <- err
	}()
	<-started
	stopAsked := time.Now()
	s.cancel()

	if err := waitStopped(t, s.p); err != nil {
		t.Errorf("Wait() = %v, want nil: a cut-off drain is still a shutdown", err)
	}
	if took := time.Since(stopAsked); took < drain {
		t.Errorf("stopped after %v, before the %v drain timeout", took, drain)
	}
	if err := <-callErr; err == nil {
		t.Error("the stuck request got an answer, want its connection cut")
	}
}

func TestStartHTTPListenErrors(t *testing.T) {
	busy := busyAddr(t)
	tests := []struct{ name, addr, admin string }{
		{"serving address in use", busy, "127.0.0.1:0"},
		{"admin address in use", "127.0.0.1:0", busy},
		{"bad address", "127.0.0.1:notaport", "127.0.0.1:0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := common(mode.Budgeted)
			c.Addr, c.AdminAddr = tt.addr, tt.admin
			kit, err := serve.NewKit("web", c, serve.KitOptions{}, discard)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p, err := serve.StartHTTP(ctx, kit, http.NotFoundHandler())
			if err == nil {
				cancel()
				<-p.Done()
				t.Fatal("StartHTTP succeeded, want a listen error")
			}
			if p != nil {
				t.Error("StartHTTP returned a process with its error")
			}
		})
	}
}

func TestNewHTTPServerTimeouts(t *testing.T) {
	srv := serve.NewHTTPServer(http.NotFoundHandler())
	if srv.ReadHeaderTimeout != serve.ReadHeaderTimeout || srv.ReadTimeout != serve.ReadTimeout ||
		srv.WriteTimeout != serve.WriteTimeout || srv.IdleTimeout != serve.IdleTimeout ||
		srv.MaxHeaderBytes != serve.MaxHeaderBytes {
		t.Errorf("NewHTTPServer left a limit unset: %+v", srv)
	}
	for name, d := range map[string]time.Duration{
		"ReadHeaderTimeout": srv.ReadHeaderTimeout, "ReadTimeout": srv.ReadTimeout,
		"WriteTimeout": srv.WriteTimeout, "IdleTimeout": srv.IdleTimeout,
	} {
		if d <= 0 {
			t.Errorf("%s = %v: a slow client could hold a connection for ever", name, d)
		}
	}
}
