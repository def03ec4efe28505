package resilience

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/resilience/breaker"
	"github.com/mercado-lab/mercado/internal/resilience/bulkhead"
	"github.com/mercado-lab/mercado/internal/resilience/retry"
	"github.com/mercado-lab/mercado/internal/telemetry"
	"github.com/mercado-lab/mercado/internal/timing"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// Defaults of the outbound mechanisms, from the lessons: a bulkhead of 25
// per dependency and a breaker that opens at 50% failures over the last 20
// calls for 30 s (Drill 76); three attempts; backoff with full jitter.
const (
	DefaultBulkhead    = 25
	DefaultAttempts    = 3
	DefaultBaseBackoff = 20 * time.Millisecond
	DefaultMaxBackoff  = 200 * time.Millisecond
	// DefaultRetryRatio lets retries add at most about 10% to the load.
	DefaultRetryRatio = 0.1
	DefaultRetryBurst = 10
)

// OutboundOptions describe one dependency.
type OutboundOptions struct {
	// Name is the dependency ("shipping"): the label of its metrics, hops
	// and pools.
	Name string
	// Cap is the dependency's own timeout cap (zero: none).
	Cap      time.Duration
	Settings *mode.Live
	Metrics  *telemetry.Metrics
	// Tracing gives each attempt a span; nil (or tracing off) gives none.
	Tracing *telemetry.Tracing
	// HopName names a method in Server-Timing; nil names every call Name.
	HopName func(method string) string
	// Shared is the naive mode's pool shared by every dependency of the
	// caller; nil means naive calls take no pool.
	Shared *PoolRef
	// Bulkhead is the budgeted mode's own pool for this dependency; zero
	// Capacity means DefaultBulkhead. MaxWait bounds the wait for a slot
	// (zero: fail at once when full); the budget bounds it too.
	Bulkhead bulkhead.Settings
	// Breaker configures the dependency's breaker (Name is set to Name).
	Breaker breaker.Settings
	// RetryBudget caps budgeted retries; nil gives the dependency its own.
	RetryBudget *retry.Budget
	// NaiveRetries: this layer retries blind in naive mode.
	NaiveRetries bool
	// BudgetedRetries: this layer is the one that retries in budgeted
	// mode, for the methods Idempotent allows.
	BudgetedRetries bool
	Idempotent      func(method string) bool
}

// Outbound applies the mechanisms in force to every call to one
// dependency.
type Outbound struct {
	o        OutboundOptions
	bulkhead *PoolRef
	breaker  *breaker.Breaker
	budget   *retry.Budget
	clip     grpc.UnaryClientInterceptor
	policies atomic.Pointer[policies]
}

// policies are the retry policies of the settings in force, built once per
// switch rather than per call.
type policies struct {
	idempotent, other retry.Policy
}

// NewOutbound returns the policy for one dependency, registers its pool and
// breaker with the metrics, and resets them whenever the mode switches.
func NewOutbound(o OutboundOptions) *Outbound {
	if o.Bulkhead.Capacity <= 0 {
		o.Bulkhead.Capacity = DefaultBulkhead
	}
	o.Bulkhead.Name = "to." + o.Name
	o.Breaker.Name = o.Name
	m := o.Metrics
	o.Breaker.OnStateChange = func(name string, from, to breaker.State) {
		m.BreakerTransition(context.Background(), name, from.String(), to.String())
	}
	if o.RetryBudget == nil {
		o.RetryBudget = retry.NewBudget(DefaultRetryRatio, DefaultRetryBurst)
	}
	if o.HopName == nil {
		o.HopName = func(string) string { return o.Name }
	}
	d := &Outbound{
		o:        o,
		bulkhead: NewPoolRef(o.Bulkhead, m),
		breaker:  breaker.New(o.Breaker),
		budget:   o.RetryBudget,
	}
	_ = m.ObserveBreaker(o.Name, func() int { return int(d.breaker.State()) })
	d.clip = deadline.UnaryClientInterceptor(deadline.ClientOptions{
		Policy: o.Settings.Policy,
		Cap:    func(string) time.Duration { return o.Cap },
		Hooks:  deadline.Hooks{OnCall: d.onCall},
	})
	d.build(o.Settings.Load())
	o.Settings.OnSwitch(func(s mode.Settings) {
		d.bulkhead.Reset()
		d.breaker.Reset()
		d.budget.Reset()
		d.build(s)
	})
	return d
}

// Breaker returns the dependency's breaker.
func (d *Outbound) Breaker() *breaker.Breaker { return d.breaker }

