package serve

import (
	"context"
	"net/http"
	"time"
)

// Timeouts shared by every HTTP server Mercado runs: a slow or idle
// client can hold a connection only this long.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 15 * time.Second
	WriteTimeout      = 30 * time.Second
	IdleTimeout       = 90 * time.Second
	MaxHeaderBytes    = 16 << 10
)

// NewHTTPServer returns an http.Server for h with Mercado's timeouts.
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
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
// routes.
func newAdminServer(p *Process, extra http.Handler, ready func(context.Context) error) *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
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
	})
	if extra != nil {
		mux.Handle("/", extra)
	}
	return NewHTTPServer(mux)
}
