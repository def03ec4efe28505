package resilience

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"google.golang.org/grpc"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/telemetry"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// This file is the order in which Mercado's mechanisms run: one function
// per chain, to be read top to bottom. The steps themselves are in
// inbound.go (the worker pools), outbound.go (a dependency's retries,
// bulkhead, breaker and clip) and pkg/deadline (the budget).

// ServerOptions configure ServerChain and EdgeChain.
type ServerOptions struct {
	// Service names the service in messages.
	Service  string
	Settings *mode.Live
	Metrics  *telemetry.Metrics
	// Tracing annotates each request's server span; nil (or tracing off)
	// records nothing.
	Tracing *telemetry.Tracing
	// Workers is the worker pool's size (DefaultWorkers when zero).
	Workers int
	// MaxWait bounds a budgeted wait for a worker (zero: fail at once when
	// every worker is busy); the remaining budget bounds it too.
	MaxWait time.Duration
	// Budgets are the traffic classes' budgets; a gRPC server caps the
	// deadline it accepts at its request's class's Max (unset figures:
	// deadline.DefaultBudgets).
	Budgets deadline.Budgets
	// Log gets, at debug level, each request's remaining budget on arrival
	// (budgetlog.go); nil logs nothing.
	Log *slog.Logger
}

// ServerChain returns the interceptor every request of a gRPC service
// passes. Its steps run in this order:
//
//  0. Trace: with tracing off, the caller's trace context is read from the
//     metadata, so the request's log lines carry its trace id (with
//     tracing on, the gRPC server's span has it already).
//  1. Snapshot: the mode in force is read once, as the request arrives, and
//     carried in its context (mode.From). Every later step, the handler, and
//     every call the handler makes read that snapshot, so a switch while
//     the request runs never leaves it half naive.
//  2. Admission (pkg/deadline's server interceptor): the caller's passive
//     client deadline and the request's class are recorded and the
//     arrival reported (and logged at debug level with the remaining
//     budget); with Admission on, a request that arrives spent or
//     below the floor is turned away before any work starts, and one that
//     arrives with a deadline longer than its class's maximum (or none)
//     runs under that maximum: every server caps what it accepts.
//  3. Detach: with HonourCancel off the request loses its caller's deadline
//     and cancellation, and runs to the end however late, as a naive server
//     does — its wait for a worker included.
//  4. Pool: the request waits for a worker (naive: one shared pool with an
//     unbounded queue; budgeted: a bounded wait, and a full pool refuses
//     batch first, then background, keeping a share for interactive work).
//     In budgeted mode the budget is checked again once a worker is free,
//     because time spent in the queue counts against the budget.
//
// The steps are one function rather than one interceptor each, as
// ClientChain's are: the order reads top to bottom, and a request pays for
// one layer, not five (gRPC builds a handler for every interceptor it
// chains, on every request).
func ServerChain(o ServerOptions) grpc.UnaryServerInterceptor {
	pools := NewInbound(InboundOptions{
		Service: o.Service, Settings: o.Settings, Metrics: o.Metrics,
		Workers: o.Workers, MaxWait: o.MaxWait,
	})
	admission := deadline.UnaryServerInterceptor(deadline.ServerOptions{
		Policy:      requestPolicy(o.Settings),
		MaxDeadline: acceptedDeadline(o.Settings, o.Budgets),
		Hooks:       arrivalHooks(o.Metrics, o.Tracing, budgetLog{o.Log}),
	})
	worker := pools.UnaryServerInterceptor()
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		// 0. The caller's trace context.
		ctx = o.Tracing.Incoming(ctx)
		// 1. The request's one reading of the mode.
		ctx, s := o.Settings.Snapshot(ctx)
		honour := s.Mechanisms.HonourCancel
		// 2. Admission, with steps 3 and 4 as the handler it admits to.
		return admission(ctx, req, info, func(ctx context.Context, req any) (any, error) {
			// 3. Detach, unless the mode honours the caller's cancellation.
			if !honour {
				ctx = context.WithoutCancel(ctx)
			}
			// 4. A worker.
			return worker(ctx, req, info, handler)
		})
	}
}

// EdgeOptions configure EdgeChain, the gateway's.
type EdgeOptions struct {
	ServerOptions
	// Routes are the route groups that get a bulkhead each in budgeted
	// mode (checkout, browse, status), of RouteBulkhead workers each
	// (DefaultBulkhead when zero).
	Routes        []string
	RouteBulkhead int
	// Budget sets the default and the largest budget and the answer to a
	// bad X-Deadline-Ms header; EdgeChain sets its Stamp and Hooks.
	Budget deadline.EdgeOptions
}

