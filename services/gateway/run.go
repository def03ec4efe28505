package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc"

	"github.com/mercado-lab/mercado/internal/dial"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/resilience"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/pkg/resilience/breaker"
	"github.com/mercado-lab/mercado/pkg/resilience/bulkhead"
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
	answers  *Answers
	log      *slog.Logger
}

// Route groups: each gets its own bulkhead in budgeted mode, so a slow
// checkout cannot take browsing down with it, nor an export the shop.
// (A class is something else: a request's traffic class — interactive,
// background, batch — pkg/deadline's Class.)
const (
	routeCheckout = "checkout"
	routeBrowse   = "browse"
	routeStatus   = "status"
	routeExport   = "export"
)

// Start runs the gateway until ctx ends.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*serve.Process, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	kit, err := serve.NewKit("gateway", cfg.Common, serve.KitOptions{Peers: cfg.AdminPeers}, log)
	if err != nil {
		return nil, err
	}
	kit.SetWriteTimeout(cfg.WriteTimeout())
	kit.SetBudget(serve.BudgetOptions{Calls: cfg.Calls, Accepts: cfg.Accepts, Edge: cfg.Edge})
	ordersConn, err := dial.Conn(cfg.OrdersAddr, dial.Options{
		Interceptors:   []grpc.UnaryClientInterceptor{clientChain(kit, cfg, "orders", cfg.OrdersCap)},
		StatsHandler:   kit.Tracing.GRPCClientHandler(),
		ConnectTimeout: kit.ConnectTimeout,
	})
	if err != nil {
		kit.Close()
		return nil, err
	}
	catalogConn, err := dial.Conn(cfg.CatalogAddr, dial.Options{
		Interceptors:   []grpc.UnaryClientInterceptor{clientChain(kit, cfg, "catalog", cfg.CatalogCap)},
		StatsHandler:   kit.Tracing.GRPCClientHandler(),
		ConnectTimeout: kit.ConnectTimeout,
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
		answers: newAnswers(cfg.Budgets()),
	}
	var console consoleSlot
	if cfg.Console != nil {
		kit.HandleAdmin("/console/", &console)
	}
	p, err := serve.StartHTTP(ctx, kit, s.routes())
	if err != nil {
		ordersConn.Close()
		catalogConn.Close()
		return nil, err
	}
	if cfg.Console != nil {
		console.set(cfg.Console(ctx, Listening{URL: loopbackURL(p.Addr), AdminURL: loopbackURL(p.AdminAddr),
			Peers: cfg.AdminPeers, NetworkAdmin: cfg.NetworkAdmin, Token: cfg.AdminToken, Answers: s.answers}))
	}
	go func() {
		<-p.Done()
		ordersConn.Close()
		catalogConn.Close()
	}()
	return p, nil
}

// clientChain is the chain of the gateway's calls to one upstream
// (resilience.ClientChain: retries, pool, breaker, clip), with its own cap.
// Naive mode retries blind at this layer too (the retry storm); budgeted
// mode retries only in orders, one layer down. Naive calls take no pool
// here; budgeted ones take the upstream's own bulkhead.
func clientChain(kit *serve.Kit, cfg Config, name string, cap time.Duration) grpc.UnaryClientInterceptor {
	r := cfg.Resilience
	return resilience.ClientChain(resilience.NewOutbound(resilience.OutboundOptions{
		Name: name, Cap: cap,
		Settings: kit.Settings, Metrics: kit.Metrics, Tracing: kit.Tracing, Log: kit.Log,
		Bulkhead:     bulkhead.Settings{Capacity: r.Bulkhead, MaxWait: r.MaxWait},
		Breaker:      breaker.Settings{MinCalls: r.BreakerMinCalls, FailureRatio: r.BreakerRatio, Window: r.BreakerWindow, OpenFor: r.BreakerOpen},
		NaiveRetries: true,
	}))
}
