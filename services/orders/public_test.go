package orders_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/services/orders"
)

// A dependency that cannot be reached fails the checkout with a public
// message in the shop's words: the answer's LocalizedMessage and the
// stored order's failure say which step failed and never repeat the
// connection's text, which names an internal address. The whole text
// stays in the status's message, for the log.
func TestUnreachableDependencyPublicMessage(t *testing.T) {
	s := newShop(t)
	s.catalog.reserveErr = status.Error(codes.Unavailable,
		`connection error: desc = "transport: Error while dialing: dial tcp 10.0.0.7:8082: connect: connection refused"`)
	_, err := orders.GRPCServer(s.svc).PlaceOrder(context.Background(), protoRequest(request()))
	st := status.Convert(err)
	if st.Code() != codes.Unavailable || !strings.Contains(st.Message(), "10.0.0.7") {
		t.Fatalf("answer = %v %q, want Unavailable with the whole chain in its message", st.Code(), st.Message())
	}
	var public string
	for _, d := range st.Details() {
		if m, ok := d.(*errdetails.LocalizedMessage); ok {
			public = m.GetMessage()
		}
	}
	const reached = "reserving stock: a service the shop depends on could not be reached; try again later"
	if !strings.HasPrefix(public, "order ord_") || !strings.HasSuffix(public, ": "+reached) {
		t.Errorf("public message = %q, want the order and %q", public, reached)
	}
	for _, o := range s.store.all() {
		if o.Failure != reached {
			t.Errorf("stored failure = %q, want %q", o.Failure, reached)
		}
	}
	if got := apperr.Public(err); got != public {
		t.Errorf("apperr.Public(answer) = %q, want the LocalizedMessage %q", got, public)
	}
}
