// Package apperr is the one error type of Mercado's services: an error
// with a code that says what went wrong in the domain's terms, mapped to a
// gRPC status by one table, and a public message kept apart from its
// cause.
//
// An Error's Message is public: it says, in the shop's words, what was
// wrong with the request or what was being done, and a client may read it.
// Its cause, Err, is for the log and for errors.Is and errors.As: a
// driver's error, a dial error, anything. [Public] composes what a client
// may read of a whole chain; [Status] sends it along with the error, as
// the status's google.rpc.LocalizedMessage (the detail Google's API
// design guide keeps for a message that is safe to show the user), so
// that the next hop, and finally the gateway, knows what to show without
// reading the status's text.
package apperr

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"

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
	Code Code
	// Message is public: what was wrong, or what was being done, in words
	// a client may read.
	Message string
	// Err is the cause, for the log; a client never reads its text.
	Err error
	// Reason, when set, names the error for the programs that receive it
	// (such as ReasonNotProcessed); it travels as the status's
	// google.rpc.ErrorInfo (see [Status] and [ReasonOf]).
	Reason string
}

// ReasonNotProcessed is the reason of a refusal made before any work: the
// request changed nothing, so a retry cannot do anything twice. A caller
// that sees it knows, for that attempt, the outcome that a plain
// Unavailable leaves unknown (the request may have been lost after it
// was done).
const ReasonNotProcessed = "NOT_PROCESSED"

// reasonDomain is the ErrorInfo domain of Mercado's reasons.
const reasonDomain = "mercado"

// Error is the whole chain, cause included, for the log.
func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// GRPCCode is the gRPC code e maps to (GRPCCode), for the code that reads
// it without importing this package (retry's policies).
func (e *Error) GRPCCode() codes.Code { return GRPCCode(e) }

// New returns an error with code and a formatted public message.
func New(code Code, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an error with code, a public message, and err as its cause.
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
		errors.Is(err, deadline.ErrServerCap),
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

// Status converts err to a gRPC status error for a handler to return:
// its code, the whole chain as the status's message (for whoever reads
// the logs of the calling service), and [Public] of err as the public
// message. Internal errors are reported without their detail.
func Status(err error) error {
	if err == nil {
		return nil
	}
	c := GRPCCode(err)
	if c == codes.Internal {
		return PublicStatus(c, "internal error", "internal error").Err()
	}
	var details []protoadapt.MessageV1
	var e *Error
	if errors.As(err, &e) && e.Reason != "" {
		details = append(details, &errdetails.ErrorInfo{Reason: e.Reason, Domain: reasonDomain})
	}
	return PublicStatus(c, err.Error(), Public(err), details...).Err()
}

// ReasonOf returns the reason err carries: the first Reason along its
// chain, or the ErrorInfo reason of the status it carries (a dependency's
// answer passed on); "" when there is none.
func ReasonOf(err error) string {
	for err != nil {
		switch e := err.(type) {
		case *Error:
			if e.Reason != "" {
				return e.Reason
			}
		case interface{ GRPCStatus() *status.Status }:
			for _, d := range e.GRPCStatus().Details() {
				if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == reasonDomain {
					return info.GetReason()
				}
			}
			return ""
		}
		err = errors.Unwrap(err)
	}
	return ""
}

// PublicStatus returns a status of code and message that carries public
// as its public message (a LocalizedMessage detail), and details after it.
func PublicStatus(code codes.Code, message, public string, details ...protoadapt.MessageV1) *status.Status {
	st := status.New(code, message)
	all := append([]protoadapt.MessageV1{&errdetails.LocalizedMessage{Locale: "en-US", Message: public}}, details...)
	if withDetails, err := st.WithDetails(all...); err == nil {
		return withDetails
	}
	return st // a detail that cannot be encoded: the status without any
}

// Public returns what of err a client may read. It joins with ": " the
// public messages along err's chain:
//
//   - each Error's Message;
//   - the message of an error that has one of its own (a mechanism's
//     rejection, a database failure told in the shop's words: see
//     [PublicMessager]);
//   - the deadline's own errors: a call skipped for lack of budget, a call
//     cut at its cap or by the caller's budget, a request refused on
//     arrival;
//   - a dependency's public message, from the status it answered.
//
// A cause with nothing public to say — a broken connection, a status made
// by gRPC itself, a bare context error — gives way to a phrase for what
// happened: "a service the shop depends on could not be reached; try
// again later", or "the request ran out of time". Any other cause adds
// nothing. Public never reads an error's text to decide.
func Public(err error) string {
	var parts []string
	say := func(s string) {
		if s != "" {
			parts = append(parts, s)
		}
	}
	for err != nil {
		var next error
		switch e := err.(type) {
		case *Error:
			say(e.Message)
			next = e.Err
		case PublicMessager:
			say(e.PublicMessage())
		case *deadline.CallError:
			// The call ended by its own clock, or was never made: that is
			// the story, whatever the dependency said last.
			causes := e.Unwrap()
			say(causes[0].Error())
			if len(causes) > 1 {
				say(phrase(codes.DeadlineExceeded))
			}
		case *deadline.AdmissionError:
			say(e.Error())
		case interface{ GRPCStatus() *status.Status }:
			st := e.GRPCStatus()
			if msg, ok := publicOf(st); ok {
				say(msg)
			} else {
				say(phrase(st.Code()))
			}
		default:
			switch {
			case err == deadline.ErrInsufficientBudget, err == deadline.ErrCallTimeout, err == deadline.ErrBudgetExhausted,
				err == deadline.ErrServerCap:
				say(err.Error())
			case err == context.DeadlineExceeded:
				say(phrase(codes.DeadlineExceeded))
			case err == context.Canceled:
				say(phrase(codes.Canceled))
			default:
				// A wrapper's own words are not public; what it wraps may be.
				next = errors.Unwrap(err)
			}
		}
		err = next
	}
	return strings.Join(parts, ": ")
}

// PublicMessager is an error whose own message a client may read, apart
// from its cause.
type PublicMessager interface {
	error
	PublicMessage() string
}

// publicOf returns the public message a status carries, if any.
func publicOf(st *status.Status) (string, bool) {
	for _, d := range st.Details() {
		if m, ok := d.(*errdetails.LocalizedMessage); ok {
			return m.GetMessage(), true
		}
	}
	return "", false
}

// phrase is what a client reads for a cause with nothing public to say.
func phrase(c codes.Code) string {
	switch c {
	case codes.Unavailable, codes.ResourceExhausted:
		return "a service the shop depends on could not be reached; try again later"
	case codes.DeadlineExceeded, codes.Canceled:
		return "the request ran out of time"
	}
	return ""
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
