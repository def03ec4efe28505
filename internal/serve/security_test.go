package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/serve"
)

// Every HTTP server Mercado runs — the public one (NewHTTPServer) and the
// admin listener — bounds how long a client may take over each part of a
// request and how large its headers and body may be.
func TestEveryHTTPServerHasLimits(t *testing.T) {
	for name, srv := range map[string]*http.Server{
		"public":               serve.NewHTTPServer(http.NotFoundHandler()),
		"admin":                serve.NewAdminServer(http.NotFoundHandler(), nil),
		"admin without routes": serve.NewAdminServer(nil, nil),
	} {
		t.Run(name, func(t *testing.T) {
			for field, got := range map[string]time.Duration{
				"ReadHeaderTimeout": srv.ReadHeaderTimeout, "ReadTimeout": srv.ReadTimeout,
				"WriteTimeout": srv.WriteTimeout, "IdleTimeout": srv.IdleTimeout,
			} {
				if got <= 0 {
					t.Errorf("%s = %v: a slow client could hold a connection for ever", field, got)
				}
			}
			if srv.ReadHeaderTimeout > srv.ReadTimeout {
				t.Errorf("ReadHeaderTimeout %v is above ReadTimeout %v", srv.ReadHeaderTimeout, srv.ReadTimeout)
			}
			if srv.MaxHeaderBytes != serve.MaxHeaderBytes || serve.MaxHeaderBytes <= 0 {
				t.Errorf("MaxHeaderBytes = %d, want %d", srv.MaxHeaderBytes, serve.MaxHeaderBytes)
			}
		})
	}
}

// A handler that reads a body with no limit of its own still reads at most
// MaxBodyBytes: the server bounds every body.
func TestEveryHTTPServerBoundsBodies(t *testing.T) {
	read := make(chan int64, 1)
	s := startHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		read <- n
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
		}
	}), stopBound)
	resp, err := s.web.Post(s.url("/"), "application/octet-stream", bytes.NewReader(make([]byte, 2*serve.MaxBodyBytes)))
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("status = %d, want 413", resp.StatusCode)
		}
	}
	if n := <-read; n > serve.MaxBodyBytes {
		t.Errorf("the handler read %d bytes, over the %d limit", n, serve.MaxBodyBytes)
	}
}

// Headers over the limit are refused by the server itself, 431, on both
// listeners.
func TestEveryHTTPServerBoundsHeaders(t *testing.T) {
	s := startHTTP(t, http.NotFoundHandler(), stopBound)
	for _, url := range []string{s.url("/"), s.admin("/healthz")} {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("X-Padding", strings.Repeat("p", 4*serve.MaxHeaderBytes))
		resp, err := s.web.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("GET %s with %d bytes of headers = %d, want 431", url, 4*serve.MaxHeaderBytes, resp.StatusCode)
		}
	}
}

// On a running admin listener: changes need the token when one is set,
// the probes answer their method only, and every refusal is a problem
// document.
func TestAdminListenerSecurity(t *testing.T) {
	c := common(mode.Budgeted)
	c.AdminToken = "listener-token"
	kit, err := serve.NewKit("web", c, serve.KitOptions{}, discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p, err := serve.StartHTTP(ctx, kit, http.NotFoundHandler())
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-p.Done() })
	web := newHTTPClient(t)
	for _, tc := range []struct {
		name, method, path, auth string
		code                     int
	}{
		{"a change without the token", http.MethodPut, "/admin/mode", "", http.StatusUnauthorized},
		{"a change with a wrong token", http.MethodPut, "/admin/mode", "Bearer nope", http.StatusUnauthorized},
		{"POST /healthz", http.MethodPost, "/healthz", "", http.StatusMethodNotAllowed},
		{"DELETE /readyz", http.MethodDelete, "/readyz", "", http.StatusMethodNotAllowed},
		{"PUT /metrics", http.MethodPut, "/metrics", "", http.StatusMethodNotAllowed},
		{"an unknown route", http.MethodGet, "/nope", "", http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, "http://"+p.AdminAddr+tc.path, strings.NewReader(`{"mode":"naive"}`))
			req.Header.Set("Content-Type", "application/json")
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := web.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var doc struct {
				Status int    `json:"status"`
				Detail string `json:"detail"`
			}
			if resp.StatusCode != tc.code || resp.Header.Get("Content-Type") != "application/problem+json" ||
				json.NewDecoder(resp.Body).Decode(&doc) != nil || doc.Status != tc.code || doc.Detail == "" {
				t.Errorf("%s %s = %d %s %+v, want a %d problem document", tc.method, tc.path,
					resp.StatusCode, resp.Header.Get("Content-Type"), doc, tc.code)
			}
		})
	}
	if got := kit.Settings.Load().Mode; got != mode.Budgeted {
		t.Errorf("mode = %s after refused switches", got)
	}
	for _, probe := range []string{"/healthz", "/readyz"} {
		if code, _ := get(t, web, "http://"+p.AdminAddr+probe); code != http.StatusOK {
			t.Errorf("GET %s = %d, want 200", probe, code)
		}
	}
}

