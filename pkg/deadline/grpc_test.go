package deadline_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/pkg/deadline"
)

// checkMethod is the one method these tests call.
const checkMethod = grpc_health_v1.Health_Check_FullMethodName

// probe is a health service whose Check counts its calls and runs the
// test's handler, so a test can see what the server saw.
type probe struct {
	grpc_health_v1.UnimplementedHealthServer
	calls  atomic.Int32
	handle func(ctx context.Context) error
}

var _ grpc_health_v1.HealthServer = (*probe)(nil)

func (p *probe) Check(ctx context.Context, _ *grpc_health_v1.HealthCheckRequest) (*grpc_health_v1.HealthCheckResponse, error) {
	p.calls.Add(1)
	if p.handle != nil {
		if err := p.handle(ctx); err != nil {
			return nil, err
		}
	}
	return &grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_SERVING}, nil
}

// slow is a handler that takes 2s unless its context ends first.
func slow(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(2 * time.Second):
		return nil
	}
}

// serve starts a real gRPC server for svc on a loopback port, behind the
// given server interceptors, and returns a client that goes through the
// given client interceptors. Both are stopped when the test ends.
func serve(t testing.TB, svc grpc_health_v1.HealthServer, server []grpc.UnaryServerInterceptor, client ...grpc.UnaryClientInterceptor) grpc_health_v1.HealthClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(server...))
	grpc_health_v1.RegisterHealthServer(srv, svc)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		if err := <-served; err != nil {
			t.Errorf("Serve() = %v", err)
		}
	})
	cc, err := grpc.NewClient(lis.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(client...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	// Connect before the test's calls, so that no tight budget is spent
	// on the TCP and HTTP/2 handshakes.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cc.Connect()
	for s := cc.GetState(); s != connectivity.Ready; s = cc.GetState() {
		if !cc.WaitForStateChange(ctx, s) {
			t.Fatalf("client did not connect: %v", s)
		}
	}
	return grpc_health_v1.NewHealthClient(cc)
}

func check(ctx context.Context, c grpc_health_v1.HealthClient) error {
	_, err := c.Check(ctx, &grpc_health_v1.HealthCheckRequest{})
	return err
}

// budgetCtx returns a context with budget left, or no deadline when budget
// is zero.
func budgetCtx(t *testing.T, budget time.Duration) context.Context {
	t.Helper()
	if budget == 0 {
		return context.Background()
	}
	return withLeft(t, budget)
}

// recorder collects hook calls; server hooks run on other goroutines.
type recorder[T any] struct {
	mu  sync.Mutex
	got []T
}

func (r *recorder[T]) hook(_ context.Context, v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, v)
}

func (r *recorder[T]) all() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]T(nil), r.got...)
}

// one returns the only recorded value, failing the test unless there is
// exactly one.
func (r *recorder[T]) one(t *testing.T) T {
	t.Helper()
	got := r.all()
	if len(got) != 1 {
		t.Fatalf("hook ran %d times; want once: %+v", len(got), got)
	}
	return got[0]
}

func clientOptions(p deadline.Policy, cap time.Duration, calls *recorder[deadline.CallInfo]) deadline.ClientOptions {
	return deadline.ClientOptions{
		Policy: func(context.Context) deadline.Policy { return p },
		Cap:    func(string) time.Duration { return cap },
		Hooks:  deadline.Hooks{OnCall: calls.hook},
	}
}

