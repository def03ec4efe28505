package deadline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// metadataClientDeadline is HeaderClientDeadline as gRPC metadata.
const metadataClientDeadline = "x-client-deadline-ms"

// ClientOptions configure [UnaryClientInterceptor].
type ClientOptions struct {
	// Policy returns the policy for a call made with ctx. It is read on
	// every call, so a caller can switch policies at run time, and given
	// the call's context, so that a request keeps the policy it started
	// with. Nil means the zero Policy.
	Policy func(ctx context.Context) Policy
	// Cap returns a method's own timeout cap; zero or a nil func means none.
	Cap func(method string) time.Duration
	// Hooks observe every call.
	Hooks Hooks
}

// UnaryClientInterceptor bounds each outbound unary call by
// min(cap, remaining − margin), skips calls with less than the floor left
// (returning a DeadlineExceeded status that wraps ErrInsufficientBudget),
// and forwards the passive client deadline and the request's class
// (x-request-class metadata, left out for interactive). gRPC itself
// carries the call's deadline to the server as a relative grpc-timeout.
func UnaryClientInterceptor(o ClientOptions) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		var p Policy
		if o.Policy != nil {
			p = o.Policy(ctx)
		}
		var cap time.Duration
		if o.Cap != nil {
			cap = o.Cap(method)
		}
		callCtx, cancel, d, err := p.Call(ctx, cap)
		defer cancel()
		if err != nil {
			cerr := &CallError{Outcome: OutcomeSkipped, cause: err}
			if o.Hooks.OnCall != nil {
				o.Hooks.OnCall(ctx, CallInfo{Method: method, Decision: d, Outcome: OutcomeSkipped, Err: cerr})
			}
			return cerr
		}
		if cd, ok := ClientDeadline(callCtx); ok {
			callCtx = metadata.AppendToOutgoingContext(callCtx, metadataClientDeadline, FormatMillis(time.Until(cd)))
		}
		if c := ClassOf(callCtx); c != Interactive {
			callCtx = metadata.AppendToOutgoingContext(callCtx, metadataClass, string(c))
		}
		start := time.Now()
		err = invoker(callCtx, method, req, reply, cc, opts...)
		took := time.Since(start)
		out := Classify(callCtx, d, err)
		if (out == OutcomeTimeout || out == OutcomeBudget) && endedByOwnClock(callCtx) {
			err = &CallError{Outcome: out, cause: outcomeCause(out), err: err}
		}
		if o.Hooks.OnCall != nil {
			o.Hooks.OnCall(ctx, CallInfo{Method: method, Decision: d, Took: took, Outcome: out, Err: err})
		}
		return err
	}
}

// endedByOwnClock reports whether the call's own deadline ended it: its
// context is done, or the deadline has passed and the peer only said so
// before the context's timer fired. Otherwise the peer ran out of time on
// its own (one of its calls timed out, or its admission turned the request
// away) and its error is returned as it is, so that a retry policy that
// retries ErrCallTimeout does not retry again at every hop.
func endedByOwnClock(callCtx context.Context) bool {
	if callCtx.Err() != nil {
		return true
	}
	dl, ok := callCtx.Deadline()
	return ok && !time.Now().Before(dl)
}

// outcomeCause is the sentinel wrapped by the error of a call that timed
// out. It follows the outcome rather than context.Cause of the call's
// context, which is nil when the peer answered DeadlineExceeded first, and
// the caller's own cause (often plain context.DeadlineExceeded) when the
// caller's deadline fired before the call's.
func outcomeCause(out Outcome) error {
	if out == OutcomeTimeout {
		return ErrCallTimeout
	}
	return ErrBudgetExhausted
}

// CallError is the error of a call that was skipped or timed out. It is a
// gRPC status (DeadlineExceeded) for code that maps errors to codes, and it
// wraps its cause ([ErrInsufficientBudget], [ErrCallTimeout] or
// [ErrBudgetExhausted]) for code that needs to know which it was.
type CallError struct {
	Outcome Outcome
	cause   error
	err     error
}

func (e *CallError) Error() string {
	if e.err == nil {
		return e.cause.Error()
	}
	return fmt.Sprintf("%v: %v", e.cause, e.err)
}

// Unwrap returns the cause and the call's own error.
func (e *CallError) Unwrap() []error {
	if e.err == nil {
		return []error{e.cause}
	}
	return []error{e.cause, e.err}
}

// GRPCStatus reports the error as a DeadlineExceeded status.
func (e *CallError) GRPCStatus() *status.Status {
	return status.New(codes.DeadlineExceeded, e.Error())
}

// ServerOptions configure [UnaryServerInterceptor].
type ServerOptions struct {
	// Policy returns the policy for a request arriving with ctx; only
	// Floor and Admission matter on the server side. Nil means the zero
	// Policy (admit everything).
	Policy func(ctx context.Context) Policy
	// MaxDeadline returns the longest deadline the server accepts for a
	// request of class c arriving with ctx. A request that comes with a
	// longer one, or with none, runs under a context that ends at the cap
	// instead, with cause [ErrServerCap]. Zero, or a nil func, accepts
	// whatever the caller sent.
	MaxDeadline func(ctx context.Context, c Class) time.Duration
	// Hooks observe arrivals and late completions.
	Hooks Hooks
}

