package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc"

	"github.com/mercado-lab/mercado/internal/dial"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/internal/timing"
	"github.com/mercado-lab/mercado/pkg/deadline"
	catalogv1 "github.com/mercado-lab/mercado/proto/catalog/v1"
	ordersv1 "github.com/mercado-lab/mercado/proto/orders/v1"
)

// server holds the gateway's dependencies for its handlers.
type server struct {
	cfg      Config
	settings *mode.Live
	orders   ordersv1.OrdersServiceClient
	catalog  catalogv1.CatalogServiceClient
	log      *slog.Logger
}

// Start runs the gateway until ctx ends.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*serve.Process, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	settings := mode.NewLive(cfg.Settings())
	ordersConn, err := dialUpstream(cfg.OrdersAddr, "orders", cfg.OrdersCap, settings)
	if err != nil {
		return nil, err
	}
	catalogConn, err := dialUpstream(cfg.CatalogAddr, "catalog", cfg.CatalogCap, settings)
	if err != nil {
		ordersConn.Close()
		return nil, err
	}
	s := &server{
		cfg: cfg, settings: settings, log: log.With("service", "gateway"),
		orders:  ordersv1.NewOrdersServiceClient(ordersConn),
		catalog: catalogv1.NewCatalogServiceClient(catalogConn),
	}
	p, err := serve.StartHTTP(ctx, serve.HTTPOptions{
		Name: "gateway", Addr: cfg.Addr, AdminAddr: cfg.AdminAddr,
		Handler: s.routes(), Logger: log, DrainTimeout: cfg.DrainTimeout,
	})
	if err != nil {
		ordersConn.Close()
		catalogConn.Close()
		return nil, err
	}
	go func() {
		<-p.Done()
		ordersConn.Close()
		catalogConn.Close()
	}()
	return p, nil
}

// dialUpstream connects to an upstream through the deadline client
// interceptor and records each call as a hop named name.
func dialUpstream(target, name string, cap time.Duration, settings *mode.Live) (*grpc.ClientConn, error) {
	return dial.Conn(target, deadline.UnaryClientInterceptor(deadline.ClientOptions{
		Policy: settings.Policy,
		Cap:    func(string) time.Duration { return cap },
		Hooks: deadline.Hooks{OnCall: func(ctx context.Context, c deadline.CallInfo) {
			if rec := timing.FromContext(ctx); rec != nil {
				rec.Add(timing.Hop{Name: name, Timeout: c.Timeout, Took: c.Took, Outcome: string(c.Outcome)})
			}
		}},
	}))
}
