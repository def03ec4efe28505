package resilience

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/telemetry"
	"github.com/mercado-lab/mercado/internal/timing"
	"github.com/mercado-lab/mercado/pkg/deadline"
	"github.com/mercado-lab/mercado/pkg/resilience/breaker"
	"github.com/mercado-lab/mercado/pkg/resilience/bulkhead"
	"github.com/mercado-lab/mercado/pkg/resilience/retry"
)

// Defaults of the outbound mechanisms, from the lessons: a bulkhead of 25
// per dependency and a breaker that opens at 50% failures of at least 20
// calls for 30 s (Drill 76), one for each traffic class; three attempts;
// backoff with full jitter.
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
	// Breaker configures the dependency's breakers, one per traffic class
	// (Name is set to Name; a zero Window is BreakerWindow's).
	Breaker breaker.Settings
	// RetryBudget caps budgeted retries; nil gives the dependency its own.
	RetryBudget *retry.Budget
	// NaiveRetries: this layer retries blind in naive mode.
	NaiveRetries bool
	// BudgetedRetries: this layer is the one that retries in budgeted
	// mode, for the methods Idempotent allows.
	BudgetedRetries bool
	Idempotent      func(method string) bool
	// Hedged: with the hedging mechanism on, a slow call to this
	// dependency is sent a second time beside the first (hedge.go). Only
	// for calls that change nothing.
	Hedged bool
	// Log gets, at debug level, the budget left before and after each
	// attempt (budgetlog.go); nil logs nothing.
	Log *slog.Logger
}

// Outbound holds the mechanisms of one dependency — its bulkhead, its
// breakers and its retry budget — which ClientChain applies, in its order,
// to every call.
type Outbound struct {
	o        OutboundOptions
	bulkhead *PoolRef
	breakers classBreakers
	budget   *retry.Budget
	hedges   *hedger
	hooks    retry.Hooks
	// capped and uncapped are step 5 of ClientChain with the caps
	// mechanism on and off.
	capped, uncapped grpc.UnaryClientInterceptor
}

// BreakerWindow is how far back a dependency's breakers count calls when
// no window is set. A call counts only once it ends, in the bucket of the
// moment it started, so a call that hangs to the dependency's cap must end
// inside the window; and only the bulkhead's slots can hang at once, so
// minCalls such calls take minCalls/bulkhead caps to end. The window holds
// the cap plus twice that time, and never less than
// breaker.DefaultWindow: 13 s for Drill 76's vendor, capped at 5 s behind
// a bulkhead of 25, where 10 s would count 20 hung calls only just, or not
// at all.
func BreakerWindow(cap time.Duration, bulkhead, minCalls int) time.Duration {
	if minCalls <= 0 {
		minCalls = breaker.DefaultMinCalls
	}
	if bulkhead <= 0 {
		bulkhead = DefaultBulkhead
	}
	return max(cap+2*cap*time.Duration(minCalls)/time.Duration(bulkhead), breaker.DefaultWindow)
}

// NewOutbound returns the mechanisms of one dependency, registers its pool
// and breakers with the metrics, and resets them whenever the mode
// switches: the state of one phase of the lab never leaks into the next.
func NewOutbound(o OutboundOptions) *Outbound {
	if o.Bulkhead.Capacity <= 0 {
		o.Bulkhead.Capacity = DefaultBulkhead
	}
	o.Bulkhead.Name = "to." + o.Name
	o.Breaker.Name = o.Name
	if o.Breaker.Window <= 0 {
		o.Breaker.Window = BreakerWindow(o.Cap, o.Bulkhead.Capacity, o.Breaker.MinCalls)
	}
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
		breakers: newClassBreakers(o.Breaker),
		budget:   o.RetryBudget,
		hedges:   newHedger(),
	}
	d.hooks = retry.Hooks{OnAttempt: func(ctx context.Context, attempt int) {
		m.Attempt(ctx, o.Name, attempt > 1)
	}}
	_ = m.ObserveBreaker(o.Name, func() int { return int(d.breakers.of(deadline.Interactive).State()) })
	_ = m.ObserveCap(o.Name, func() time.Duration { return o.Settings.Load().Cap(o.Cap) })
	d.capped, d.uncapped = d.newClip(o.Cap), d.newClip(0)
	o.Settings.OnSwitch(func(mode.Settings) {
		d.bulkhead.Reset()
		d.breakers.reset()
		d.budget.Reset()
		d.hedges.reset()
	})
	return d
}

// newClip is pkg/deadline's client interceptor for calls with the given
// cap (zero: none).
func (d *Outbound) newClip(cap time.Duration) grpc.UnaryClientInterceptor {
	return deadline.UnaryClientInterceptor(deadline.ClientOptions{
		Policy: requestPolicy(d.o.Settings),
		Cap:    func(string) time.Duration { return cap },
		Hooks: deadline.Hooks{OnCall: func(ctx context.Context, c deadline.CallInfo) {
			d.onCall(ctx, cap, c)
		}},
	})
}

// clip is step 5 of ClientChain: the call, with its timeout decided by
// pkg/deadline. With the caps mechanism on, the dependency's cap bounds
// it; off, nothing but the budget does (when clipped to it), as a client
// with no read timeout waits.
func (d *Outbound) clip(ctx context.Context, s mode.Settings, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if s.Cap(d.o.Cap) <= 0 {
		return d.uncapped(ctx, method, req, reply, cc, invoker, opts...)
	}
	return d.capped(ctx, method, req, reply, cc, invoker, opts...)
}