func TestUnaryClientInterceptorClipsDeadline(t *testing.T) {
	tests := []struct {
		name        string
		policy      deadline.Policy
		budget      time.Duration // zero: the caller has no deadline
		cap         time.Duration
		wantMax     time.Duration // the most the server may see; zero: no deadline
		wantClipped bool
	}{
		{name: "budget clips a larger cap", budget: 5 * time.Second, cap: 30 * time.Second, wantMax: 5 * time.Second, wantClipped: true},
		{name: "cap clips a larger budget", budget: 30 * time.Second, cap: 5 * time.Second, wantMax: 5 * time.Second},
		{name: "margin is kept back", policy: deadline.Policy{Margin: 2 * time.Second}, budget: 5 * time.Second, cap: 30 * time.Second, wantMax: 3 * time.Second, wantClipped: true},
		{name: "no cap: the budget bounds the call", budget: 5 * time.Second, wantMax: 5 * time.Second, wantClipped: true},
		{name: "no budget: the cap bounds the call", cap: 5 * time.Second, wantMax: 5 * time.Second},
		{name: "neither: the call is unbounded"},
		{
			// Blind ignores margin and floor; gRPC still stops at the
			// caller's own deadline.
			name:   "blind makes the call however little is left",
			policy: deadline.Policy{Blind: true, Floor: time.Hour, Margin: time.Hour},
			budget: 5 * time.Second, cap: 30 * time.Second, wantMax: 5 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			type seen struct {
				left time.Duration
				has  bool
			}
			got := make(chan seen, 1)
			p := &probe{handle: func(ctx context.Context) error {
				left, has := deadline.Remaining(ctx)
				got <- seen{left, has}
				return nil
			}}
			var calls recorder[deadline.CallInfo]
			c := serve(t, p, nil, deadline.UnaryClientInterceptor(clientOptions(tt.policy, tt.cap, &calls)))
			if err := check(budgetCtx(t, tt.budget), c); err != nil {
				t.Fatalf("call failed: %v", err)
			}
			s := <-got
			if tt.wantMax == 0 {
				if s.has {
					t.Errorf("server saw a deadline %v away; want none", s.left)
				}
			} else if !s.has || s.left > tt.wantMax || s.left <= tt.wantMax-time.Second {
				t.Errorf("server saw %v left (deadline %v); want in (%v, %v]", s.left, s.has, tt.wantMax-time.Second, tt.wantMax)
			}

			info := calls.one(t)
			if info.Method != checkMethod || info.Outcome != deadline.OutcomeOK || info.Err != nil || info.Took <= 0 {
				t.Errorf("OnCall got %+v; want an ok call to %s", info, checkMethod)
			}
			if info.HasBudget != (tt.budget != 0) || info.ClippedByBudget != tt.wantClipped {
				t.Errorf("OnCall decision %+v; want HasBudget %v, ClippedByBudget %v", info.Decision, tt.budget != 0, tt.wantClipped)
			}
		})
	}
}

func TestUnaryClientInterceptorSkips(t *testing.T) {
	tests := []struct {
		name   string
		policy deadline.Policy
		budget time.Duration
	}{
		{name: "below the floor", policy: deadline.Policy{Floor: 10 * time.Second}, budget: 5 * time.Second},
		{name: "margin leaves nothing", policy: deadline.Policy{Margin: 6 * time.Second}, budget: 5 * time.Second},
		{name: "budget already spent", budget: -time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &probe{}
			var calls recorder[deadline.CallInfo]
			c := serve(t, p, nil, deadline.UnaryClientInterceptor(clientOptions(tt.policy, time.Second, &calls)))
			err := check(budgetCtx(t, tt.budget), c)
			if n := p.calls.Load(); n != 0 {
				t.Errorf("server was called %d times; want the call skipped", n)
			}
			if code := status.Code(err); code != codes.DeadlineExceeded {
				t.Errorf("status.Code(%v) = %v; want DeadlineExceeded", err, code)
			}
			if !errors.Is(err, deadline.ErrInsufficientBudget) {
				t.Errorf("err = %v; want it to wrap ErrInsufficientBudget", err)
			}
			var cerr *deadline.CallError
			if !errors.As(err, &cerr) || cerr.Outcome != deadline.OutcomeSkipped {
				t.Errorf("err = %#v; want a *CallError with Outcome skipped", err)
			}
			info := calls.one(t)
			if info.Outcome != deadline.OutcomeSkipped || info.Took != 0 || info.Err != err || !info.HasBudget || info.Method != checkMethod {
				t.Errorf("OnCall got %+v; want a skipped call with the returned error", info)
			}
		})
	}
}

