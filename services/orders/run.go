package orders

import (
	"context"
	"fmt"
	"log/slog"

	"google.golang.org/grpc"

	"github.com/mercado-lab/mercado/internal/dial"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/internal/sim"
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
	kit.SetBudget(serve.BudgetOptions{Calls: cfg.Calls, Work: map[string]string{"Checkout": sim.OrdersFinish}})
	store, keys, err := newStores(ctx, cfg, kit)
	if err != nil {
		kit.Close()
		return nil, err
	}
	chains := newChains(kit, cfg)
	var cs conns
	kit.OnClose(func() { cs.Close() })
	// One connection per dependency, each with its own chain, at the
	// address of the service that serves it; after the first failure
	// nothing more is opened.
	conn := map[string]*grpc.ClientConn{}
	for _, d := range graph(&cfg) {
		chain := []grpc.UnaryClientInterceptor{chains[d.Name]}
		if d.Name == "payments" {
			// After the chain, each attempt that leaves is recorded, to
			// tell a charge that cannot have taken money (notcharged.go).
			chain = append(chain, recordSent)
		}
		cc, err := dial.Conn(*d.addr, dial.Options{
			Interceptors:   chain,
			StatsHandler:   kit.Tracing.GRPCClientHandler(),
			ConnectTimeout: kit.ConnectTimeout,
		})
		if err != nil {
			kit.Close()
			return nil, err
		}
		cs = append(cs, cc)
		conn[d.Name] = cc
	}
	svc, err := NewService(Deps{
		Store: store, Keys: keys,
		Catalog:  catalogClient{catalogv1.NewCatalogServiceClient(conn["catalog"])},
		Payments: paymentsClient{paymentsv1.NewPaymentsServiceClient(conn["payments"])},
		Shipping: shippingClient{shippingv1.NewShippingServiceClient(conn["shipping"]), shippingv1.NewShippingServiceClient(conn[estimateDep])},
		Fraud:    fraudClient{paymentsv1.NewPaymentsServiceClient(conn["fraud"])},
		Audit:    auditClient{paymentsv1.NewPaymentsServiceClient(conn[auditDep])},
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
