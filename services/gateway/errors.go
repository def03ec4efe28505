package gateway

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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

// writeUpstreamError answers r with the HTTP form of a call's error.
// override replaces the status of particular codes for one route.
func writeUpstreamError(w http.ResponseWriter, r *http.Request, err error, override map[codes.Code]int) {
	s := status.Convert(err)
	code, ok := override[s.Code()]
	if !ok {
		code, ok = httpStatuses[s.Code()]
	}
	if !ok {
		problem.Write(w, r, http.StatusBadGateway, "an upstream service failed")
		return
	}
	detail := publicDetail(code, s.Message())
	if code == http.StatusServiceUnavailable {
		problem.WriteRetry(w, r, code, detail, retryAfter)
		return
	}
	problem.Write(w, r, code, detail)
}

// transportMarks are the fragments gRPC's own transport errors carry
// (addresses, dial errors, status dumps). The services' messages never
// contain them; a message that does came from a connection, not a
// service, and describes the inside of the shop.
var transportMarks = []string{"rpc error:", "grpc:", "desc =", "transport", "dial ", "connection", "tcp ", "EOF", "resolver"}

// genericDetails replace a message that must not reach the client.
var genericDetails = map[int]string{
	http.StatusServiceUnavailable: "a service the shop depends on could not be reached; try again later",
	http.StatusGatewayTimeout:     "the request ran out of time",
}

// publicDetail is the detail the client sees for an upstream message: the
// message as the services wrote it, up to the first piece of a broken
// connection's or a gRPC status's own text in a 5xx, which gives way to a
// generic phrase. ("order …: booking the shipment: rpc error: code = …"
// keeps "order …: booking the shipment".) A 4xx is always a service's own
// refusal of the request, passed on whole.
func publicDetail(code int, msg string) string {
	if code < 500 && msg != "" {
		return msg
	}
	cut := len(msg)
	for _, m := range transportMarks {
		if i := strings.Index(msg, m); i >= 0 && i < cut {
			cut = i
		}
	}
	if cut == len(msg) && msg != "" {
		return msg
	}
	generic, ok := genericDetails[code]
	if !ok {
		generic = http.StatusText(code)
	}
	if prefix := strings.TrimRight(msg[:cut], ": "); prefix != "" {
		return prefix + ": " + generic
	}
	return generic
}

// rejectDeadline answers a request whose X-Deadline-Ms cannot be read.
func rejectDeadline(w http.ResponseWriter, r *http.Request, err error) {
	reason, _ := strings.CutPrefix(err.Error(), deadline.ErrBadHeader.Error()+": ")
	if !errors.Is(err, deadline.ErrBadHeader) {
		reason = "unreadable"
	}
	problem.Write(w, r, http.StatusBadRequest, "invalid "+deadline.HeaderDeadline+" deadline header: "+reason)
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