func TestUnaryClientInterceptorOutcomes(t *testing.T) {
	peerGaveUp := func(context.Context) error { return status.Error(codes.DeadlineExceeded, "downstream ran out of time") }
	notFound := func(context.Context) error { return status.Error(codes.NotFound, "no such service") }
	tests := []struct {
		name        string
		policy      deadline.Policy
		budget      time.Duration // zero: no deadline
		cap         time.Duration
		handle      func(context.Context) error
		wantOutcome deadline.Outcome
		wantCode    codes.Code
		wantIs      error // nil: the error must not be a *CallError
	}{
		{name: "ok", cap: time.Second, wantOutcome: deadline.OutcomeOK, wantCode: codes.OK},
		{name: "slow server hits the cap", cap: 50 * ms, handle: slow, wantOutcome: deadline.OutcomeTimeout, wantCode: codes.DeadlineExceeded, wantIs: deadline.ErrCallTimeout},
		{name: "slow server hits the cap inside a big budget", budget: 30 * time.Second, cap: 50 * ms, handle: slow, wantOutcome: deadline.OutcomeTimeout, wantCode: codes.DeadlineExceeded, wantIs: deadline.ErrCallTimeout},
		{name: "budget runs out, no margin", budget: 50 * ms, cap: 30 * time.Second, handle: slow, wantOutcome: deadline.OutcomeBudget, wantCode: codes.DeadlineExceeded, wantIs: deadline.ErrBudgetExhausted},
		{name: "budget runs out, with margin", policy: deadline.Policy{Margin: 10 * ms}, budget: 60 * ms, cap: 30 * time.Second, handle: slow, wantOutcome: deadline.OutcomeBudget, wantCode: codes.DeadlineExceeded, wantIs: deadline.ErrBudgetExhausted},
		{name: "blind call cut short by the caller's deadline", policy: deadline.Policy{Blind: true}, budget: 50 * ms, cap: 30 * time.Second, handle: slow, wantOutcome: deadline.OutcomeBudget, wantCode: codes.DeadlineExceeded, wantIs: deadline.ErrBudgetExhausted},
		// The peer ran out of time on its own while ours was far from over:
		// the outcome says which deadline bounded the call, but the error
		// stays the peer's, so it is not retried at every hop.
		{name: "peer answers DeadlineExceeded under the cap", cap: 30 * time.Second, handle: peerGaveUp, wantOutcome: deadline.OutcomeTimeout, wantCode: codes.DeadlineExceeded},
		{name: "peer answers DeadlineExceeded under the budget", budget: 30 * time.Second, handle: peerGaveUp, wantOutcome: deadline.OutcomeBudget, wantCode: codes.DeadlineExceeded},
		{name: "peer answers DeadlineExceeded to an unbounded call", handle: peerGaveUp, wantOutcome: deadline.OutcomeError, wantCode: codes.DeadlineExceeded},
		{name: "other failures pass through", cap: time.Second, handle: notFound, wantOutcome: deadline.OutcomeError, wantCode: codes.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls recorder[deadline.CallInfo]
			c := serve(t, &probe{handle: tt.handle}, nil, deadline.UnaryClientInterceptor(clientOptions(tt.policy, tt.cap, &calls)))
			start := time.Now()
			err := check(budgetCtx(t, tt.budget), c)
			if took := time.Since(start); took >= time.Second {
				t.Errorf("call took %v; want well under the server's 2s", took)
			}
			if code := status.Code(err); code != tt.wantCode {
				t.Errorf("status.Code(%v) = %v; want %v", err, code, tt.wantCode)
			}
			var cerr *deadline.CallError
			isCallErr := errors.As(err, &cerr)
			switch {
			case tt.wantIs == nil && isCallErr:
				t.Errorf("err = %v is a *CallError; want the call's own error", err)
			case tt.wantIs != nil && !errors.Is(err, tt.wantIs):
				t.Errorf("err = %v; want it to wrap %v", err, tt.wantIs)
			case tt.wantIs != nil && (!isCallErr || cerr.Outcome != tt.wantOutcome):
				t.Errorf("err = %#v; want a *CallError with Outcome %q", err, tt.wantOutcome)
			case tt.wantIs != nil && !strings.HasPrefix(err.Error(), tt.wantIs.Error()+": "):
				t.Errorf("err = %q; want it to start with its cause %q", err, tt.wantIs)
			}
			info := calls.one(t)
			if info.Outcome != tt.wantOutcome || info.Err != err || info.Method != checkMethod {
				t.Errorf("OnCall got %+v; want Outcome %q and the returned error", info, tt.wantOutcome)
			}
		})
	}
}

