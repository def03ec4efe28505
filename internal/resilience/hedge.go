package resilience

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/mercado-lab/mercado/internal/mode"
)

// Hedging's settings: a hedge is sent once a call has taken longer than
// HedgeQuantile of the dependency's recent calls, a moving quantile that
// forgets over about HedgeMemory calls and hedges nothing before
// HedgeWarmUp calls were timed.
const (
	HedgeQuantile = 0.95
	HedgeMemory   = 200
	HedgeWarmUp   = 50
)

// errNoHedge ends a hedge that was not sent: the budget or the retry
// budget had no room for it. It is never the call's answer: the first
// attempt's is.
var errNoHedge = errors.New("hedge not sent")

// hedger is step 2b of ClientChain: the dependency's hedge policy
// (failsafe-go's), whose moving quantile starts again at every mode
// switch, as the breakers do.
type hedger struct {
	policy atomic.Pointer[hedgepolicy.HedgePolicy[proto.Message]]
}

func newHedger() *hedger {
	h := &hedger{}
	h.reset()
	return h
}

func (h *hedger) reset() {
	p := hedgepolicy.NewBuilderWithDelayQuantile[proto.Message](HedgeQuantile, HedgeMemory, HedgeWarmUp).
		// The first answer wins, unless it is a hedge that was not sent.
		CancelIf(func(_ proto.Message, err error) bool { return !errors.Is(err, errNoHedge) }).
		Build()
	h.policy.Store(&p)
}

// hedged reports whether a call made in the mode s is hedged: hedging is
// on and the dependency's calls change nothing, so two at once cost load
// and nothing else.
func (d *Outbound) hedged(s mode.Settings) bool {
	return s.Mechanisms.Hedging && d.o.Hedged
}

// hedge makes attempt, and once more beside it if the first has not
// answered by the dependency's recent p95: only when what is left of the
// budget after the margin still holds the floor (a hedge never extends the
// deadline: both attempts share it) and the retry budget pays a token.
// The first answer is copied into reply; the other attempt's context is
// cancelled.
func (d *Outbound) hedge(ctx context.Context, s mode.Settings, reply any, attempt func(ctx context.Context, reply any) error) error {
	want, ok := reply.(proto.Message)
	if !ok {
		return attempt(ctx, reply)
	}
	won, err := failsafe.With(*d.hedges.policy.Load()).WithContext(ctx).
		GetWithExecution(func(e failsafe.Execution[proto.Message]) (proto.Message, error) {
			if e.IsHedge() {
				// Checked when the hedge is due: what is left then is
				// what was left at the start less the hedge's delay.
				if _, err := s.Policy().Decide(e.Context(), 0); err != nil || !d.budget.Withdraw() {
					return nil, errNoHedge
				}
				d.o.Metrics.Attempt(e.Context(), d.o.Name, true)
			}
			r := want.ProtoReflect().New().Interface()
			return r, attempt(e.Context(), r)
		})
	if won != nil {
		proto.Merge(want, won)
	}
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		// The caller's deadline ended the wait, not an attempt's answer:
		// say so as a call does.
		return status.FromContextError(err).Err()
	}
	return err
}
