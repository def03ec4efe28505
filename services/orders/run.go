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
	for _, d := range []struct {
		addr  string
		chain []grpc.UnaryClientInterceptor
	}{
		{cfg.CatalogAddr, []grpc.UnaryClientInterceptor{deps.catalog}},
		// After the chain, each attempt that leaves is recorded, to tell a
		// charge that cannot have taken money (notcharged.go).
		{cfg.PaymentsAddr, []grpc.UnaryClientInterceptor{deps.payments, recordSent}},
		{cfg.ShippingAddr, []grpc.UnaryClientInterceptor{deps.shipping}},
		{cfg.PaymentsAddr, []grpc.UnaryClientInterceptor{deps.fraud}},
		{cfg.ShippingAddr, []grpc.UnaryClientInterceptor{deps.estimate}},
		{cfg.PaymentsAddr, []grpc.UnaryClientInterceptor{deps.audit}},
	} {
		cc, err := dial.Conn(d.addr, dial.Options{
			Interceptors:   d.chain,
			StatsHandler:   kit.Tracing.GRPCClientHandler(),
			ConnectTimeout: kit.ConnectTimeout,
		})
		if err != nil {
			kit.Close()
			return nil, err
		}
		cs = append(cs, cc)
	}
	svc, err := NewService(Deps{
		Store: store, Keys: keys,
		Catalog:  catalogClient{catalogv1.NewCatalogServiceClient(cs[0])},
		Payments: paymentsClient{paymentsv1.NewPaymentsServiceClient(cs[1])},
		Shipping: shippingClient{shippingv1.NewShippingServiceClient(cs[2]), shippingv1.NewShippingServiceClient(cs[4])},
		Fraud:    fraudClient{paymentsv1.NewPaymentsServiceClient(cs[3])},
		Audit:    auditClient{paymentsv1.NewPaymentsServiceClient(cs[5])},
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
