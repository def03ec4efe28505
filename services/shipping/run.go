package shipping

import (
	"context"
	"fmt"
	"log/slog"

	"google.golang.org/grpc"

	"github.com/mercado-lab/mercado/internal/serve"
	shippingv1 "github.com/mercado-lab/mercado/proto/shipping/v1"
)

// Start runs the shipping service until ctx ends, on PostgreSQL when
// cfg.DatabaseURL is set, else on the in-memory store (see newStore).
// The faults in cfg shape the simulated carrier's work.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*serve.Process, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("shipping: %w", err)
	}
	kit, err := serve.NewKit("shipping", cfg, serve.KitOptions{}, log)
	if err != nil {
		return nil, err
	}
	store, err := newStore(ctx, cfg, kit)
	if err != nil {
		kit.Close()
		return nil, err
	}
	svc, err := NewService(store, kit.Faults)
	if err != nil {
		kit.Close()
		return nil, err
	}
	return serve.StartGRPC(ctx, kit, func(s *grpc.Server) { shippingv1.RegisterShippingServiceServer(s, grpcServer{svc: svc}) })
}
