package serve

import (
	"context"
	"net/http"

	"github.com/mercado-lab/mercado/pkg/deadline"
)

// StartHTTP starts k's HTTP service, serving h, and its admin listener and serves until
// ctx ends. Stopping answers new requests 503 and refuses new
// connections while requests in flight finish, up to the drain timeout
// (see drainingHTTP).
func StartHTTP(ctx context.Context, k *Kit, h http.Handler) (*Process, error) {
	srv := NewHTTPServer(h)
	if k.writeTimeout > 0 {
		srv.WriteTimeout = k.writeTimeout
	}
	// The edge counts its requests under one method (see deadline.Edge):
	// exported at zero from the start, like a gRPC service's methods.
	k.Metrics.Serving(deadline.EdgeMethod)
	return start(ctx, options{
		name: k.Name, addr: k.common.Addr, adminAddr: k.common.AdminAddr,
		drain: k.common.DrainTimeout, log: k.Log, admin: k.AdminHandler(), metrics: k.Metrics,
		ready: k.ready, release: k.Close,
	}, drainHTTP(srv))
}