// Edge is the gateway's chain, cut where the router picks a route: Request
// runs on every request before routing, Route(group) after it, on the
// routes of one route group.
type Edge struct {
	Request []func(http.Handler) http.Handler
	Route   func(group string) func(http.Handler) http.Handler
}

// EdgeChain returns the chain every public HTTP request passes, in the
// order it runs. Before routing (Edge.Request):
//
//  0. Trace: with tracing off, the request continues the client's
//     traceparent or starts a trace id of its own, which every call
//     carries on (with tracing on, the request's span has it already).
//  1. Snapshot: the mode in force is read once and carried in the
//     request's context, as in ServerChain. With caps off, the request's
//     connection then loses the HTTP server's read and write timeouts
//     (liftServerTimeouts): net/http's defaults, none.
//  2. Detach: with HonourCancel off the request's work goes on after the
//     client has hung up.
//  3. The budget (deadline.Edge): choose the total first. The request's
//     class (X-Request-Class; with Classes off, everything is interactive)
//     picks the default and the maximum; the client's X-Deadline-Ms, or
//     the default, capped at the maximum, becomes the request's passive
//     client deadline and, with EdgeDeadline on, its context's deadline.
//     The arrival is logged at debug level with that budget.
//
// After routing (Edge.Route):
//
//  4. Pool: the request waits for a worker of its route group
//     (naive: one shared pool with an unbounded queue; budgeted: the
//     route's own bulkhead, 503 when it is full — or when the request's
//     traffic class already holds its share of it — and the budget checked
//     again after the wait, 504 when the queue spent it).
func EdgeChain(o EdgeOptions) Edge {
	pools := NewInbound(InboundOptions{
		Service: o.Service, Settings: o.Settings, Metrics: o.Metrics,
		Workers: o.Workers, MaxWait: o.MaxWait, Routes: o.Routes, RouteBulkhead: o.RouteBulkhead,
	})
	budget := o.Budget
	budget.Stamp = func(ctx context.Context) bool { return o.Settings.For(ctx).Mechanisms.EdgeDeadline }
	budget.Classes = func(ctx context.Context) bool { return o.Settings.For(ctx).Mechanisms.Classes }
	budget.Hooks = arrivalHooks(o.Metrics, o.Tracing, budgetLog{o.Log})
	return Edge{
		Request: []func(http.Handler) http.Handler{
			o.Tracing.CorrelateHTTP,
			snapshotHTTP(o.Settings),
			liftServerTimeouts(o.Settings),
			detachHTTPUnlessHonoured(o.Settings),
			deadline.Edge(budget),
		},
		Route: pools.Middleware,
	}
}

