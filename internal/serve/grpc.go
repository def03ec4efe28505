package serve

import (
	"context"
	"log/slog"
	"net"
	"runtime/debug"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/telemetry"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// MaxMessageBytes bounds every gRPC message Mercado sends or receives.
const MaxMessageBytes = 1 << 20

// StartGRPC starts k's gRPC service, with its handlers added by register,
// with the standard health service (answering for each service's own name
// and for the empty one) and reflection, and its admin listener, and
// serves until ctx ends.
//
// When the kit's tracing is on, every request (health checks aside) gets
// a server span that continues the caller's trace. Every request passes,
// in order: panic recovery; the deadline server interceptor (passive
// client deadline, arrival metrics and span attributes, and admission when
// the settings turn it on); when the settings do not honour cancellation,
// a detach step that lets the work run on after the caller gave up, as a
// naive server does; and a wait for a worker from the service's pool.
func StartGRPC(ctx context.Context, k *Kit, register func(*grpc.Server)) (*Process, error) {
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(MaxMessageBytes),
		grpc.MaxSendMsgSize(MaxMessageBytes),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: 5 * time.Minute}),
		grpc.ChainUnaryInterceptor(
			recoverPanics(k.Log),
			deadline.UnaryServerInterceptor(deadline.ServerOptions{Policy: k.Settings.Policy, Hooks: k.DeadlineHooks()}),
			detachUnlessHonoured(k.Settings),
			k.Inbound.UnaryServerInterceptor(),
		),
	}
	// The server span starts at the transport, before the interceptors, so
	// the deadline interceptor's arrival hook annotates it. With tracing
	// off there is no handler at all.
	if h := k.Tracing.GRPCServerHandler(); h != nil {
		opts = append(opts, grpc.StatsHandler(h))
	}
	srv := grpc.NewServer(opts...)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	reflection.Register(srv)
	register(srv)
	servingHealth(srv, hs, k.Metrics)
	return start(ctx, options{
		name: k.Name, addr: k.common.Addr, adminAddr: k.common.AdminAddr,
		drain: k.common.DrainTimeout, log: k.Log, admin: k.AdminHandler(),
		onStop: hs.Shutdown, metrics: k.Metrics, ready: k.ready, release: k.Close,
	}, grpcServer{srv})
}

// servingHealth makes the health service answer SERVING for each service
// registered on srv by its own name (mercado.catalog.v1.CatalogService),
// as well as for the empty name that means the whole server; hs.Shutdown,
// at the start of a drain, turns every one NOT_SERVING. Each service's
// methods are declared to the metrics too, so that their request counters
// are exported, at zero, before the first request.
func servingHealth(srv *grpc.Server, hs *health.Server, m *telemetry.Metrics) {
	for name, info := range srv.GetServiceInfo() {
		if name == healthpb.Health_ServiceDesc.ServiceName || strings.HasPrefix(name, "grpc.reflection.") {
			continue
		}
		hs.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
		for _, method := range info.Methods {
			if !method.IsClientStream && !method.IsServerStream { // the interceptors count unary calls
				m.Serving("/" + name + "/" + method.Name)
			}
		}
	}
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
