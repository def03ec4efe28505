package orders

import (
	"context"
	"fmt"
	"log/slog"

	"google.golang.org/grpc"

	"github.com/mercado-lab/mercado/internal/dial"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/serve"
	catalogv1 "github.com/mercado-lab/mercado/proto/catalog/v1"
	ordersv1 "github.com/mercado-lab/mercado/proto/orders/v1"
	paymentsv1 "github.com/mercado-lab/mercado/proto/payments/v1"
	shippingv1 "github.com/mercado-lab/mercado/proto/shipping/v1"
)

// Start runs the orders service until ctx ends, on PostgreSQL when
// cfg.DatabaseURL is set, else on the in-memory stores (see newStores).
//
// When the process stops, after its requests in flight have drained, the
// background workers stop first, then the client connections close, then
// the database pool: the kit's closers run last registered first.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*serve.Process, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("orders: %w", err)
	}
	kit, err := serve.NewKit("orders", cfg.Common, serve.KitOptions{}, log)
	if err != nil {
		return nil, err
	}
	// Its contract: a checkout's own work is its final write.
	kit.SetBudget(serve.BudgetOptions{Calls: cfg.Calls, Work: map[string]string{"Checkout": faults.OrdersFinish}})
	store, keys, err := newStores(ctx, cfg, kit)
	if err != nil {
		kit.Close()
		return nil, err
	}
	deps := newDependencies(kit, cfg)
	var cs conns
	kit.OnClose(func() { cs.Close() })
	// connect opens one connection per dependency, each with its own
	// chain; after the first failure it opens nothing more.
	var dialErr error
	connect := func(addr string, chain ...grpc.UnaryClientInterceptor) *grpc.ClientConn {
		if dialErr != nil {
			return nil
		}
		cc, err := dial.Conn(addr, dial.Options{
			Interceptors:   chain,
			StatsHandler:   kit.Tracing.GRPCClientHandler(),
			ConnectTimeout: kit.ConnectTimeout,
		})
		if err != nil {
			dialErr = err
			return nil
		}
		cs = append(cs, cc)
		return cc
	}
	catalog := connect(cfg.CatalogAddr, deps.catalog)
	// After the chain, each attempt that leaves is recorded, to tell a
	// charge that cannot have taken money (notcharged.go).
	payments := connect(cfg.PaymentsAddr, deps.payments, recordSent)
	shipping := connect(cfg.ShippingAddr, deps.shipping)
	fraud := connect(cfg.PaymentsAddr, deps.fraud)
	estimate := connect(cfg.ShippingAddr, deps.estimate)
	audit := connect(cfg.PaymentsAddr, deps.audit)
	if dialErr != nil {
		kit.Close()
		return nil, dialErr
	}
	svc, err := NewService(Deps{
		Store: store, Keys: keys,
		Catalog:  catalogClient{catalogv1.NewCatalogServiceClient(catalog)},
		Payments: paymentsClient{paymentsv1.NewPaymentsServiceClient(payments)},
		Shipping: shippingClient{shippingv1.NewShippingServiceClient(shipping), shippingv1.NewShippingServiceClient(estimate)},
		Fraud:    fraudClient{paymentsv1.NewPaymentsServiceClient(fraud)},
		Audit:    auditClient{paymentsv1.NewPaymentsServiceClient(audit)},
		Settings: kit.Settings, Log: kit.Log, Work: kit.Faults, Metrics: kit.Metrics,
	})
	if err != nil {
		kit.Close()
		return nil, err
	}
	kit.HandleAdmin("GET /admin/graph", graphHandler(cfg, AuditSettings{}, kit.Settings))
	// Registered after the connections' closer, so it runs before it: the
	// queue is written out while payments can still be reached, once the
	// requests in flight (and the workers, registered below) have stopped.
	stopAudit := svc.StartAudit()
	kit.OnClose(func() { stopAudit(cfg.DrainTimeout) })
	kit.RunWorkers(ctx, func(ctx context.Context) { svc.RunWorkers(ctx, kit.Log) })
	// On failure, StartGRPC closes the kit: the workers stop, and the rest.
	return serve.StartGRPC(ctx, kit, func(s *grpc.Server) { ordersv1.RegisterOrdersServiceServer(s, grpcServer{svc: svc}) })
}