func TestUnaryClientInterceptorCanceled(t *testing.T) {
	started := make(chan struct{})
	p := &probe{handle: func(ctx context.Context) error {
		close(started)
		return slow(ctx)
	}}
	var calls recorder[deadline.CallInfo]
	c := serve(t, p, nil, deadline.UnaryClientInterceptor(clientOptions(deadline.Policy{}, 30*time.Second, &calls)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-started
		cancel()
	}()
	err := check(ctx, c)
	if code := status.Code(err); code != codes.Canceled {
		t.Errorf("status.Code(%v) = %v; want Canceled", err, code)
	}
	if info := calls.one(t); info.Outcome != deadline.OutcomeCanceled {
		t.Errorf("OnCall outcome = %q; want %q", info.Outcome, deadline.OutcomeCanceled)
	}
}

// Every option may be left out: no policy, no cap, no hooks.
func TestUnaryClientInterceptorZeroOptions(t *testing.T) {
	p := &probe{handle: func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); ok {
			return status.Error(codes.FailedPrecondition, "unexpected deadline")
		}
		return nil
	}}
	c := serve(t, p, nil, deadline.UnaryClientInterceptor(deadline.ClientOptions{}))
	if err := check(context.Background(), c); err != nil {
		t.Fatalf("call failed: %v", err)
	}
	// The zero Policy still refuses to call with a spent budget.
	if err := check(withLeft(t, -time.Second), c); !errors.Is(err, deadline.ErrInsufficientBudget) {
		t.Errorf("err = %v; want ErrInsufficientBudget", err)
	}
	if n := p.calls.Load(); n != 1 {
		t.Errorf("server was called %d times; want 1", n)
	}
}

// ClientOptions.Policy is read on every call, so a running service can
// switch policies.
func TestUnaryClientInterceptorReadsPolicyPerCall(t *testing.T) {
	var floor atomic.Int64
	o := deadline.ClientOptions{Policy: func(context.Context) deadline.Policy {
		return deadline.Policy{Floor: time.Duration(floor.Load())}
	}}
	p := &probe{}
	c := serve(t, p, nil, deadline.UnaryClientInterceptor(o))
	ctx := withLeft(t, 5*time.Second)
	if err := check(ctx, c); err != nil {
		t.Fatalf("first call failed: %v", err)
	}
	floor.Store(int64(time.Hour))
	if err := check(ctx, c); !errors.Is(err, deadline.ErrInsufficientBudget) {
		t.Errorf("second call err = %v; want ErrInsufficientBudget after raising the floor", err)
	}
	if n := p.calls.Load(); n != 1 {
		t.Errorf("server was called %d times; want 1", n)
	}
}

func TestClientDeadlineForwarded(t *testing.T) {
	tests := []struct {
		name       string
		budget     time.Duration // zero: no deadline
		clientLeft time.Duration // zero: no client deadline
	}{
		{name: "client deadline without a budget (naive)", clientLeft: 5 * time.Second},
		{name: "client deadline beside a budget", budget: 3 * time.Second, clientLeft: 5 * time.Second},
		{name: "no client deadline", budget: 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			type seen struct {
				at  time.Time
				ok  bool
				raw []string
			}
			got := make(chan seen, 1)
			p := &probe{handle: func(ctx context.Context) error {
				cd, ok := deadline.ClientDeadline(ctx)
				got <- seen{cd, ok, metadata.ValueFromIncomingContext(ctx, "x-client-deadline-ms")}
				return nil
			}}
			c := serve(t, p,
				[]grpc.UnaryServerInterceptor{deadline.UnaryServerInterceptor(deadline.ServerOptions{})},
				deadline.UnaryClientInterceptor(deadline.ClientOptions{}))
			ctx := budgetCtx(t, tt.budget)
			var want time.Time
			if tt.clientLeft != 0 {
				want = time.Now().Add(tt.clientLeft)
				ctx = deadline.WithClientDeadline(ctx, want)
			}
			if err := check(ctx, c); err != nil {
				t.Fatalf("call failed: %v", err)
			}
			s := <-got
			if tt.clientLeft == 0 {
				if s.ok || len(s.raw) != 0 {
					t.Errorf("server saw client deadline %v (metadata %q); want none", s.at, s.raw)
				}
				return
			}
			if !s.ok {
				t.Fatalf("server saw no client deadline (metadata %q)", s.raw)
			}
			// The deadline travels as a relative duration, so the server's
			// copy is off by the time the trip took (and the rounding down
			// to milliseconds): close, not exact.
			if off := s.at.Sub(want).Abs(); off > time.Second {
				t.Errorf("server's client deadline is %v off; want within a second", off)
			}
		})
	}
}

