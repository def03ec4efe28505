package serve

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// MaxMessageBytes bounds every gRPC message Mercado sends or receives.
const MaxMessageBytes = 1 << 20

// GRPCOptions describe one gRPC service to run.
type GRPCOptions struct {
	Name      string
	Addr      string
	AdminAddr string
	// Settings are the mechanisms in force; read on every request.
	Settings *mode.Live
	// Register adds the service's handlers to the server.
	Register func(*grpc.Server)
	// Hooks observe arrivals and late work.
	Hooks        deadline.Hooks
	Logger       *slog.Logger
	DrainTimeout time.Duration
	// Admin serves extra admin routes; may be nil.
	Admin http.Handler
}

// StartGRPC starts a gRPC service with the standard health service and
// reflection, and its admin listener, and serves until ctx ends.
//
// Every request passes, in order: panic recovery; the deadline server
// interceptor (passive client deadline, arrival hooks, and admission when
// the settings turn it on); and, when the settings do not honour
// cancellation, a detach step that lets the work run on after the caller
// gave up, as a naive server does.
func StartGRPC(ctx context.Context, o GRPCOptions) (*Process, error) {
	srv := grpc.NewServer(
		grpc.MaxRecvMsgSize(MaxMessageBytes),
		grpc.MaxSendMsgSize(MaxMessageBytes),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: 5 * time.Minute}),
		grpc.ChainUnaryInterceptor(
			recoverPanics(o.Logger),
			deadline.UnaryServerInterceptor(deadline.ServerOptions{Policy: o.Settings.Policy, Hooks: o.Hooks}),
			detachUnlessHonoured(o.Settings),
		),
	)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	reflection.Register(srv)
	o.Register(srv)
	return start(ctx, options{
		name: o.Name, addr: o.Addr, adminAddr: o.AdminAddr,
		drain: o.DrainTimeout, log: o.Logger, admin: o.Admin,
		onStop: hs.Shutdown,
	}, grpcServer{srv})
}

type grpcServer struct{ *grpc.Server }

func (s grpcServer) Serve(ln net.Listener) error { return s.Server.Serve(ln) }

func (s grpcServer) Drain(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		s.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s grpcServer) Halt() { s.Stop() }

// detachUnlessHonoured models a server that does not notice its caller
// leaving: with HonourCancel off, the handler's context keeps its values
// (trace, client deadline) but loses the caller's deadline and
// cancellation, so the work runs to the end however late it is.
func detachUnlessHonoured(settings *mode.Live) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !settings.Load().Mechanisms.HonourCancel {
			ctx = context.WithoutCancel(ctx)
		}
		return handler(ctx, req)
	}
}

func recoverPanics(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if p := recover(); p != nil {
				log.Error("panic in handler", "method", info.FullMethod, "panic", p, "stack", string(debug.Stack()))
				err = status.Error(codes.Internal, "internal error")
			}
		}()
		return handler(ctx, req)
	}
}