// Breaker returns the dependency's breaker for calls of traffic class c.
func (d *Outbound) Breaker(c deadline.Class) *breaker.Breaker { return d.breakers.of(c) }

// Attempts is how many times a call is tried in the mode s, at a layer
// that retries blind in naive mode (naiveRetries) and is the one that
// retries in budgeted mode (budgetedRetries), for an idempotent method:
// the most a budgeted layer tries, since it stops when the next attempt
// would not fit in the budget.
func Attempts(s mode.Settings, naiveRetries, budgetedRetries bool) int {
	switch {
	case s.Mechanisms.Retries == mode.RetriesNaive && naiveRetries:
		return retry.Naive().MaxAttempts
	case s.Mechanisms.Retries == mode.RetriesBudgeted && budgetedRetries:
		return DefaultAttempts
	}
	return 1
}

// retries is step 2 of ClientChain: the retry policy of a call to method
// made in the mode s.
func (d *Outbound) retries(s mode.Settings, method string) retry.Policy {
	switch {
	case s.Mechanisms.Retries == mode.RetriesNaive && d.o.NaiveRetries:
		p := retry.Naive()
		p.Hooks = d.hooks
		return p
	case s.Mechanisms.Retries == mode.RetriesBudgeted && d.o.BudgetedRetries && d.o.Idempotent != nil && d.o.Idempotent(method):
		return retry.Policy{
			MaxAttempts: DefaultAttempts, BaseBackoff: DefaultBaseBackoff, MaxBackoff: DefaultMaxBackoff,
			BudgetAware: true, Margin: s.Margin, Floor: s.Floor, Budget: d.budget, Hooks: d.hooks,
		}
	}
	return retry.Policy{MaxAttempts: 1, Hooks: d.hooks}
}

// acquire is step 3 of ClientChain: a slot for one attempt, in the shared
// pool (naive) or the dependency's bulkhead (budgeted), within the share
// of it the request's class may hold. It returns the
// pool to release the slot to, or nil when the call takes no pool.
func (d *Outbound) acquire(ctx context.Context, s mode.Settings, method string) (*bulkhead.Pool, error) {
	ref := d.o.Shared
	if s.Mechanisms.Bulkheads {
		ref = d.bulkhead
	}
	if ref == nil {
		return nil, nil
	}
	pool := ref.Pool()
	traffic := s.Class(deadline.ClassOf(ctx))
	if _, err := acquire(ctx, pool, traffic); err != nil {
		return nil, d.reject(ctx, method, ref.Name(), traffic, err)
	}
	return pool, nil
}

// guard is step 4 of ClientChain: call, through the dependency's breaker
// for the call's traffic class (classbreakers.go). An open breaker answers
// Unavailable at once, and the call is not retried.
func (d *Outbound) guard(ctx context.Context, s mode.Settings, method string, call func() error) error {
	b := d.breakers.of(s.Class(deadline.ClassOf(ctx)))
	err := b.Do(call)
	if errors.Is(err, breaker.ErrOpen) {
		d.o.Metrics.Skipped(ctx, ReasonBreakerOpen)
		rej := &Rejection{
			Code: codes.Unavailable, Reason: ReasonBreakerOpen, Err: err,
			Message: fmt.Sprintf("%s: circuit breaker open, retry after %v", d.o.Name, b.RetryAfter().Round(time.Second)),
		}
		d.record(ctx, method, timing.Hop{Outcome: ReasonBreakerOpen}, rej)
		return retry.Permanent(rej)
	}
	return err
}

// reject turns a pool's refusal into the call's error.
func (d *Outbound) reject(ctx context.Context, method, pool string, traffic deadline.Class, err error) error {
	if errors.Is(err, bulkhead.ErrFull) {
		d.o.Metrics.Skipped(ctx, ReasonBulkheadFull)
		d.o.Metrics.PoolRejected(ctx, pool, string(traffic))
		rej := &Rejection{
			Code: codes.ResourceExhausted, Reason: ReasonBulkheadFull, Err: err,
			Message: fmt.Sprintf("%s: bulkhead %q full for %s work", d.o.Name, pool, traffic),
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
func (d *Outbound) onCall(ctx context.Context, cap time.Duration, c deadline.CallInfo) {
	switch c.Outcome {
	case deadline.OutcomeSkipped:
		d.o.Metrics.Skipped(ctx, ReasonInsufficientBudget)
		d.o.Metrics.BudgetExhausted(ctx, d.o.Name)
	case deadline.OutcomeBudget:
		d.o.Metrics.BudgetExhausted(ctx, d.o.Name)
	}
	if c.Outcome != deadline.OutcomeSkipped {
		d.o.Metrics.Hop(ctx, d.o.Name, c.Took, string(c.Outcome))
		d.o.Metrics.HopTimeout(ctx, d.o.Name, c.Timeout)
	}
	d.o.Tracing.CallDecided(ctx, cap, c)
	d.record(ctx, c.Method, timing.Hop{Timeout: c.Timeout, Took: c.Took, Outcome: string(c.Outcome)}, c.Err)
}

// record ends one attempt with err: in the request's Server-Timing
// record, and on the attempt's span.
func (d *Outbound) record(ctx context.Context, method string, h timing.Hop, err error) {
	d.o.Tracing.CallEnded(ctx, h.Outcome, err)
	h.Name = d.o.HopName(method)
	timing.EndCall(ctx, h)
}