func TestUnaryServerInterceptorAdmission(t *testing.T) {
	tests := []struct {
		name       string
		opts       deadline.ServerOptions
		budget     time.Duration // zero: no deadline
		wantReject string        // the reason; empty: admitted
	}{
		{name: "below the floor is rejected", opts: serverPolicy(deadline.Policy{Admission: true, Floor: time.Hour}), budget: 5 * time.Second, wantReject: deadline.ReasonBelowFloor},
		{name: "enough budget is admitted", opts: serverPolicy(deadline.Policy{Admission: true, Floor: 100 * ms}), budget: 5 * time.Second},
		{name: "admission off admits", opts: serverPolicy(deadline.Policy{Floor: time.Hour}), budget: 5 * time.Second},
		{name: "no deadline is admitted", opts: serverPolicy(deadline.Policy{Admission: true, Floor: time.Hour})},
		{name: "nil policy admits", budget: 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var arrivals recorder[deadline.ArrivalInfo]
			tt.opts.Hooks.OnArrival = arrivals.hook
			p := &probe{}
			c := serve(t, p, []grpc.UnaryServerInterceptor{deadline.UnaryServerInterceptor(tt.opts)})
			err := check(budgetCtx(t, tt.budget), c)

			a := arrivals.one(t)
			if a.Method != checkMethod || a.HasBudget != (tt.budget != 0) {
				t.Errorf("OnArrival got %+v; want method %s, HasBudget %v", a, checkMethod, tt.budget != 0)
			}
			if tt.budget != 0 && (a.Remaining > tt.budget || a.Remaining <= tt.budget-time.Second) {
				t.Errorf("OnArrival Remaining = %v; want in (%v, %v]", a.Remaining, tt.budget-time.Second, tt.budget)
			}
			if tt.wantReject == "" {
				if err != nil || a.Rejected || a.Reason != "" || p.calls.Load() != 1 {
					t.Errorf("err = %v, arrival %+v, %d handler calls; want admitted", err, a, p.calls.Load())
				}
				return
			}
			if !a.Rejected || a.Reason != tt.wantReject {
				t.Errorf("OnArrival got %+v; want Rejected with reason %q", a, tt.wantReject)
			}
			if code := status.Code(err); code != codes.DeadlineExceeded {
				t.Errorf("status.Code(%v) = %v; want DeadlineExceeded", err, code)
			}
			if n := p.calls.Load(); n != 0 {
				t.Errorf("handler ran %d times for a rejected request", n)
			}
		})
	}
}

func serverPolicy(p deadline.Policy) deadline.ServerOptions {
	return deadline.ServerOptions{Policy: func(context.Context) deadline.Policy { return p }}
}

// A request that waits in a queue until its deadline passes is rejected as
// expired by the time it reaches the interceptor: queue wait counts.
func TestUnaryServerInterceptorExpiredInQueue(t *testing.T) {
	arrived := make(chan deadline.ArrivalInfo, 1)
	// The queue holds the request until just past its deadline. (Waiting
	// for ctx.Done() is not enough: the client gives up first and its
	// cancellation can end the server's context before the deadline.)
	queue := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		if dl, ok := ctx.Deadline(); ok {
			time.Sleep(time.Until(dl) + ms)
		}
		return next(ctx, req)
	}
	o := serverPolicy(deadline.Policy{Admission: true})
	o.Hooks.OnArrival = func(_ context.Context, a deadline.ArrivalInfo) { arrived <- a }
	p := &probe{}
	c := serve(t, p, []grpc.UnaryServerInterceptor{queue, deadline.UnaryServerInterceptor(o)})

	if err := check(withLeft(t, 300*ms), c); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("status.Code(%v) = %v; want DeadlineExceeded", err, status.Code(err))
	}
	select {
	case a := <-arrived:
		if !a.Rejected || a.Reason != deadline.ReasonExpired || !a.HasBudget || a.Remaining > 0 {
			t.Errorf("OnArrival got %+v; want rejected as expired", a)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OnArrival did not run")
	}
	if n := p.calls.Load(); n != 0 {
		t.Errorf("handler ran %d times for an expired request", n)
	}
}

