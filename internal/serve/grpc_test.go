package serve_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// probe is a one-method gRPC service whose handler the test supplies, so a
// test can see the context the server's interceptors hand to a handler.
type probe struct {
	calls  atomic.Int32
	handle func(ctx context.Context) error
}

const probeMethod = "/mercado.test.Probe/Call"

// probeDesc is what protoc would generate for
//
//	service Probe { rpc Call(google.protobuf.Empty) returns (google.protobuf.Empty); }
var probeDesc = grpc.ServiceDesc{
	ServiceName: "mercado.test.Probe",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Call",
		Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
			in := new(emptypb.Empty)
			if err := dec(in); err != nil {
				return nil, err
			}
			h := func(ctx context.Context, _ any) (any, error) {
				p := srv.(*probe)
				p.calls.Add(1)
				if p.handle != nil {
					if err := p.handle(ctx); err != nil {
						return nil, err
					}
				}
				return &emptypb.Empty{}, nil
			}
			return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: probeMethod}, h)
		},
	}},
}

// grpcService is a running StartGRPC process with a client.
type grpcService struct {
	p      *serve.Process
	cancel context.CancelFunc
	cc     *grpc.ClientConn
	web    *http.Client
}

func (s grpcService) call(ctx context.Context) error {
	return s.cc.Invoke(ctx, probeMethod, &emptypb.Empty{}, &emptypb.Empty{})
}

func (s grpcService) admin(path string) string { return "http://" + s.p.AdminAddr + path }

// common is the configuration of a test service on loopback ports.
func common(m mode.Mode) serve.Common {
	c := serve.Defaults("127.0.0.1:0", "127.0.0.1:0")
	c.Mode, c.DrainTimeout = m, stopBound
	return c
}

// startGRPC runs pr under StartGRPC with configuration c. The process is
// stopped when the test ends, if the test did not stop it.
func startGRPC(t *testing.T, c serve.Common, pr *probe) grpcService {
	t.Helper()
	kit, err := serve.NewKit("probe", c, serve.KitOptions{}, discard)
	if err != nil {
		t.Fatalf("NewKit: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p, err := serve.StartGRPC(ctx, kit, func(s *grpc.Server) { s.RegisterService(&probeDesc, pr) })
	if err != nil {
		cancel()
		t.Fatalf("StartGRPC: %v", err)
	}
	cc, err := grpc.NewClient(p.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cc.Close()
		cancel()
		<-p.Done()
	})
	return grpcService{p: p, cancel: cancel, cc: cc, web: newHTTPClient(t)}
}

func TestStartGRPCServesAndStops(t *testing.T) {
	s := startGRPC(t, common(mode.Budgeted), &probe{})

	if !s.p.Ready() {
		t.Error("Ready() = false while serving")
	}
	for _, tt := range []struct{ path, want string }{
		{"/healthz", "ok\n"},
		{"/readyz", "ready\n"},
	} {
		if code, body := get(t, s.web, s.admin(tt.path)); code != http.StatusOK || body != tt.want {
			t.Errorf("GET %s = %d %q, want 200 %q", tt.path, code, body, tt.want)
		}
	}
	// The kit's admin API shares the admin listener.
	if code, _ := get(t, s.web, s.admin("/metrics")); code != http.StatusOK {
		t.Errorf("GET /metrics = %d, want 200", code)
	}

	ctx, cancel := context.WithTimeout(context.Background(), stopBound)
	defer cancel()
	resp, err := healthpb.NewHealthClient(s.cc).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatalf("health Check: %v", err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health status = %v, want SERVING", resp.GetStatus())
	}
	if err := s.call(ctx); err != nil {
		t.Fatalf("call to the registered service: %v", err)
	}

	s.cancel()
	if err := waitStopped(t, s.p); err != nil {
		t.Errorf("Wait() = %v after a clean shutdown, want nil", err)
	}
	checkAdminStopped(t, s.p)
	if !refused(s.p.Addr) {
		t.Error("serving listener still accepts connections after stopping")
	}
}

// Stopping refuses new work but lets a call in flight finish: readiness
// turns false while it drains.
func TestStartGRPCDrainsInFlight(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	pr := &probe{handle: func(ctx context.Context) error {
		close(started)
		select {
		case <-release:
			return nil
		case <-time.After(stopBound):
			return errTestTimeout
		}
	}}
	s := startGRPC(t, common(mode.Budgeted), pr)

	callErr := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*stopBound)
		defer cancel()
		callErr <- s.call(ctx)
	}()
	<-started
	s.cancel()

	waitFor(t, "/readyz to answer 503 while draining", func() bool {
		code, body := get(t, s.web, s.admin("/readyz"))
		return code == http.StatusServiceUnavailable && body == "stopping\n"
	})
	if code, _ := get(t, s.web, s.admin("/healthz")); code != http.StatusOK {
		t.Errorf("/healthz = %d while draining, want 200: the process is alive", code)
	}
	select {
	case <-s.p.Done():
		t.Fatal("the process stopped while a call was still in flight")
	default:
	}

	close(release)
	if err := <-callErr; err != nil {
		t.Errorf("the call in flight failed: %v", err)
	}
	if err := waitStopped(t, s.p); err != nil {
		t.Errorf("Wait() = %v, want nil", err)
	}
	checkAdminStopped(t, s.p)
}