// ClientChain returns the interceptor to dial dependency d with. Every
// call passes, in this order:
//
//  1. Snapshot: the call runs in the mode of the request it is made for
//     (the snapshot its server took). A call made for no request, such as
//     a background worker's, takes its own here, so that all its attempts
//     agree.
//  2. Retries (retry.Policy.Do): naive: 3 blind attempts, no backoff, at
//     every layer — the retry storm; budgeted: at the one layer that
//     retries, for idempotent methods only, with full-jitter backoff, only
//     when the attempt fits in the budget, and within a retry budget.
//     Outermost, so that every attempt passes the steps below again. Each
//     attempt gets a span of its own (telemetry.Tracing.StartCall): the
//     gRPC client span does not exist yet, so this span is where the
//     attempt's deadline, timeout and outcome are recorded, and it stands
//     for the calls that never leave (bulkhead full, breaker open, too
//     little budget).
//     2b. Hedge (hedge.go; the hedging mechanism, off in every preset):
//     an attempt at a call that changes nothing (OutboundOptions.Hedged)
//     and has not answered by the dependency's recent p95 is made a
//     second time beside it, through steps 3 to 5 of its own, if the
//     budget still holds the floor and the retry budget a token. The
//     first answer wins; the other is cancelled.
//  3. Pool: naive: the caller's one outbound pool, shared by every
//     dependency; budgeted: the dependency's own bulkhead, which fails at
//     once when full (put the vendor on its own pool), and of which batch
//     and background work may hold only their share. A call refused
//     here was never made, so it says nothing to the breaker.
//  4. Breaker (budgeted): the dependency's circuit breaker for the call's
//     traffic class (pair the budget with a breaker); while it is open, the
//     call fails at once. Each class keeps its own, so a batch job's
//     timeouts cut off the batch job, never the shoppers beside it.
//  5. Clip (pkg/deadline's client interceptor): the call's timeout is
//     computed by deadline.Policy.Decide — budgeted: min(cap, remaining −
//     margin), and a call with less than the floor left is not made;
//     naive: the dependency's fixed cap, blind to the budget; fragile
//     (caps off): none at all, the call waits as long as the dependency
//     takes (with clip_to_budget on, remaining − margin alone bounds it).
//     Last, so that the time spent waiting for a slot is no longer in the
//     budget.
//
// Around steps 3 to 5, each attempt logs at debug level the budget left
// before it and after it, with the request's trace id (budgetlog.go), and,
// with tracing off, carries the trace context to the dependency.
func ClientChain(d *Outbound) grpc.UnaryClientInterceptor {
	log := budgetLog{d.o.Log}
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		// 1. The request's mode.
		ctx, s := d.o.Settings.Snapshot(ctx)
		ctx = d.o.Tracing.Outgoing(ctx)
		// 2. Retries: every attempt passes 3 to 5 ...
		return d.retries(s, method).Do(ctx, func(ctx context.Context, attempt int) error {
			one := func(ctx context.Context, reply any) (err error) {
				ctx, span := d.o.Tracing.StartCall(ctx, d.o.HopName(method), attempt)
				defer span.End()
				log.call(ctx, d.o.Name, method, attempt)
				defer func() { log.ret(ctx, d.o.Name, method, attempt, err) }()
				// 3. A pool slot.
				pool, err := d.acquire(ctx, s, method)
				if err != nil {
					return err
				}
				if pool != nil {
					defer pool.Release()
				}
				// 5. The call, clipped to the budget ...
				call := func() error { return d.clip(ctx, s, method, req, reply, cc, invoker, opts...) }
				if !s.Mechanisms.Breakers {
					return call()
				}
				// 4. ... through the breaker.
				return d.guard(ctx, s, method, call)
			}
			// 2b. ... and, hedged, twice at once when the first is slow.
			if d.hedged(s) {
				return d.hedge(ctx, s, reply, one)
			}
			return one(ctx, reply)
		})
	}
}

// snapshotHTTP is step 1 of EdgeChain.
func snapshotHTTP(settings *mode.Live) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, _ := settings.Snapshot(r.Context())
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// liftServerTimeouts is step 1 of EdgeChain, in its second half: with
// caps off, the request's connection loses the read and write deadlines
// the HTTP server set from its ReadTimeout and WriteTimeout, as in a
// server started with http.ListenAndServe, which sets none. (The header
// timeout has passed by then: a request is read before its mode is
// known.)
func liftServerTimeouts(settings *mode.Live) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !settings.For(r.Context()).Mechanisms.Caps {
				rc := http.NewResponseController(w)
				_ = rc.SetReadDeadline(time.Time{})
				_ = rc.SetWriteDeadline(time.Time{})
			}
			next.ServeHTTP(w, r)
		})
	}
}

// acceptedDeadline is the longest deadline a gRPC server accepts for a
// request: with Admission on, its class's maximum (interactive's when
// classes are off); naive servers accept whatever they are given.
func acceptedDeadline(settings *mode.Live, b deadline.Budgets) func(context.Context, deadline.Class) time.Duration {
	return func(ctx context.Context, c deadline.Class) time.Duration {
		return AcceptedDeadline(settings.For(ctx), b, c)
	}
}

// AcceptedDeadline is the longest deadline a gRPC server with settings s
// accepts for a request of class c (zero: any, or none at all).
func AcceptedDeadline(s mode.Settings, b deadline.Budgets, c deadline.Class) time.Duration {
	if !s.Mechanisms.Admission {
		return 0
	}
	return b.For(s.Class(c)).Max
}

// requestPolicy is the deadline policy of the request a context belongs
// to.
func requestPolicy(settings *mode.Live) func(context.Context) deadline.Policy {
	return func(ctx context.Context) deadline.Policy { return settings.For(ctx).Policy() }
}

// detachHTTPUnlessHonoured is step 2 of EdgeChain: with HonourCancel off,
// the request's work goes on after the client has hung up.
func detachHTTPUnlessHonoured(settings *mode.Live) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !settings.For(r.Context()).Mechanisms.HonourCancel {
				r = r.WithContext(context.WithoutCancel(r.Context()))
			}
			next.ServeHTTP(w, r)
		})
	}
}