func TestUnaryServerInterceptorOnLate(t *testing.T) {
	tests := []struct {
		name       string
		clientLeft time.Duration // zero: no client deadline
		work       time.Duration
		wantLate   bool
	}{
		{name: "finished after the client gave up", clientLeft: 20 * ms, work: 300 * ms, wantLate: true},
		{name: "finished in time", clientLeft: 10 * time.Second},
		{name: "no client deadline", work: 50 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lates recorder[deadline.LateInfo]
			o := deadline.ServerOptions{Hooks: deadline.Hooks{OnLate: lates.hook}}
			p := &probe{handle: func(context.Context) error {
				time.Sleep(tt.work)
				return nil
			}}
			c := serve(t, p,
				[]grpc.UnaryServerInterceptor{deadline.UnaryServerInterceptor(o)},
				deadline.UnaryClientInterceptor(deadline.ClientOptions{}))
			ctx := context.Background()
			if tt.clientLeft != 0 {
				ctx = deadline.WithClientDeadline(ctx, time.Now().Add(tt.clientLeft))
			}
			// The server runs OnLate before it answers, so it has run by the
			// time the call returns.
			if err := check(ctx, c); err != nil {
				t.Fatalf("call failed: %v", err)
			}
			if !tt.wantLate {
				if got := lates.all(); len(got) != 0 {
					t.Errorf("OnLate got %+v; want no call", got)
				}
				return
			}
			l := lates.one(t)
			if l.Method != checkMethod || l.Late <= 0 || l.Late > tt.work+time.Second {
				t.Errorf("OnLate got %+v; want method %s and Late in (0, %v]", l, checkMethod, tt.work+time.Second)
			}
		})
	}
}

// The standard health service behind both interceptors, as a service
// would run it.
func TestInterceptorsWithHealthServer(t *testing.T) {
	var calls recorder[deadline.CallInfo]
	var arrivals recorder[deadline.ArrivalInfo]
	policy := deadline.Policy{Margin: 100 * ms, Floor: 200 * ms, Admission: true}
	c := serve(t, health.NewServer(),
		[]grpc.UnaryServerInterceptor{deadline.UnaryServerInterceptor(deadline.ServerOptions{
			Policy: func(context.Context) deadline.Policy { return policy },
			Hooks:  deadline.Hooks{OnArrival: arrivals.hook},
		})},
		deadline.UnaryClientInterceptor(clientOptions(policy, 2*time.Second, &calls)))
	if err := check(withLeft(t, 5*time.Second), c); err != nil {
		t.Fatalf("call failed: %v", err)
	}
	info := calls.one(t)
	if info.Outcome != deadline.OutcomeOK || info.Timeout != 2*time.Second || info.ClippedByBudget {
		t.Errorf("OnCall got %+v; want an ok call at its 2s cap", info)
	}
	if a := arrivals.one(t); a.Rejected || !a.HasBudget || a.Remaining > 2*time.Second || a.Remaining <= time.Second {
		t.Errorf("OnArrival got %+v; want admitted with at most the 2s cap left", a)
	}
}

// stalledCtx is a caller's context whose deadline has passed but whose
// timer has not fired yet: the moment when the peer's DeadlineExceeded
// answer can arrive before the caller's own context ends.
type stalledCtx struct {
	context.Context
	deadline time.Time
}

func (c stalledCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func TestUnaryClientInterceptorPeerAnswersFirst(t *testing.T) {
	var calls recorder[deadline.CallInfo]
	intercept := deadline.UnaryClientInterceptor(clientOptions(deadline.Policy{Blind: true}, 30*time.Second, &calls))
	ctx := stalledCtx{Context: context.Background(), deadline: time.Now().Add(-ms)}
	peer := status.Error(codes.DeadlineExceeded, "context deadline exceeded")
	invoke := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
		if ctx.Err() != nil {
			return errors.New("the call's context ended; the test needs it live")
		}
		return peer
	}
	err := intercept(ctx, checkMethod, nil, nil, nil, invoke)
	if !errors.Is(err, deadline.ErrBudgetExhausted) || !errors.Is(err, peer) {
		t.Errorf("err = %v; want it to wrap ErrBudgetExhausted and the peer's error", err)
	}
	if code := status.Code(err); code != codes.DeadlineExceeded {
		t.Errorf("status.Code(%v) = %v; want DeadlineExceeded", err, code)
	}
	if info := calls.one(t); info.Outcome != deadline.OutcomeBudget {
		t.Errorf("OnCall outcome = %q; want %q", info.Outcome, deadline.OutcomeBudget)
	}
}