// A gRPC request over the 1 MiB message limit is refused with
// ResourceExhausted by a real server, before any handler runs.
func TestGRPCMessageLimit(t *testing.T) {
	kit, err := serve.NewKit("probe", common(mode.Budgeted), serve.KitOptions{}, discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p, err := serve.StartGRPC(ctx, kit, func(*grpc.Server) {})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-p.Done() })
	cc, err := grpc.NewClient(p.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	health := healthpb.NewHealthClient(cc)
	callCtx, callCancel := context.WithTimeout(context.Background(), stopBound)
	defer callCancel()
	if _, err := health.Check(callCtx, &healthpb.HealthCheckRequest{Service: strings.Repeat("s", serve.MaxMessageBytes-1024)}); status.Code(err) == codes.ResourceExhausted {
		t.Errorf("a request just under the limit: %v", err)
	}
	_, err = health.Check(callCtx, &healthpb.HealthCheckRequest{Service: strings.Repeat("s", serve.MaxMessageBytes+1)})
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a request over %d bytes: %v, want ResourceExhausted", serve.MaxMessageBytes, err)
	}
}

// Neither the admin token nor the database password reaches the logs:
// not at start-up, not when a change is made or refused, not at shutdown.
func TestNoSecretsInLogs(t *testing.T) {
	const tok, password = "tok-9f8e7d6c5b4a", "pa55-w0rd-1234"
	var logs syncBuffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := common(mode.Budgeted)
	c.AdminToken = tok
	c.DatabaseURL = "postgres://mercado:" + password + "@127.0.0.1:1/mercado?sslmode=disable"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	kit, err := serve.NewKit("web", c, serve.KitOptions{}, log)
	if err != nil {
		t.Fatal(err)
	}
	// The database is down: opening it fails, and says so without the
	// password, in the error and in the log.
	openCtx, openCancel := context.WithTimeout(context.Background(), stopBound)
	_, dbErr := kit.OpenDatabase(openCtx, func(context.Context, *pgxpool.Pool) error { return nil })
	openCancel()
	if dbErr == nil {
		t.Fatal("OpenDatabase on a closed port succeeded")
	}
	log.Error("database unavailable", "err", dbErr)

	ctx, cancel := context.WithCancel(context.Background())
	p, err := serve.StartHTTP(ctx, kit, http.NotFoundHandler())
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	web := newHTTPClient(t)
	for _, auth := range []string{"Bearer " + tok, "Bearer wrong-" + tok} {
		req, _ := http.NewRequest(http.MethodPut, "http://"+p.AdminAddr+"/admin/mode", strings.NewReader(`{"mode":"naive"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", auth)
		resp, err := web.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	cancel()
	<-p.Done()

	out := logs.String()
	if !strings.Contains(out, "mode switched") || !strings.Contains(out, "serving") {
		t.Fatalf("the logs miss the lines under test:\n%s", out)
	}
	for _, secret := range []string{tok, password} {
		if strings.Contains(out, secret) {
			t.Errorf("the logs show %q:\n%s", secret, out)
		}
		if strings.Contains(dbErr.Error(), secret) {
			t.Errorf("the database error shows %q: %v", secret, dbErr)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the servers' goroutines to log to.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
