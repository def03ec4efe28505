package gateway

import (
	"context"
	"fmt"
	"log/slog"

	"google.golang.org/grpc"

	"github.com/mercado-lab/mercado/internal/dial"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/resilience"
	"github.com/mercado-lab/mercado/internal/serve"
	catalogv1 "github.com/mercado-lab/mercado/proto/catalog/v1"
	ordersv1 "github.com/mercado-lab/mercado/proto/orders/v1"
)

// server holds the gateway's dependencies for its handlers.
type server struct {
	cfg      Config
	kit      *serve.Kit
	settings *mode.Live
	orders   ordersv1.OrdersServiceClient
	catalog  catalogv1.CatalogServiceClient
	log      *slog.Logger
}

// Route classes: each gets its own bulkhead in budgeted mode, so a slow
// checkout cannot take browsing down with it.
const (
	classCheckout = "checkout"
	classBrowse   = "browse"
	classStatus   = "status"
)

// Start runs the gateway until ctx ends.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*serve.Process, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	kit, err := serve.NewKit("gateway", cfg.Common, serve.KitOptions{
		Classes: []string{classCheckout, classBrowse, classStatus},
		Peers:   cfg.AdminPeers,
	}, log)
	if err != nil {
		return nil, err
	}
	// Naive mode retries blind at this layer too (the retry storm);
	// budgeted mode retries only in orders, one layer down.
	ordersConn, err := dial.Conn(cfg.OrdersAddr, dial.Options{
		Interceptors: []grpc.UnaryClientInterceptor{kit.Outbound(resilience.OutboundOptions{
			Name: "orders", Cap: cfg.OrdersCap, NaiveRetries: true,
		}).Interceptor()},
		StatsHandler: kit.Tracing.GRPCClientHandler(),
	})
	if err != nil {
		kit.Close()
		return nil, err
	}
	catalogConn, err := dial.Conn(cfg.CatalogAddr, dial.Options{
		Interceptors: []grpc.UnaryClientInterceptor{kit.Outbound(resilience.OutboundOptions{
			Name: "catalog", Cap: cfg.CatalogCap, NaiveRetries: true,
		}).Interceptor()},
		StatsHandler: kit.Tracing.GRPCClientHandler(),
	})
	if err != nil {
		ordersConn.Close()
		kit.Close()
		return nil, err
	}
	s := &server{
		cfg: cfg, kit: kit, settings: kit.Settings, log: kit.Log,
		orders:  ordersv1.NewOrdersServiceClient(ordersConn),
		catalog: catalogv1.NewCatalogServiceClient(catalogConn),
	}
	p, err := serve.StartHTTP(ctx, kit, s.routes())
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
