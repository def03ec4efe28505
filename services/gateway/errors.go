package gateway

import (
	"net/http"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mercado-lab/mercado/internal/problem"
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
	if code == http.StatusServiceUnavailable {
		problem.WriteRetry(w, r, code, s.Message(), retryAfter)
		return
	}
	problem.Write(w, r, code, s.Message())
}
