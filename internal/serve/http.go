package serve

import (
	"context"
	"log/slog"
	"net/http"
	"time"
)

// HTTPOptions describe one HTTP service to run.
type HTTPOptions struct {
	Name         string
	Addr         string
	AdminAddr    string
	Handler      http.Handler
	Logger       *slog.Logger
	DrainTimeout time.Duration
	// Admin serves extra admin routes; may be nil.
	Admin http.Handler
}

// StartHTTP starts an HTTP service and its admin listener and serves until
// ctx ends. Shutdown stops accepting connections, closes idle ones, and
// waits for requests in flight up to the drain timeout.
func StartHTTP(ctx context.Context, o HTTPOptions) (*Process, error) {
	srv := NewHTTPServer(o.Handler)
	return start(ctx, options{
		name: o.Name, addr: o.Addr, adminAddr: o.AdminAddr,
		drain: o.DrainTimeout, log: o.Logger, admin: o.Admin,
	}, httpServer{srv})
}

type httpServer struct{ *http.Server }

func (s httpServer) Drain(ctx context.Context) error { return s.Shutdown(ctx) }
func (s httpServer) Halt()                           { _ = s.Close() }
