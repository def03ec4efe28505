package orders

import (
	"context"
	"errors"
	"sync/atomic"

	"google.golang.org/grpc"

	"github.com/mercado-lab/mercado/internal/apperr"
)

// A charge that failed may still have taken the money: an attempt that
// timed out, or whose connection broke, may have been done by payments
// before its answer was lost, so such a failure leaves the order
// payment_pending for the reconciler. Nothing was charged only when no
// attempt reached payments except those payments refused before doing
// anything (apperr.ReasonNotProcessed): a call the breaker, the bulkhead
// or the budget stopped never left orders. Such a charge fails the order
// at once, with its stock back and its Idempotency-Key released, and the
// client's retry charges afresh under a new order — the retry a
// refusing dependency invites at every layer (the retry storm).

// sentKey carries one charge's record of its attempts.
type sentKey struct{}

// sent records, for one charge, whether an attempt that left orders
// ended with an outcome payments did not rule out.
type sent struct{ unsure atomic.Bool }

// watchSent returns ctx carrying a fresh record of the attempts made
// under it.
func watchSent(ctx context.Context) (context.Context, *sent) {
	s := &sent{}
	return context.WithValue(ctx, sentKey{}, s), s
}

// recordSent is the last interceptor of orders' calls to payments, after
// the client chain (outbound.go), so it sees each attempt that leaves
// orders — each retry included — and none the chain stopped.
func recordSent(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	if s, ok := ctx.Value(sentKey{}).(*sent); ok && err != nil && apperr.ReasonOf(err) != apperr.ReasonNotProcessed {
		s.unsure.Store(true)
	}
	return err
}

// notCharged is a charge's error when, by its attempts, nothing can
// have been charged. Its code, message and causes are err's.
type notCharged struct{ err error }

func (e notCharged) Error() string { return e.err.Error() }
func (e notCharged) Unwrap() error { return e.err }

// nothingCharged reports a charge error that rules the money out.
func nothingCharged(err error) bool {
	var nc notCharged
	return errors.As(err, &nc)
}
