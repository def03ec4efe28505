package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/mercado-lab/mercado/pkg/deadline"
)

// The span attributes Mercado adds to what otelgrpc and otelhttp record.
// Durations are whole milliseconds, as in X-Deadline-Ms.
const (
	// AttrRemaining is what was left of the request's deadline: on a
	// server span, when the request arrived; on a call span, when the
	// call's timeout was decided. Absent when there was no deadline (naive
	// mode below the gateway).
	AttrRemaining = attribute.Key("deadline.remaining_ms")
	// AttrEffectiveTimeout is the timeout the call got: min(cap,
	// remaining − margin) when it honours the budget, the cap when blind.
	// Absent when the call was not bounded at all.
	AttrEffectiveTimeout = attribute.Key("deadline.effective_timeout_ms")
	// AttrCap is the caller's own cap for the dependency, when it has one.
	AttrCap = attribute.Key("deadline.cap_ms")
	// AttrClipped is true when the budget, not the cap, set the timeout.
	AttrClipped = attribute.Key("deadline.clipped")
	// AttrRejected is why admission turned a request away on arrival
	// ("expired", "below_floor").
	AttrRejected = attribute.Key("deadline.rejected")
	// AttrClass is the request's traffic class (interactive, background,
	// batch) on its server span.
	AttrClass = attribute.Key("mercado.class")
	// AttrClampedTo is the deadline, in ms, a server cut the request's
	// down to: its class's maximum, when the request came with a longer
	// one or none ("every server caps what it accepts").
	AttrClampedTo = attribute.Key("deadline.clamped_to_ms")
	// AttrLate is how long after the client's deadline a server finished
	// the request: work nobody was waiting for any more.
	AttrLate = attribute.Key("deadline.late_ms")
	// AttrOutcome is how a call ended, with the values of Server-Timing
	// and of the outcome label of mercado_hop_duration_seconds: ok,
	// timeout, budget_exhausted, skipped, canceled, error, and, for calls
	// that never left, breaker_open and bulkhead_full.
	AttrOutcome = attribute.Key("mercado.outcome")
	// AttrAttempt numbers the attempts of one call from 1; retries are the
	// call spans with attempt > 1.
	AttrAttempt = attribute.Key("mercado.attempt")
)

func millis(d time.Duration) int64 { return d.Milliseconds() }

// span returns ctx's span when it is one of t's and is recording.
func (t *Tracing) span(ctx context.Context) (trace.Span, bool) {
	if !t.Enabled() {
		return nil, false
	}
	s := trace.SpanFromContext(ctx)
	return s, s.IsRecording()
}

// Arrival annotates the server span of a request as it arrives: the
// deadline it brought, and the reason admission turned it away, if it did.
// It is fed by pkg/deadline's OnArrival hook.
func (t *Tracing) Arrival(ctx context.Context, a deadline.ArrivalInfo) {
	s, ok := t.span(ctx)
	if !ok {
		return
	}
	if a.HasBudget {
		s.SetAttributes(AttrRemaining.Int64(millis(a.Remaining)))
	}
	if a.Class != "" {
		s.SetAttributes(AttrClass.String(string(a.Class)))
	}
	if a.Rejected {
		s.SetAttributes(AttrRejected.String(a.Reason))
	}
	if a.Clamped {
		s.SetAttributes(AttrClampedTo.Int64(millis(a.ClampedTo)))
		s.AddEvent("deadline clamped to the class maximum", trace.WithAttributes(AttrClampedTo.Int64(millis(a.ClampedTo))))
	}
}

// Late annotates the server span of a request finished after the client's
// deadline. It is fed by pkg/deadline's OnLate hook.
func (t *Tracing) Late(ctx context.Context, late time.Duration) {
	if s, ok := t.span(ctx); ok {
		s.SetAttributes(AttrLate.Int64(millis(late)))
	}
}

// StartCall starts the span of one attempt at an outbound call, named
// "<service>→<hop>" ("orders→payments"). The gRPC client span, if the call
// is made, is its child; a call refused before it leaves (breaker open,
// bulkhead full, too little budget) is this span alone. The span starts
// with what is left of the deadline; [Tracing.CallDecided] replaces it
// with what was left once the call waited for its pool. When tracing is
// off, ctx is returned as is with a span that records nothing.
func (t *Tracing) StartCall(ctx context.Context, hop string, attempt int) (context.Context, trace.Span) {
	if !t.Enabled() {
		return ctx, tracenoop.Span{}
	}
	attrs := make([]attribute.KeyValue, 0, 2)
	attrs = append(attrs, AttrAttempt.Int(attempt))
	if rem, ok := deadline.Remaining(ctx); ok {
		attrs = append(attrs, AttrRemaining.Int64(millis(rem)))
	}
	return t.tracer.Start(ctx, t.service+"→"+hop, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
}

// CallDecided annotates the call span in ctx with the timeout pkg/deadline
// chose for it under the dependency's cap; a call skipped for lack of
// budget got none. It is fed by the OnCall hook.
func (t *Tracing) CallDecided(ctx context.Context, cap time.Duration, c deadline.CallInfo) {
	s, ok := t.span(ctx)
	if !ok {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 4)
	if c.HasBudget {
		attrs = append(attrs, AttrRemaining.Int64(millis(c.Remaining)))
	}
	if cap > 0 {
		attrs = append(attrs, AttrCap.Int64(millis(cap)))
	}
	if d := c.Decision; d.Timeout > 0 && c.Outcome != deadline.OutcomeSkipped {
		attrs = append(attrs, AttrEffectiveTimeout.Int64(millis(d.Timeout)), AttrClipped.Bool(d.ClippedByBudget))
	}
	s.SetAttributes(attrs...)
}

// CallEnded records how the call in ctx ended; any outcome but "ok" marks
// the span as an error, with err's message.
func (t *Tracing) CallEnded(ctx context.Context, outcome string, err error) {
	s, ok := t.span(ctx)
	if !ok {
		return
	}
	s.SetAttributes(AttrOutcome.String(outcome))
	if outcome == string(deadline.OutcomeOK) {
		return
	}
	msg := outcome
	if err != nil {
		msg = err.Error()
	}
	s.SetStatus(codes.Error, msg)
}

// KeepTrace returns what gives a context of later work — done after the
// request has answered, such as a queued write — ctx's span as its parent,
// so that the work shows in the request's trace. When ctx has no span, it
// returns its context unchanged.
func KeepTrace(ctx context.Context) func(context.Context) context.Context {
	sc := trace.SpanContextFromContext(ctx)
	return func(later context.Context) context.Context {
		if !sc.IsValid() {
			return later
		}
		return trace.ContextWithSpanContext(later, sc)
	}
}
