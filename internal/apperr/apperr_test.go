package apperr_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

func TestErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"New formats", apperr.New(apperr.NotFound, "unknown sku %q", "tea"), `unknown sku "tea"`},
		{"Wrap adds the cause", apperr.Wrap(apperr.Timeout, io.EOF, "carrier did not answer"), "carrier did not answer: EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWrapUnwraps(t *testing.T) {
	err := apperr.Wrap(apperr.Unavailable, io.ErrUnexpectedEOF, "reading")
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Error("errors.Is does not reach the wrapped cause")
	}
	var e *apperr.Error
	if !errors.As(fmt.Errorf("outer: %w", err), &e) || e.Code != apperr.Unavailable {
		t.Errorf("errors.As through a %%w wrap = %+v, want code %q", e, apperr.Unavailable)
	}
}

func TestGRPCCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want codes.Code
	}{
		{"nil", nil, codes.OK},
		{"invalid", apperr.New(apperr.Invalid, "x"), codes.InvalidArgument},
		{"not found", apperr.New(apperr.NotFound, "x"), codes.NotFound},
		{"conflict", apperr.New(apperr.Conflict, "x"), codes.FailedPrecondition},
		{"unavailable", apperr.New(apperr.Unavailable, "x"), codes.Unavailable},
		{"timeout", apperr.New(apperr.Timeout, "x"), codes.DeadlineExceeded},
		{"internal", apperr.New(apperr.Internal, "x"), codes.Internal},
		{"unknown code", apperr.New(apperr.Code("weird"), "x"), codes.Internal},
		{"coded error wrapped with %w", fmt.Errorf("order o1: %w", apperr.New(apperr.NotFound, "x")), codes.NotFound},
		{"the code wins over a context error it wraps", apperr.Wrap(apperr.Unavailable, context.DeadlineExceeded, "x"), codes.Unavailable},
		{"insufficient budget", fmt.Errorf("calling shipping: %w", deadline.ErrInsufficientBudget), codes.DeadlineExceeded},
		{"call timeout", fmt.Errorf("calling payments: %w", deadline.ErrCallTimeout), codes.DeadlineExceeded},
		{"budget exhausted", fmt.Errorf("calling catalog: %w", deadline.ErrBudgetExhausted), codes.DeadlineExceeded},
		{"the server's cap on the deadline", deadline.ErrServerCap, codes.DeadlineExceeded},
		{"context deadline", context.DeadlineExceeded, codes.DeadlineExceeded},
		{"wrapped context deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		{"context canceled", context.Canceled, codes.Canceled},
		{"wrapped context canceled", fmt.Errorf("x: %w", context.Canceled), codes.Canceled},
		{"downstream status passed on", status.Error(codes.ResourceExhausted, "pool full"), codes.ResourceExhausted},
		{"wrapped downstream status", fmt.Errorf("x: %w", status.Error(codes.Unavailable, "down")), codes.Unavailable},
		{"plain error", errors.New("boom"), codes.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := apperr.GRPCCode(tt.err); got != tt.want {
				t.Errorf("GRPCCode(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// The cause a deadline context records (context.Cause) is what the
// services return when a wait ends: it must map like the context error.
func TestGRPCCodeOfContextCause(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(deadline.ErrBudgetExhausted)
	if got := apperr.GRPCCode(context.Cause(ctx)); got != codes.DeadlineExceeded {
		t.Errorf("GRPCCode(cause %v) = %v, want DeadlineExceeded", context.Cause(ctx), got)
	}
}

func TestStatus(t *testing.T) {
	secret := errors.New("pq: password authentication failed for user mercado")
	tests := []struct {
		name     string
		err      error
		wantCode codes.Code
		wantMsg  string
	}{
		{"invalid keeps its message", apperr.New(apperr.Invalid, "sku is required"), codes.InvalidArgument, "sku is required"},
		{"timeout keeps the whole chain", apperr.Wrap(apperr.Timeout, context.DeadlineExceeded, "carrier did not answer in time"),
			codes.DeadlineExceeded, "carrier did not answer in time: context deadline exceeded"},
		{"internal hides its detail", apperr.Wrap(apperr.Internal, secret, "saving the order"), codes.Internal, "internal error"},
		{"an uncoded error is internal and hidden", secret, codes.Internal, "internal error"},
		{"an unknown code is internal and hidden", apperr.New(apperr.Code("weird"), "detail"), codes.Internal, "internal error"},
		{"a context error", context.Canceled, codes.Canceled, "context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ok := status.FromError(apperr.Status(tt.err))
			if !ok {
				t.Fatalf("Status(%v) is not a gRPC status error", tt.err)
			}
			if s.Code() != tt.wantCode || s.Message() != tt.wantMsg {
				t.Errorf("Status(%v) = %v %q, want %v %q", tt.err, s.Code(), s.Message(), tt.wantCode, tt.wantMsg)
			}
			if strings.Contains(s.Message(), "password") {
				t.Errorf("Status leaked internal detail: %q", s.Message())
			}
		})
	}
	if err := apperr.Status(nil); err != nil {
		t.Errorf("Status(nil) = %v, want nil", err)
	}
}

func TestFromGRPC(t *testing.T) {
	tests := []struct {
		in   codes.Code
		want apperr.Code
	}{
		{codes.InvalidArgument, apperr.Invalid},
		{codes.NotFound, apperr.NotFound},
		{codes.FailedPrecondition, apperr.Conflict},
		{codes.AlreadyExists, apperr.Conflict},
		{codes.Aborted, apperr.Conflict},
		{codes.Unavailable, apperr.Unavailable},
		{codes.ResourceExhausted, apperr.Unavailable},
		{codes.DeadlineExceeded, apperr.Timeout},
		{codes.Canceled, apperr.Timeout},
		{codes.Internal, apperr.Internal},
		{codes.Unknown, apperr.Internal},
		{codes.PermissionDenied, apperr.Internal},
		{codes.Unimplemented, apperr.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.in.String(), func(t *testing.T) {
			orig := status.Error(tt.in, "out of stock: \"filter-paper\" has 10 left")
			err := apperr.FromGRPC(orig, "reserving stock")

			var e *apperr.Error
			if !errors.As(err, &e) {
				t.Fatalf("FromGRPC returned %T, want *apperr.Error", err)
			}
			if e.Code != tt.want {
				t.Errorf("code = %q, want %q", e.Code, tt.want)
			}
			if !errors.Is(err, orig) {
				t.Error("errors.Is(FromGRPC(err), err) = false: the dependency's status is lost")
			}
			if s, ok := status.FromError(orig); !ok || status.Code(err) != s.Code() {
				t.Errorf("status.Code(FromGRPC(err)) = %v, want the dependency's %v", status.Code(err), s.Code())
			}
			want := `reserving stock: out of stock: "filter-paper" has 10 left`
			if got := err.Error(); got != want {
				t.Errorf("Error() = %q, want %q", got, want)
			}
			if strings.Contains(err.Error(), "rpc error") {
				t.Errorf("Error() = %q shows the gRPC wrapping", err.Error())
			}
		})
	}
}

func TestFromGRPCNonStatus(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantCode apperr.Code
		wantMsg  string
	}{
		{"call skipped for lack of budget", fmt.Errorf("x: %w", deadline.ErrInsufficientBudget), apperr.Timeout,
			"charging: x: deadline: insufficient budget"},
		{"context deadline", context.DeadlineExceeded, apperr.Timeout, "charging: context deadline exceeded"},
		{"already coded (a fake or local dependency)", apperr.New(apperr.NotFound, `unknown sku "x"`), apperr.NotFound,
			`charging: unknown sku "x"`},
		{"plain error", errors.New("boom"), apperr.Internal, "charging: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := apperr.FromGRPC(tt.err, "charging")
			var e *apperr.Error
			if !errors.As(err, &e) || e.Code != tt.wantCode {
				t.Errorf("FromGRPC(%v) = %#v, want code %q", tt.err, err, tt.wantCode)
			}
			if err.Error() != tt.wantMsg {
				t.Errorf("Error() = %q, want %q", err.Error(), tt.wantMsg)
			}
			if !errors.Is(err, tt.err) {
				t.Error("errors.Is does not reach the original error")
			}
		})
	}
	if err := apperr.FromGRPC(nil, "charging"); err != nil {
		t.Errorf("FromGRPC(nil) = %v, want nil", err)
	}
}

// A dependency's answer, classified by FromGRPC and passed on by Status,
// keeps its code across the hop and reads without gRPC's wrapping.
func TestFromGRPCThenStatus(t *testing.T) {
	dep := status.Error(codes.FailedPrecondition, `out of stock: "filter-paper" has 10 left`)
	s := status.Convert(apperr.Status(apperr.FromGRPC(dep, "reserving stock")))
	if s.Code() != codes.FailedPrecondition {
		t.Errorf("code = %v, want FailedPrecondition", s.Code())
	}
	if want := `reserving stock: out of stock: "filter-paper" has 10 left`; s.Message() != want {
		t.Errorf("message = %q, want %q", s.Message(), want)
	}
}

// publicError is an error with a public message of its own, apart from
// its cause.
type publicError struct {
	public string
	cause  error
}

func (e publicError) Error() string         { return e.public + ": " + e.cause.Error() }
func (e publicError) PublicMessage() string { return e.public }
func (e publicError) Unwrap() error         { return e.cause }

// What a client may read of an error is decided by the types along its
// chain, never by its text: the services' messages and the deadline's own
// words pass, a broken connection's or a driver's text gives way to a
// phrase, and a wrapper's own words are left out.
func TestPublic(t *testing.T) {
	dial := status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 10.0.0.7:8081: connect: connection refused"`)
	secret := errors.New("pq: password authentication failed for user mercado")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"a message", apperr.New(apperr.NotFound, `unknown sku "tea"`), `unknown sku "tea"`},
		{"messages along the chain", apperr.Wrap(apperr.Unavailable, apperr.New(apperr.Unavailable, "simulated failure"), "payment provider unavailable"),
			"payment provider unavailable: simulated failure"},
		{"an uncoded cause adds nothing", apperr.Wrap(apperr.Conflict, secret, "saving the order"), "saving the order"},
		{"an uncoded error alone", secret, ""},
		{"a wrapper's own words are left out", fmt.Errorf("replaying key %q: %w", "k", apperr.New(apperr.Invalid, "bad")), "bad"},
		{"an error with a public message of its own", apperr.Wrap(apperr.Unavailable, publicError{"the database is unavailable (SQLSTATE 57P03)", secret}, "reading a charge"),
			"reading a charge: the database is unavailable (SQLSTATE 57P03)"},
		{"a dependency's public message", apperr.FromGRPC(apperr.Status(apperr.New(apperr.NotFound, `unknown sku "x"`)), "reserving stock"),
			`reserving stock: unknown sku "x"`},
		{"a broken connection", apperr.FromGRPC(dial, "reserving stock"),
			"reserving stock: a service the shop depends on could not be reached; try again later"},
		{"a broken connection alone", dial, "a service the shop depends on could not be reached; try again later"},
		{"a status gRPC made, out of time", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), "the request ran out of time"},
		{"a status gRPC made, with no phrase", status.Error(codes.Unimplemented, "unknown service"), ""},
		{"a call skipped for lack of budget", apperr.FromGRPC(fmt.Errorf("calling shipping: %w", deadline.ErrInsufficientBudget), "booking the shipment"),
			"booking the shipment: deadline: insufficient budget"},
		{"a bare context deadline", apperr.Wrap(apperr.Timeout, context.DeadlineExceeded, "carrier did not answer in time"),
			"carrier did not answer in time: the request ran out of time"},
		{"the caller's budget as the cause", apperr.Wrap(apperr.Timeout, deadline.ErrBudgetExhausted, "payment provider did not answer in time"),
			"payment provider did not answer in time: deadline: caller's budget exhausted"},
		{"internal is hidden on the wire", apperr.FromGRPC(apperr.Status(apperr.Wrap(apperr.Internal, secret, "saving")), "reserving stock"),
			"reserving stock: internal error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := apperr.Public(tt.err); got != tt.want {
				t.Errorf("Public(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

// Status carries the public message beside the whole chain, so the next
// hop reads what it may show without reading the status's text.
func TestStatusCarriesPublicMessage(t *testing.T) {
	err := apperr.FromGRPC(status.Error(codes.Unavailable, "dial tcp 10.0.0.7:8081: connection refused"), "reserving stock")
	s := status.Convert(apperr.Status(err))
	if want := "reserving stock: dial tcp 10.0.0.7:8081: connection refused"; s.Message() != want {
		t.Errorf("status message = %q, want the whole chain %q", s.Message(), want)
	}
	var public []string
	for _, d := range s.Details() {
		if m, ok := d.(*errdetails.LocalizedMessage); ok {
			public = append(public, m.GetMessage())
		}
	}
	if want := []string{"reserving stock: a service the shop depends on could not be reached; try again later"}; !slices.Equal(public, want) {
		t.Errorf("public messages = %q, want %q", public, want)
	}
	if got := apperr.Public(apperr.Status(apperr.Wrap(apperr.Internal, errors.New("pq: secret"), "saving"))); got != "internal error" {
		t.Errorf("Public of an internal status = %q, want internal error", got)
	}
}

// PublicStatus keeps the details it is given after the public message.
func TestPublicStatusDetails(t *testing.T) {
	st := apperr.PublicStatus(codes.FailedPrecondition, "key reused", "this key was used with a different request",
		&errdetails.ErrorInfo{Reason: "IDEMPOTENCY_KEY_REUSED", Domain: "mercado"})
	if st.Code() != codes.FailedPrecondition || st.Message() != "key reused" {
		t.Errorf("status = %v %q", st.Code(), st.Message())
	}
	var reason string
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			reason = info.GetReason()
		}
	}
	if reason != "IDEMPOTENCY_KEY_REUSED" {
		t.Errorf("ErrorInfo reason = %q, want IDEMPOTENCY_KEY_REUSED", reason)
	}
	if got := apperr.Public(st.Err()); got != "this key was used with a different request" {
		t.Errorf("Public = %q", got)
	}
}

// A reason travels with the status: the caller of a service that refused
// a request before any work reads the reason back from the status, and
// through the coded error it wraps that answer in.
func TestReasonTravelsWithTheStatus(t *testing.T) {
	refused := &apperr.Error{Code: apperr.Unavailable, Message: "turned away", Reason: apperr.ReasonNotProcessed}
	wire := apperr.Status(fmt.Errorf("charging: %w", refused))
	if got := status.Code(wire); got != codes.Unavailable {
		t.Fatalf("code = %v, want Unavailable", got)
	}
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"the error itself", refused, apperr.ReasonNotProcessed},
		{"its status", wire, apperr.ReasonNotProcessed},
		{"the status passed on by the next hop", apperr.FromGRPC(wire, "charging"), apperr.ReasonNotProcessed},
		{"a plain Unavailable", apperr.Status(apperr.New(apperr.Unavailable, "down")), ""},
		{"a status from another domain", status.New(codes.Unavailable, "x").Err(), ""},
		{"no error", nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := apperr.ReasonOf(tt.err); got != tt.want {
				t.Errorf("ReasonOf = %q, want %q", got, tt.want)
			}
		})
	}
	other, _ := status.New(codes.Unavailable, "x").WithDetails(&errdetails.ErrorInfo{Reason: apperr.ReasonNotProcessed, Domain: "elsewhere"})
	if got := apperr.ReasonOf(other.Err()); got != "" {
		t.Errorf("ReasonOf(another domain's reason) = %q, want none", got)
	}
	if got := apperr.Public(wire); got != "turned away" {
		t.Errorf("Public = %q: the reason must not change the public message", got)
	}
}