// ErrServerCap is the cause of a request's context that ended at the
// server's cap on the deadline it accepts, rather than at its caller's.
var ErrServerCap = errors.New("deadline: ended at the server's cap on the deadline it accepts")

// Admission reasons reported in [ArrivalInfo].
const (
	ReasonExpired    = "expired"
	ReasonBelowFloor = "below_floor"
)

// UnaryServerInterceptor records the passive client deadline and the
// class sent by the caller (an unknown class is InvalidArgument), reports
// each arrival, and, when the policy admits selectively, rejects requests
// whose deadline is already spent or below the floor with DeadlineExceeded
// before any work starts. An admitted request whose deadline is longer
// than MaxDeadline allows for its class, or which has none, runs under
// the cap ("every server caps what it accepts"). After the handler it
// reports work finished past the client's deadline.
func UnaryServerInterceptor(o ServerOptions) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		arrival := time.Now()
		if v := metadata.ValueFromIncomingContext(ctx, metadataClientDeadline); len(v) > 0 {
			if ms, err := strconv.ParseInt(v[0], 10, 64); err == nil && ms >= 0 {
				ctx = WithClientDeadline(ctx, arrival.Add(time.Duration(ms)*time.Millisecond))
			}
		}
		class := Interactive
		if v := metadata.ValueFromIncomingContext(ctx, metadataClass); len(v) > 0 {
			c, err := ParseClass(v[0])
			if err != nil {
				return nil, status.Error(codes.InvalidArgument, err.Error())
			}
			class = c
		}
		ctx = WithClass(ctx, class)
		var p Policy
		if o.Policy != nil {
			p = o.Policy(ctx)
		}
		a := ArrivalInfo{Method: info.FullMethod, Class: class}
		a.Remaining, a.HasBudget = Remaining(ctx)
		if err := p.admit(a.Remaining, a.HasBudget); err != nil {
			a.Rejected, a.Reason = true, err.reason
			if o.Hooks.OnArrival != nil {
				o.Hooks.OnArrival(ctx, a)
			}
			return nil, err
		}
		if o.MaxDeadline != nil {
			if max := o.MaxDeadline(ctx, class); max > 0 && (!a.HasBudget || a.Remaining > max) {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadlineCause(ctx, arrival.Add(max), ErrServerCap)
				defer cancel()
				a.Clamped, a.ClampedTo = true, max
			}
		}
		if o.Hooks.OnArrival != nil {
			o.Hooks.OnArrival(ctx, a)
		}
		resp, err := handler(ctx, req)
		if late, ok := lateBy(ctx, time.Now()); ok && o.Hooks.OnLate != nil {
			o.Hooks.OnLate(ctx, LateInfo{Method: info.FullMethod, Late: late})
		}
		return resp, err
	}
}

// AdmissionError is returned by [Policy.Admit] for a request that should
// not be started.
type AdmissionError struct {
	reason    string
	remaining time.Duration
	floor     time.Duration
}

// Reason is ReasonExpired or ReasonBelowFloor.
func (e *AdmissionError) Reason() string { return e.reason }

func (e *AdmissionError) Error() string {
	if e.reason == ReasonExpired {
		return "deadline expired before the work started"
	}
	return fmt.Sprintf("only %v of budget left, below the %v floor", e.remaining.Round(time.Millisecond), e.floor)
}

// Unwrap makes an admission error match ErrInsufficientBudget.
func (e *AdmissionError) Unwrap() error { return ErrInsufficientBudget }

// GRPCStatus reports the refusal as DeadlineExceeded. Its message names
// nothing inside the server, so it also travels as the status's
// google.rpc.LocalizedMessage, the detail for a message that is safe to
// show the user: an edge may pass it on to its client.
func (e *AdmissionError) GRPCStatus() *status.Status {
	st := status.New(codes.DeadlineExceeded, e.Error())
	if withMsg, err := st.WithDetails(&errdetails.LocalizedMessage{Locale: "en-US", Message: e.Error()}); err == nil {
		return withMsg
	}
	return st
}

// Admit reports whether a request with ctx's budget should be started.
// It is how a server applies "queue wait counts": call it on arrival and
// again after waiting for a worker. It always admits when the policy does
// not admit selectively (Admission is false) or ctx has no deadline.
func (p Policy) Admit(ctx context.Context) error {
	rem, ok := Remaining(ctx)
	if err := p.admit(rem, ok); err != nil {
		return err
	}
	return nil
}

func (p Policy) admit(remaining time.Duration, hasBudget bool) *AdmissionError {
	switch {
	case !p.Admission || !hasBudget:
		return nil
	case remaining <= 0:
		return &AdmissionError{reason: ReasonExpired, remaining: remaining, floor: p.Floor}
	case remaining < p.Floor:
		return &AdmissionError{reason: ReasonBelowFloor, remaining: remaining, floor: p.Floor}
	}
	return nil
}
