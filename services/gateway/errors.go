package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"google.golang.org/grpc/codes"

	"github.com/mercado-lab/mercado/internal/apperr"
	"github.com/mercado-lab/mercado/internal/problem"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// httpStatuses is the one table from the services' gRPC codes to HTTP
// statuses. A code not listed is the upstream's fault: 502.
var httpStatuses = map[codes.Code]int{
	codes.InvalidArgument:    http.StatusBadRequest,
	codes.NotFound:           http.StatusNotFound,
	codes.FailedPrecondition: http.StatusConflict,
	codes.AlreadyExists:      http.StatusConflict,
	codes.Aborted:            http.StatusConflict,
	codes.DeadlineExceeded:   http.StatusGatewayTimeout,
	codes.Canceled:           http.StatusGatewayTimeout,
	codes.Unavailable:        http.StatusServiceUnavailable,
	codes.ResourceExhausted:  http.StatusServiceUnavailable,
}

// retryAfter is what a 503 tells the client to wait.
const retryAfter = time.Second

// writeUpstreamError answers r with the HTTP form of a call's error: the
// status its gRPC code maps to, and its public message as the detail
// (apperr.Public: what the services said, never the text of a broken
// connection or of a status gRPC made itself). override replaces the
// status of particular codes for one route.
func writeUpstreamError(w http.ResponseWriter, r *http.Request, err error, override map[codes.Code]int) {
	c := apperr.GRPCCode(err)
	code, ok := override[c]
	if !ok {
		code, ok = httpStatuses[c]
	}
	if !ok {
		problem.Write(w, r, http.StatusBadGateway, "an upstream service failed")
		return
	}
	detail := apperr.Public(err)
	if detail == "" {
		detail = http.StatusText(code)
	}
	if code == http.StatusServiceUnavailable {
		problem.WriteRetry(w, r, code, detail, retryAfter)
		return
	}
	problem.Write(w, r, code, detail)
}

// rejectDeadline answers a request whose X-Deadline-Ms or X-Request-Class
// cannot be read.
func rejectDeadline(w http.ResponseWriter, r *http.Request, err error) {
	if cerr := (*deadline.ClassError)(nil); errors.As(err, &cerr) {
		problem.Write(w, r, http.StatusBadRequest, fmt.Sprintf("invalid %s header: %q is not %s, %s or %s",
			deadline.HeaderClass, truncate(cerr.Value, 32), deadline.Interactive, deadline.Background, deadline.Batch))
		return
	}
	reason := "unreadable"
	if herr := (*deadline.HeaderError)(nil); errors.As(err, &herr) {
		reason = herr.Reason
	}
	problem.Write(w, r, http.StatusBadRequest, "invalid "+deadline.HeaderDeadline+" deadline header: "+reason)
}

// truncate cuts s to at most n bytes, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// routedMethods are the methods the public routes use.
var routedMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// methodNotAllowed answers a request for a route that exists with another
// method: 405, with the Allow header RFC 9110 asks for.
func methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	if rctx := chi.RouteContext(r.Context()); rctx != nil && rctx.Routes != nil {
		var allow []string
		for _, m := range routedMethods {
			if rctx.Routes.Match(chi.NewRouteContext(), m, r.URL.Path) {
				allow = append(allow, m)
			}
		}
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
		}
	}
	problem.Write(w, r, http.StatusMethodNotAllowed, r.Method+" is not allowed here")
}
