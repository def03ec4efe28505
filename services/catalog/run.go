package catalog

import (
	"context"
	"fmt"
	"log/slog"

	"google.golang.org/grpc"

	"github.com/mercado-lab/mercado/internal/serve"
	catalogv1 "github.com/mercado-lab/mercado/proto/catalog/v1"
)

// Start runs the catalog service until ctx ends, on PostgreSQL when
// cfg.DatabaseURL is set, else on the in-memory store (see newStore).
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*serve.Process, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	kit, err := serve.NewKit("catalog", cfg, serve.KitOptions{}, log)
	if err != nil {
		return nil, err
	}
	store, err := newStore(ctx, cfg, kit)
	if err != nil {
		kit.Close()
		return nil, err
	}
	svc, err := NewService(store, kit.Faults, kit.Metrics.Custom())
	if err != nil {
		kit.Close()
		return nil, err
	}
	return serve.StartGRPC(ctx, kit, func(s *grpc.Server) { catalogv1.RegisterCatalogServiceServer(s, grpcServer{svc: svc}) })
}
