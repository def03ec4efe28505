package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/problem"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// A 5xx passes on what the services said was being done, and none of a
// broken connection's or a gRPC status's own text.
func TestPublicDetail(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		override map[codes.Code]int
		code     int
		want     string
	}{
		{"a service's refusal", serviceStatus(codes.InvalidArgument, "items[0].qty must be 1 to 1000, got 0"), nil,
			http.StatusBadRequest, "items[0].qty must be 1 to 1000, got 0"},
		{"a 4xx naming odd input is passed on whole", serviceStatus(codes.NotFound, `unknown sku "transport"`), checkoutOverrides,
			http.StatusUnprocessableEntity, `unknown sku "transport"`},
		{"a service's own 503", apperr.Status(sim.ErrInjected), nil,
			http.StatusServiceUnavailable, "simulated failure (fault error-rate)"},
		{"a connection error",
			status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 10.0.0.7:8081: connect: connection refused"`), nil,
			http.StatusServiceUnavailable, "a service the shop depends on could not be reached; try again later"},
		{"a status nested in a service's message",
			apperr.Status(&apperr.Error{Code: apperr.Timeout, Message: "order ord_1", Err: apperr.FromGRPC(callCutAtCap(t), "booking the shipment")}), nil,
			http.StatusGatewayTimeout, "order ord_1: booking the shipment: deadline: call timed out at its own cap: the request ran out of time"},
		{"a message size refusal", status.Error(codes.ResourceExhausted, "grpc: received message larger than max (2000000 vs. 1048576)"), nil,
			http.StatusServiceUnavailable, "a service the shop depends on could not be reached; try again later"},
		{"no message", status.Error(codes.DeadlineExceeded, ""), nil, http.StatusGatewayTimeout, "the request ran out of time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			writeUpstreamError(w, httptest.NewRequest(http.MethodGet, "/api/products", nil), tc.err, tc.override)
			var p problem.Details
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
				t.Fatalf("body %q: %v", w.Body, err)
			}
			if w.Code != tc.code || p.Detail != tc.want {
				t.Errorf("answer to %v = %d %q, want %d %q", tc.err, w.Code, p.Detail, tc.code, tc.want)
			}
		})
	}
}

// serviceStatus is a refusal as a Mercado service sends it: its message
// is public.
func serviceStatus(code codes.Code, msg string) error {
	return apperr.PublicStatus(code, msg, msg).Err()
}

// callCutAtCap is the error of a call that its own cap cut short, as the
// deadline interceptor returns it.
func callCutAtCap(t *testing.T) error {
	t.Helper()
	call := deadline.UnaryClientInterceptor(deadline.ClientOptions{Cap: func(string) time.Duration { return time.Millisecond }})
	err := call(context.Background(), "/mercado.shipping.v1.ShippingService/CreateShipment", nil, nil, nil,
		func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
			<-ctx.Done()
			return status.FromContextError(ctx.Err()).Err()
		})
	if err == nil {
		t.Fatal("the capped call succeeded")
	}
	return err
}
