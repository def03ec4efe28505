// Package apperr is the one error type of Mercado's services: an error
// with a code that says what went wrong in the domain's terms, mapped to a
// gRPC status by one table.
package apperr

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/pkg/deadline"
)

// Code classifies an error.
type Code string

// The codes.
const (
	Invalid     Code = "invalid"     // the request is wrong; retrying will not help
	NotFound    Code = "not_found"   // the thing asked for does not exist
	Conflict    Code = "conflict"    // the state forbids it now (e.g. out of stock)
	Unavailable Code = "unavailable" // a dependency could not be reached
	Timeout     Code = "timeout"     // the budget or a cap ran out
	Internal    Code = "internal"    // a bug or an unexpected failure
)

// Error is a coded error.
type Error struct {
	Code    Code
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an error with code and a formatted message.
func New(code Code, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an error with code, a message, and err as its cause.
func Wrap(code Code, err error, message string) error {
	return &Error{Code: code, Message: message, Err: err}
}

// grpcCodes is the one table from domain codes to gRPC codes.
var grpcCodes = map[Code]codes.Code{
	Invalid:     codes.InvalidArgument,
	NotFound:    codes.NotFound,
	Conflict:    codes.FailedPrecondition,
	Unavailable: codes.Unavailable,
	Timeout:     codes.DeadlineExceeded,
	Internal:    codes.Internal,
}

// GRPCCode returns the gRPC code for err: from its Error code if it has
// one, from a status it carries (a downstream answer passed on), or from
// the context error it wraps.
func GRPCCode(err error) codes.Code {
	var e *Error
	switch {
	case err == nil:
		return codes.OK
	case errors.As(err, &e):
		if c, ok := grpcCodes[e.Code]; ok {
			return c
		}
		return codes.Internal
	case errors.Is(err, deadline.ErrInsufficientBudget),
		errors.Is(err, deadline.ErrCallTimeout),
		errors.Is(err, deadline.ErrBudgetExhausted),
		errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	}
	if s, ok := status.FromError(err); ok {
		return s.Code()
	}
	return codes.Internal
}

// Status converts err to a gRPC status error for a handler to return.
// Internal errors are reported without their detail.
func Status(err error) error {
	if err == nil {
		return nil
	}
	c := GRPCCode(err)
	if c == codes.Internal {
		return status.Error(c, "internal error")
	}
	return status.Error(c, err.Error())
}

// FromGRPC turns a dependency's answer into a coded error, prefixing what
// was being done, so a handler can pass it on with the right code.
func FromGRPC(err error, doing string) error {
	if err == nil {
		return nil
	}
	code := Internal
	switch GRPCCode(err) {
	case codes.InvalidArgument:
		code = Invalid
	case codes.NotFound:
		code = NotFound
	case codes.FailedPrecondition, codes.AlreadyExists, codes.Aborted:
		code = Conflict
	case codes.Unavailable, codes.ResourceExhausted:
		code = Unavailable
	case codes.DeadlineExceeded, codes.Canceled:
		code = Timeout
	}
	return &Error{Code: code, Message: doing, Err: remote{err}}
}

// remote is a dependency's error, printed as the dependency's message
// alone (not "rpc error: code = … desc = …") yet still matching the
// original with errors.Is and errors.As.
type remote struct{ err error }

func (r remote) Error() string {
	if s, ok := status.FromError(r.err); ok {
		return s.Message()
	}
	return r.err.Error()
}

func (r remote) Unwrap() error { return r.err }