// seen is what a handler saw of its context.
type seen struct {
	hasDeadline    bool
	cancellable    bool
	metadata       string
	clientDeadline bool
}

func observe(ctx context.Context) seen {
	_, hasDeadline := ctx.Deadline()
	_, hasClientDeadline := deadline.ClientDeadline(ctx)
	var md string
	if v := metadata.ValueFromIncomingContext(ctx, "x-test"); len(v) > 0 {
		md = v[0]
	}
	return seen{hasDeadline: hasDeadline, cancellable: ctx.Done() != nil, metadata: md, clientDeadline: hasClientDeadline}
}

// In naive mode the handler's context keeps the request's values but not
// its deadline or cancellation; in budgeted mode it keeps both.
func TestDetachUnlessHonoured(t *testing.T) {
	tests := []struct {
		mode mode.Mode
		want seen
	}{
		{mode.Naive, seen{hasDeadline: false, cancellable: false, metadata: "kept", clientDeadline: true}},
		{mode.Budgeted, seen{hasDeadline: true, cancellable: true, metadata: "kept", clientDeadline: true}},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			got := make(chan seen, 1)
			s := startGRPC(t, common(tt.mode), &probe{handle: func(ctx context.Context) error {
				got <- observe(ctx)
				return nil
			}})

			ctx, cancel := context.WithTimeout(context.Background(), stopBound)
			defer cancel()
			ctx = metadata.AppendToOutgoingContext(ctx, "x-test", "kept", "x-client-deadline-ms", "5000")
			if err := s.call(ctx); err != nil {
				t.Fatalf("call: %v", err)
			}
			if g := <-got; g != tt.want {
				t.Errorf("handler saw %+v, want %+v", g, tt.want)
			}
		})
	}
}

// The point of detaching: a naive server's work goes on after its caller
// gave up, while a budgeted server's work is cancelled with the caller.
func TestWorkAfterCallerLeft(t *testing.T) {
	t.Run("naive runs on", func(t *testing.T) {
		started, release, after := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		s := startGRPC(t, common(mode.Naive), &probe{handle: func(ctx context.Context) error {
			close(started)
			select {
			case <-release:
			case <-time.After(stopBound):
			}
			after <- ctx.Err()
			return nil
		}})

		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if err := s.call(ctx); status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("call = %v, want DeadlineExceeded", err)
		}
		<-started
		close(release)
		if err := <-after; err != nil {
			t.Errorf("naive handler's context ended (%v) when its caller left", err)
		}
	})
	t.Run("budgeted stops", func(t *testing.T) {
		after := make(chan error, 1)
		s := startGRPC(t, common(mode.Budgeted), &probe{handle: func(ctx context.Context) error {
			select {
			case <-ctx.Done():
			case <-time.After(stopBound):
			}
			after <- ctx.Err()
			return ctx.Err()
		}})

		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if err := s.call(ctx); status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("call = %v, want DeadlineExceeded", err)
		}
		if err := <-after; err == nil {
			t.Error("budgeted handler's context did not end when its caller's deadline passed")
		}
	})
}

