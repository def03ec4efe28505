package console

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A checkout that got no answer, or a refusal, says why in words: the
// client gave up, the door was shut, or the shop's own reason.
func TestWhyACheckoutFailed(t *testing.T) {
	timeout := &net.OpError{Op: "read", Err: context.DeadlineExceeded}
	refused := &net.OpError{Op: "dial", Err: fmt.Errorf("connect: %w", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		name, got, want string
	}{
		{"client timeout", unanswered(fmt.Errorf("Post: %w", timeout), time.Second), "the client gave up 5s after its 1s deadline"},
		{"connection refused", unanswered(refused, time.Second), "refused at the door"},
		{"a bulkhead's 503", refusal(http.StatusServiceUnavailable, []byte(`{"status":503,"detail":"checkout bulkhead full"}`)), "Service Unavailable: checkout bulkhead full"},
		{"a bare 502", refusal(http.StatusBadGateway, []byte("oops")), "Bad Gateway"},
	} {
		if !strings.Contains(tc.got, tc.want) {
			t.Errorf("%s: %q, want %q in it", tc.name, tc.got, tc.want)
		}
	}
}
