package orders

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/serve"
	catalogv1 "github.com/mercado-lab/mercado/proto/catalog/v1"
	ordersv1 "github.com/mercado-lab/mercado/proto/orders/v1"
	paymentsv1 "github.com/mercado-lab/mercado/proto/payments/v1"
	shippingv1 "github.com/mercado-lab/mercado/proto/shipping/v1"
)

// Start runs the orders service until ctx ends, on the in-memory store.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*serve.Process, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("orders: %w", err)
	}
	settings := mode.NewLive(cfg.Settings())
	var cs conns
	for _, d := range []struct {
		addr string
		cap  time.Duration
	}{{cfg.CatalogAddr, cfg.CatalogCap}, {cfg.PaymentsAddr, cfg.PaymentsCap}, {cfg.ShippingAddr, cfg.ShippingCap}} {
		cc, err := dialDependency(d.addr, d.cap, settings)
		if err != nil {
			cs.Close()
			return nil, err
		}
		cs = append(cs, cc)
	}
	catalogConn, paymentsConn, shippingConn := cs[0], cs[1], cs[2]

	svc, err := NewService(NewMemStore(),
		catalogClient{catalogv1.NewCatalogServiceClient(catalogConn)},
		paymentsClient{paymentsv1.NewPaymentsServiceClient(paymentsConn)},
		shippingClient{shippingv1.NewShippingServiceClient(shippingConn)},
		log.With("service", "orders"))
	if err != nil {
		cs.Close()
		return nil, err
	}
	p, err := serve.StartGRPC(ctx, serve.GRPCOptions{
		Name: "orders", Addr: cfg.Addr, AdminAddr: cfg.AdminAddr,
		Settings: settings, Logger: log, DrainTimeout: cfg.DrainTimeout,
		Register: func(s *grpc.Server) { ordersv1.RegisterOrdersServiceServer(s, grpcServer{svc: svc}) },
	})
	if err != nil {
		cs.Close()
		return nil, err
	}
	go func() {
		<-p.Done()
		cs.Close()
	}()
	return p, nil
}
