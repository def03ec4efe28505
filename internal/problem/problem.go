// Package problem writes RFC 9457 problem details
// (application/problem+json), the one error format of Mercado's HTTP APIs.
package problem

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// ContentType is the media type of a problem document.
const ContentType = "application/problem+json"

// Details is an RFC 9457 problem document.
type Details struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Instance is the request path the problem is about.
	Instance string `json:"instance,omitempty"`
}

// Write answers r with status and detail. A 503 also tells the client
// when to try again (Retry-After) when retryAfter is positive.
func Write(w http.ResponseWriter, r *http.Request, status int, detail string) {
	WriteRetry(w, r, status, detail, 0)
}

// WriteRetry is Write with a Retry-After header when retryAfter > 0.
func WriteRetry(w http.ResponseWriter, r *http.Request, status int, detail string, retryAfter time.Duration) {
	if retryAfter > 0 {
		secs := int((retryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	d := Details{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail}
	if r != nil {
		d.Instance = r.URL.Path
	}
	_ = json.NewEncoder(w).Encode(d)
}
