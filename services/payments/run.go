package payments

import (
	"context"
	"fmt"
	"log/slog"

	"google.golang.org/grpc"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/serve"
	paymentsv1 "github.com/mercado-lab/mercado/proto/payments/v1"
)

// Start runs the payments service until ctx ends, on the in-memory store.
// The faults in cfg shape the simulated payment provider's work.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*serve.Process, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("payments: %w", err)
	}
	settings := mode.NewLive(cfg.Settings())
	svc, err := NewService(NewMemStore(), faults.NewInjector(cfg.Faults), settings)
	if err != nil {
		return nil, err
	}
	return serve.StartGRPC(ctx, serve.GRPCOptions{
		Name: "payments", Addr: cfg.Addr, AdminAddr: cfg.AdminAddr,
		Settings: settings, Logger: log, DrainTimeout: cfg.DrainTimeout,
		Register: func(s *grpc.Server) { paymentsv1.RegisterPaymentsServiceServer(s, grpcServer{svc: svc}) },
	})
}
