package catalog

import (
	"context"
	"fmt"
	"log/slog"

	"google.golang.org/grpc"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/serve"
	catalogv1 "github.com/mercado-lab/mercado/proto/catalog/v1"
)

// Start runs the catalog service until ctx ends, on the in-memory store
// seeded with the demo catalogue.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*serve.Process, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	settings := mode.NewLive(cfg.Settings())
	svc, err := NewService(NewMemStore(Seed()), faults.NewInjector(cfg.Faults), settings)
	if err != nil {
		return nil, err
	}
	return serve.StartGRPC(ctx, serve.GRPCOptions{
		Name: "catalog", Addr: cfg.Addr, AdminAddr: cfg.AdminAddr,
		Settings: settings, Logger: log, DrainTimeout: cfg.DrainTimeout,
		Register: func(s *grpc.Server) { catalogv1.RegisterCatalogServiceServer(s, grpcServer{svc: svc}) },
	})
}
