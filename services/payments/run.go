package payments

import (
	"context"
	"fmt"
	"log/slog"

	"google.golang.org/grpc"

	"github.com/mercado-lab/mercado/internal/serve"
	paymentsv1 "github.com/mercado-lab/mercado/proto/payments/v1"
)

// Start runs the payments service until ctx ends, on PostgreSQL when
// cfg.DatabaseURL is set, else on the in-memory store (see newStore).
// The faults in cfg shape the simulated payment provider's work.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*serve.Process, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("payments: %w", err)
	}
	kit, err := serve.NewKit("payments", cfg, serve.KitOptions{}, log)
	if err != nil {
		return nil, err
	}
	store, auditStore, err := newStores(ctx, cfg, kit)
	if err != nil {
		kit.Close()
		return nil, err
	}
	svc, err := NewService(store, kit.Faults, kit.Settings)
	if err != nil {
		kit.Close()
		return nil, err
	}
	audit, err := NewAuditTrail(auditStore, kit.Faults)
	if err != nil {
		kit.Close()
		return nil, err
	}
	kit.HandleAdmin("GET /admin/charges", chargesHandler(svc))
	kit.HandleAdmin("GET /admin/audit", auditHandler(audit))
	if err := observeDuplicates(kit, svc); err != nil {
		kit.Close()
		return nil, err
	}
	return serve.StartGRPC(ctx, kit, func(s *grpc.Server) { paymentsv1.RegisterPaymentsServiceServer(s, grpcServer{svc: svc, audit: audit}) })
}
