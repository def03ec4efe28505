package resilience

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/telemetry"
)

// Rejection is a call or request turned away by a mechanism before any
// work: a full bulkhead, an open breaker, a budget spent in the queue. It
// carries the gRPC code callers map to HTTP, and wraps the mechanism's
// sentinel (bulkhead.ErrFull, breaker.ErrOpen ...) for errors.Is.
type Rejection struct {
	Code codes.Code
	// Reason is the metric label: bulkhead_full, breaker_open,
	// expired_at_dequeue.
	Reason string
	// Message is public: it names the mechanism and the dependency, which
	// a client may read.
	Message string
	Err     error
}

var _ apperr.PublicMessager = (*Rejection)(nil)

func (r *Rejection) Error() string { return r.Message }

// PublicMessage is Message: a rejection says nothing a client may not read.
func (r *Rejection) PublicMessage() string { return r.Message }

// Unwrap returns the mechanism's error.
func (r *Rejection) Unwrap() error { return r.Err }

// GRPCStatus reports the rejection as a gRPC status whose public message
// is Message.
func (r *Rejection) GRPCStatus() *status.Status {
	return apperr.PublicStatus(r.Code, r.Message, r.Message)
}

// Skip reasons, as metrics label them.
const (
	ReasonBulkheadFull       = telemetry.ReasonBulkheadFull
	ReasonBreakerOpen        = telemetry.ReasonBreakerOpen
	ReasonInsufficientBudget = telemetry.ReasonInsufficientBudget
	ReasonExpiredAtDequeue   = telemetry.ReasonExpiredAtDequeue
)
