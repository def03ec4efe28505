package resilience

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/problem"
	"github.com/mercado-lab/mercado/internal/telemetry"
	"github.com/mercado-lab/mercado/pkg/deadline"
	"github.com/mercado-lab/mercado/pkg/resilience/bulkhead"
)

// DefaultWorkers is the size of a worker pool, like a servlet container's.
const DefaultWorkers = 200

// InboundOptions configure Inbound.
type InboundOptions struct {
	// Service names the service in messages. Its pools are named
	// "shared" (naive), "workers" (budgeted) or after their route group.
	Service  string
	Settings *mode.Live
	Metrics  *telemetry.Metrics
	// Workers is the shared pool's size (DefaultWorkers when zero), until
	// a mode switch names another (mode.Settings.Workers).
	Workers int
	// Routes are the route groups that get a bulkhead each in budgeted
	// mode, such as checkout, browse and status at the gateway. Without
	// them, budgeted mode uses one pool of Workers with bounded waits.
	Routes []string
	// RouteBulkhead is each route group's bulkhead (DefaultBulkhead when
	// zero).
	RouteBulkhead int
	// MaxWait bounds a budgeted wait for a worker (zero: fail at once when
	// all are busy); the remaining budget bounds it too.
	MaxWait time.Duration
}

// Inbound bounds the work a service takes on at once.
type Inbound struct {
	o       InboundOptions
	shared  *PoolRef            // naive: one pool, unbounded FIFO queue
	bounded *PoolRef            // budgeted, without route groups
	routes  map[string]*PoolRef // budgeted: a bulkhead per route group
}

// NewInbound returns the service's pools, registered with its metrics and
// reset on every mode switch.
func NewInbound(o InboundOptions) *Inbound {
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.RouteBulkhead <= 0 {
		o.RouteBulkhead = DefaultBulkhead
	}
	in := &Inbound{o: o, routes: map[string]*PoolRef{}}
	in.shared = NewPoolRef(bulkhead.Settings{Name: "shared", Capacity: o.Workers, MaxWait: -1}, o.Metrics)
	if len(o.Routes) == 0 {
		in.bounded = NewPoolRef(bulkhead.Settings{Name: "workers", Capacity: o.Workers, MaxWait: o.MaxWait}, o.Metrics)
	}
	for _, r := range o.Routes {
		in.routes[r] = NewPoolRef(bulkhead.Settings{Name: r, Capacity: o.RouteBulkhead, MaxWait: o.MaxWait}, o.Metrics)
	}
	o.Settings.OnSwitch(func(s mode.Settings) {
		in.shared.Resize(s.Workers)
		if in.bounded != nil {
			in.bounded.Resize(s.Workers)
		}
		for _, r := range in.routes {
			r.Reset()
		}
	})
	return in
}

// pool picks the pool for a request to route, a route group.
func (in *Inbound) pool(route string, m mode.Mechanisms) *PoolRef {
	switch {
	case !m.Bulkheads:
		return in.shared
	case in.bounded != nil:
		return in.bounded
	}
	if r, ok := in.routes[route]; ok {
		return r
	}
	return in.shared
}

// acquire takes a slot of pool for work of class c, within the share of
// the pool the class may hold (deadline.Class.Share): a full pool refuses
// batch first, then background, and keeps a part free for interactive
// work. With classes off every request is interactive: the whole pool,
// one queue.
func acquire(ctx context.Context, pool *bulkhead.Pool, c deadline.Class) (time.Duration, error) {
	return pool.AcquireWithin(ctx, c.Limit(pool.Capacity()))
}

// admit waits for a worker and, in budgeted mode, checks the budget again
// once one is free: time spent in the queue counts against the budget.
// On success the caller must release the returned pool's slot.
func (in *Inbound) admit(ctx context.Context, route string) (*bulkhead.Pool, *Rejection) {
	s := in.o.Settings.For(ctx)
	ref := in.pool(route, s.Mechanisms)
	pool := ref.Pool()
	traffic := s.Class(deadline.ClassOf(ctx))
	if _, err := acquire(ctx, pool, traffic); err != nil {
		if errors.Is(err, bulkhead.ErrFull) {
			in.o.Metrics.Skipped(ctx, ReasonBulkheadFull)
			in.o.Metrics.PoolRejected(ctx, ref.Name(), string(traffic))
			return nil, &Rejection{Code: codes.ResourceExhausted, Reason: ReasonBulkheadFull, Err: err,
				Message: fmt.Sprintf("%s busy: bulkhead %q full for %s work", in.o.Service, ref.Name(), traffic)}
		}
		in.o.Metrics.Skipped(ctx, ReasonExpiredAtDequeue)
		return nil, &Rejection{Code: codes.DeadlineExceeded, Reason: ReasonExpiredAtDequeue, Err: err,
			Message: "deadline expired while waiting for a worker"}
	}
	if err := s.Policy().Admit(ctx); err != nil {
		pool.Release()
		in.o.Metrics.Skipped(ctx, ReasonExpiredAtDequeue)
		return nil, &Rejection{Code: codes.DeadlineExceeded, Reason: ReasonExpiredAtDequeue, Err: err,
			Message: "after waiting for a worker: " + err.Error()}
	}
	return pool, nil
}

// UnaryServerInterceptor makes every request of a gRPC service wait for a
// worker: the last step of ServerChain.
func (in *Inbound) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		pool, rej := in.admit(ctx, "")
		if rej != nil {
			return nil, rej
		}
		defer pool.Release()
		return handler(ctx, req)
	}
}

// Middleware makes every request of one HTTP route group wait for a
// worker: a 503 with Retry-After when the bulkhead is full, a 504 when the
// budget ran out in the queue. It is the last step of EdgeChain.
func (in *Inbound) Middleware(route string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			pool, rej := in.admit(r.Context(), route)
			if rej != nil {
				if rej.Code == codes.ResourceExhausted {
					problem.WriteRetry(w, r, http.StatusServiceUnavailable, rej.Message, time.Second)
				} else {
					problem.Write(w, r, http.StatusGatewayTimeout, rej.Message)
				}
				return
			}
			defer pool.Release()
			next.ServeHTTP(w, r)
		})
	}
}