func (d *Outbound) build(s mode.Settings) {
	once := retry.Policy{MaxAttempts: 1}
	p := &policies{idempotent: once, other: once}
	hooks := retry.Hooks{OnAttempt: func(ctx context.Context, attempt int) {
		d.o.Metrics.Attempt(ctx, d.o.Name, attempt > 1)
	}}
	switch {
	case s.Mechanisms.Retries == mode.RetriesNaive && d.o.NaiveRetries:
		naive := retry.Naive()
		naive.Hooks = hooks
		p.idempotent, p.other = naive, naive
	case s.Mechanisms.Retries == mode.RetriesBudgeted && d.o.BudgetedRetries:
		p.idempotent = retry.Policy{
			MaxAttempts: DefaultAttempts, BaseBackoff: DefaultBaseBackoff, MaxBackoff: DefaultMaxBackoff,
			BudgetAware: true, Margin: s.Margin, Floor: s.Floor, Budget: d.budget, Hooks: hooks,
		}
	}
	if p.other.Hooks.OnAttempt == nil {
		p.other.Hooks = hooks
	}
	if p.idempotent.Hooks.OnAttempt == nil {
		p.idempotent.Hooks = hooks
	}
	d.policies.Store(p)
}

// Interceptor returns the gRPC client interceptor to dial the dependency
// with.
//
// Each attempt gets a span of its own (see telemetry.Tracing.StartCall):
// the interceptors run before the gRPC client span exists, so this span
// is where the call's deadline, timeout and outcome are recorded, and it
// also stands for the calls that never leave (breaker open, bulkhead
// full, too little budget).
func (d *Outbound) Interceptor() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		p := d.policies.Load()
		pol := p.other
		if d.o.Idempotent != nil && d.o.Idempotent(method) {
			pol = p.idempotent
		}
		return pol.Do(ctx, func(ctx context.Context, attempt int) error {
			ctx, span := d.o.Tracing.StartCall(ctx, d.o.HopName(method), attempt)
			defer span.End()
			return d.attempt(ctx, method, req, reply, cc, invoker, opts)
		})
	}
}

// attempt is one try: a pool slot, then the breaker, then the call clipped
// to the budget.
func (d *Outbound) attempt(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts []grpc.CallOption) error {
	mech := d.o.Settings.Load().Mechanisms
	pool := d.o.Shared
	if mech.Bulkheads {
		pool = d.bulkhead
	}
	if pool != nil {
		if _, err := pool.Pool().Acquire(ctx); err != nil {
			return d.reject(ctx, method, pool.Name(), err)
		}
		defer pool.Pool().Release()
	}
	if !mech.Breakers {
		return d.clip(ctx, method, req, reply, cc, invoker, opts...)
	}
	err := d.breaker.Do(func() error {
		return d.clip(ctx, method, req, reply, cc, invoker, opts...)
	})
	if errors.Is(err, breaker.ErrOpen) {
		d.o.Metrics.Skipped(ctx, ReasonBreakerOpen)
		rej := &Rejection{
			Code: codes.Unavailable, Reason: ReasonBreakerOpen, Err: err,
			Message: fmt.Sprintf("%s: circuit breaker open, retry after %v", d.o.Name, d.breaker.RetryAfter().Round(time.Second)),
		}
		d.record(ctx, method, timing.Hop{Outcome: ReasonBreakerOpen}, rej)
		return retry.Permanent(rej)
	}
	return err
}

// reject turns a pool's refusal into the call's error.
func (d *Outbound) reject(ctx context.Context, method, pool string, err error) error {
	if errors.Is(err, bulkhead.ErrFull) {
		d.o.Metrics.Skipped(ctx, ReasonBulkheadFull)
		d.o.Metrics.PoolRejected(ctx, pool)
		rej := &Rejection{
			Code: codes.ResourceExhausted, Reason: ReasonBulkheadFull, Err: err,
			Message: fmt.Sprintf("%s: bulkhead %q full", d.o.Name, pool),
		}
		d.record(ctx, method, timing.Hop{Outcome: ReasonBulkheadFull}, rej)
		return retry.Permanent(rej)
	}
	// The budget ran out while waiting for a slot: queue wait counts.
	rej := &Rejection{Code: codes.DeadlineExceeded, Reason: ReasonExpiredAtDequeue, Err: err,
		Message: fmt.Sprintf("%s: budget ran out waiting for a slot in %q", d.o.Name, pool)}
	d.record(ctx, method, timing.Hop{Outcome: string(deadline.OutcomeBudget)}, rej)
	return rej
}

// onCall records a call that reached pkg/deadline: made, or skipped for
// lack of budget.
func (d *Outbound) onCall(ctx context.Context, c deadline.CallInfo) {
	if c.Outcome == deadline.OutcomeSkipped {
		d.o.Metrics.Skipped(ctx, ReasonInsufficientBudget)
	} else {
		d.o.Metrics.Hop(ctx, d.o.Name, c.Took, string(c.Outcome))
	}
	d.o.Tracing.CallDecided(ctx, d.o.Cap, c)
	d.record(ctx, c.Method, timing.Hop{Timeout: c.Timeout, Took: c.Took, Outcome: string(c.Outcome)}, c.Err)
}

// record ends one attempt with err: in the request's Server-Timing
// record, and on the attempt's span.
func (d *Outbound) record(ctx context.Context, method string, h timing.Hop, err error) {
	d.o.Tracing.CallEnded(ctx, h.Outcome, err)
	if rec := timing.FromContext(ctx); rec != nil {
		h.Name = d.o.HopName(method)
		rec.Add(h)
	}
}
