package serve

import (
	"context"
	"log/slog"
	"net"
	"path"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/resilience"
	"github.com/mercado-lab/mercado/internal/telemetry"
)

// MaxMessageBytes bounds every gRPC message Mercado sends or receives.
const MaxMessageBytes = 1 << 20

// Flow control: Mercado's gRPC servers and clients (internal/dial) use
// static HTTP/2 windows, a stream's as large as the largest message, so
// that no message waits halfway for a window update, and a connection's
// four times that.
//
// gRPC's default is dynamic: after data arrives it sends a ping and, from
// the time its acknowledgment takes, estimates the link's bandwidth-delay
// product (BDP), to grow the windows for large transfers over long links.
// Mercado's messages are small and its links short (loopback, a private
// network), so the estimate had nothing to grow the windows for; it only
// cost a call up to two pings and their acknowledgments, about a dozen
// allocations for the two sides. A static window switches the estimate
// off (gRPC advises it mostly for servers short of memory; here a stream's
// window bounds nothing that MaxMessageBytes does not already).
const (
	streamWindowBytes = MaxMessageBytes
	connWindowBytes   = 4 * MaxMessageBytes
)

// streamWorkers is how many goroutines a gRPC server keeps to run requests
// on (grpc.NumStreamWorkers), instead of starting one per request. A
// request's goroutine starts with a small stack, which grows, copied
// each time, as the request goes down the interceptors, the handler and
// the calls it makes: about a tenth of a checkout's CPU. A kept worker's
// stack stays grown between requests.
//
// Four per core: a Mercado handler spends most of its time waiting for
// the calls it makes, so a server has a few requests in flight per core.
// More would each run too rarely to keep their stacks, which the garbage
// collector shrinks while a goroutine idles, and workers take requests in
// turn. A request that finds every worker busy runs on a goroutine of its
// own, as without workers, so the number bounds nothing.
func streamWorkers() uint32 { return uint32(4 * runtime.GOMAXPROCS(0)) }

// StartGRPC starts k's gRPC service, with its handlers added by register,
// with the standard health service (answering for each service's own name
// and for the empty one) and reflection, and its admin listener, and
// serves until ctx ends.
//
// Every request passes panic recovery, then resilience.ServerChain: the
// mode's snapshot, admission, detach (naive), and a worker from the
// service's pool (sized by --workers and --max-wait); last, before the
// handler, the door of the fault refuse-rate (refuseAtTheDoor). Its flow
// control windows are static (streamWindowBytes), and it runs requests on
// goroutines it keeps (streamWorkers). When the kit's
// tracing is on, every request (health checks aside) also gets a server
// span that continues the caller's trace.
func StartGRPC(ctx context.Context, k *Kit, register func(*grpc.Server)) (*Process, error) {
	chain := resilience.ServerChain(resilience.ServerOptions{
		Service: k.Name, Settings: k.Settings, Metrics: k.Metrics, Tracing: k.Tracing, Log: k.Log,
		Workers: k.common.Resilience.Workers, MaxWait: k.common.Resilience.MaxWait,
	})
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(MaxMessageBytes),
		grpc.MaxSendMsgSize(MaxMessageBytes),
		grpc.StaticStreamWindowSize(streamWindowBytes),
		grpc.StaticConnWindowSize(connWindowBytes),
		grpc.NumStreamWorkers(streamWorkers()),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: 5 * time.Minute}),
		grpc.ChainUnaryInterceptor(recoverPanics(k.Log), chain, refuseAtTheDoor(k)),
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

// refuseAtTheDoor applies the fault refuse-rate to the methods whose work
// the service simulates (faults.Methods, and a batch of one's work:
// faults.WorkOf): a request the rate picks is
// answered Unavailable, marked not processed, before its handler does
// anything, as a service shedding load or down for maintenance does. It
// runs last, so the refused request was counted and admitted like any
// other.
func refuseAtTheDoor(k *Kit) grpc.UnaryServerInterceptor {
	methods := faults.Methods(k.Name)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if m := faults.WorkOf(path.Base(info.FullMethod)); slices.Contains(methods, m) {
			if err := k.Faults.Refuse(m); err != nil {
				return nil, apperr.Status(err)
			}
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