// Admission is wired in: in budgeted mode a request arriving with less
// than the floor left is rejected before its handler runs.
func TestStartGRPCAdmission(t *testing.T) {
	// A floor of a minute makes a 10 s budget "below the floor" without any
	// race against the clock: the rejection comes long before 10 s pass.
	tests := []struct {
		mode      mode.Mode
		wantCode  codes.Code
		wantCalls int32
	}{
		{mode.Budgeted, codes.DeadlineExceeded, 0},
		{mode.Naive, codes.OK, 1},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			c := common(tt.mode)
			c.Floor = time.Minute
			pr := &probe{}
			s := startGRPC(t, c, pr)

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			err := s.call(ctx)
			if got := status.Code(err); got != tt.wantCode {
				t.Fatalf("call = %v, want code %v", err, tt.wantCode)
			}
			if err != nil && time.Since(start) > 5*time.Second {
				t.Errorf("rejection took %v: it came from the client's deadline, not admission", time.Since(start))
			}
			if got := pr.calls.Load(); got != tt.wantCalls {
				t.Errorf("handler ran %d times, want %d", got, tt.wantCalls)
			}
		})
	}
}

// A panicking handler answers Internal without detail and the server
// keeps serving.
func TestStartGRPCRecoversPanics(t *testing.T) {
	var panicNext atomic.Bool
	panicNext.Store(true)
	s := startGRPC(t, common(mode.Budgeted), &probe{handle: func(context.Context) error {
		if panicNext.Swap(false) {
			panic("secret detail")
		}
		return nil
	}})

	ctx, cancel := context.WithTimeout(context.Background(), stopBound)
	defer cancel()
	err := s.call(ctx)
	if st := status.Convert(err); st.Code() != codes.Internal || strings.Contains(st.Message(), "secret") {
		t.Errorf("panicking call = %v, want Internal without the panic's detail", err)
	}
	if err := s.call(ctx); err != nil {
		t.Errorf("call after a panic = %v, want success", err)
	}
}

func TestStartGRPCListenErrors(t *testing.T) {
	busy := busyAddr(t)
	tests := []struct{ name, addr, admin string }{
		{"serving address in use", busy, "127.0.0.1:0"},
		{"admin address in use", "127.0.0.1:0", busy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := common(mode.Budgeted)
			c.Addr, c.AdminAddr = tt.addr, tt.admin
			kit, err := serve.NewKit("probe", c, serve.KitOptions{}, discard)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p, err := serve.StartGRPC(ctx, kit, func(*grpc.Server) {})
			if err == nil {
				cancel()
				<-p.Done()
				t.Fatal("StartGRPC succeeded on an address in use")
			}
			if p != nil {
				t.Errorf("StartGRPC returned a process with its error")
			}
		})
	}
}

// The health service answers for the service's own name as well as for
// the whole server (""), and both turn NOT_SERVING as soon as a drain
// starts, while calls in flight still finish.
func TestHealthNamesTurnNotServingWhenDraining(t *testing.T) {
	s := startGRPC(t, common(mode.Budgeted), &probe{})
	ctx, cancel := context.WithTimeout(context.Background(), stopBound)
	defer cancel()
	hc := healthpb.NewHealthClient(s.cc)
	names := []string{"", probeDesc.ServiceName}
	var watches []healthpb.Health_WatchClient
	for _, name := range names {
		resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: name})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("Check(%q) = %v, %v; want SERVING", name, resp.GetStatus(), err)
		}
		w, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{Service: name})
		if err != nil {
			t.Fatal(err)
		}
		if first, err := w.Recv(); err != nil || first.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("Watch(%q) first = %v, %v; want SERVING", name, first.GetStatus(), err)
		}
		watches = append(watches, w)
	}
	for _, name := range []string{"grpc.health.v1.Health", "mercado.test.Nope"} {
		if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: name}); status.Code(err) != codes.NotFound {
			t.Errorf("Check(%q) = %v; want NotFound", name, err)
		}
	}

	s.cancel() // the drain starts
	for i, w := range watches {
		got, err := w.Recv()
		if err != nil || got.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("Watch(%q) after the stop = %v, %v; want NOT_SERVING", names[i], got.GetStatus(), err)
		}
	}
	cancel() // the watches end, and the drain with them
	if err := waitStopped(t, s.p); err != nil {
		t.Errorf("Wait() = %v", err)
	}
}
