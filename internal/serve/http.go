package serve

import (
	"context"
	"net/http"
)

// StartHTTP starts k's HTTP service, serving h, and its admin listener and serves until
// ctx ends. Shutdown stops accepting connections, closes idle ones, and
// waits for requests in flight up to the drain timeout.
func StartHTTP(ctx context.Context, k *Kit, h http.Handler) (*Process, error) {
	srv := NewHTTPServer(h)
	return start(ctx, options{
		name: k.Name, addr: k.common.Addr, adminAddr: k.common.AdminAddr,
		drain: k.common.DrainTimeout, log: k.Log, admin: k.AdminHandler(), metrics: k.Metrics,
		ready: k.ready, release: k.Close,
	}, httpServer{srv})
}

type httpServer struct{ *http.Server }

func (s httpServer) Drain(ctx context.Context) error { return s.Shutdown(ctx) }
func (s httpServer) Halt()                           { _ = s.Close() }
