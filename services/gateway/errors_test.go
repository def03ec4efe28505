package gateway

import (
	"net/http"
	"testing"
)

// A 5xx passes on what the services said was being done, and none of a
// broken connection's or a gRPC status's own text.
func TestPublicDetail(t *testing.T) {
	for _, tc := range []struct {
		name string
		code int
		msg  string
		want string
	}{
		{"a service's refusal", http.StatusBadRequest, "items[0].qty must be 1 to 1000, got 0", "items[0].qty must be 1 to 1000, got 0"},
		{"a 4xx naming odd input is passed on whole", http.StatusUnprocessableEntity, `unknown sku "transport"`, `unknown sku "transport"`},
		{"a service's own 503", http.StatusServiceUnavailable, "simulated failure (fault error-rate)", "simulated failure (fault error-rate)"},
		{"a connection error", http.StatusServiceUnavailable,
			`connection error: desc = "transport: Error while dialing: dial tcp 10.0.0.7:8081: connect: connection refused"`,
			"a service the shop depends on could not be reached; try again later"},
		{"a status nested in a service's message", http.StatusGatewayTimeout,
			"order ord_1: booking the shipment: deadline: call timed out at its own cap: rpc error: code = DeadlineExceeded desc = context deadline exceeded",
			"order ord_1: booking the shipment: deadline: call timed out at its own cap: the request ran out of time"},
		{"a message size refusal", http.StatusServiceUnavailable, "grpc: received message larger than max (2000000 vs. 1048576)",
			"a service the shop depends on could not be reached; try again later"},
		{"no message", http.StatusGatewayTimeout, "", "the request ran out of time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := publicDetail(tc.code, tc.msg); got != tc.want {
				t.Errorf("publicDetail(%d, %q) = %q, want %q", tc.code, tc.msg, got, tc.want)
			}
		})
	}
}
