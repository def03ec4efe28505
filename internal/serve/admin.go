package serve

import (
	"context"
	"net/http"
	"time"

	"github.com/mercado-lab/mercado/internal/problem"
)

// Timeouts shared by every HTTP server Mercado runs: a slow or idle
// client can hold a connection only this long.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 15 * time.Second
	WriteTimeout      = 30 * time.Second
	IdleTimeout       = 90 * time.Second
	// MaxHeaderBytes bounds a request's header block; past it the server
	// answers 431 before any handler runs.
	MaxHeaderBytes = 16 << 10
	// MaxBodyBytes bounds any request body, whatever the handler: a
	// handler that reads more gets an error, and the client a 413 from
	// handlers that check (each API sets a tighter limit of its own).
	MaxBodyBytes = 1 << 20
)

// NewHTTPServer returns an http.Server for h with Mercado's timeouts and
// size limits.
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           http.MaxBytesHandler(h, MaxBodyBytes),
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
	}
}

// ReadyTimeout bounds a readiness check (see Kit.SetReadiness), so that a
// probe gets its answer even when the check hangs.
const ReadyTimeout = time.Second

// newAdminServer serves /healthz (the process is alive), /readyz (it
// accepts new work, and ready, when given, passes) and any extra admin
// routes, with the same limits as every Mercado HTTP server.
func newAdminServer(p *Process, extra http.Handler, ready func(context.Context) error) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("/healthz", getOnly(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	}))
	mux.Handle("/readyz", getOnly(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !p.Ready() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("stopping\n"))
			return
		}
		if ready != nil {
			ctx, cancel := context.WithTimeout(r.Context(), ReadyTimeout)
			defer cancel()
			if err := ready(ctx); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte("not ready: " + err.Error() + "\n"))
				return
			}
		}
		_, _ = w.Write([]byte("ready\n"))
	}))
	if extra != nil {
		mux.Handle("/", extra)
	} else {
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			problem.Write(w, r, http.StatusNotFound, "no such admin route")
		})
	}
	return NewHTTPServer(mux)
}

// getOnly serves a probe to GET and HEAD, and answers any other method
// with a 405 problem document. (A "GET /healthz" pattern would hand other
// methods to the catch-all "/", as a 404.)
func getOnly(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			problem.Write(w, r, http.StatusMethodNotAllowed, r.Method+" is not allowed here")
			return
		}
		h(w, r)
	})
}
