package deadline

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Header names. Both carry a relative duration in whole milliseconds.
const (
	// HeaderDeadline carries the remaining budget of an HTTP request.
	HeaderDeadline = "X-Deadline-Ms"
	// HeaderClientDeadline carries the passive client deadline: how long
	// the original client is still waiting. It never changes behaviour.
	HeaderClientDeadline = "X-Client-Deadline-Ms"
)

// maxDigits bounds the header's length: ten digits is already more than
// a hundred days, and every such value is capped anyway.
const maxDigits = 10

// ErrBadHeader is wrapped by every error of [ParseMillis].
var ErrBadHeader = errors.New("deadline: bad deadline header")

// HeaderError is the error of a deadline header value that cannot be
// read; it matches [ErrBadHeader].
type HeaderError struct {
	// Reason says what is wrong with the value ("more than 10 digits").
	Reason string
}

func (e *HeaderError) Error() string { return ErrBadHeader.Error() + ": " + e.Reason }

// Unwrap makes a header error match ErrBadHeader.
func (e *HeaderError) Unwrap() error { return ErrBadHeader }

// ParseMillis parses a deadline header value strictly: 1 to 10 ASCII
// digits, no sign, no spaces, no unit, and not zero. It never panics. Its
// errors are *HeaderError.
func ParseMillis(s string) (time.Duration, error) {
	if s == "" {
		return 0, &HeaderError{Reason: "empty value"}
	}
	if len(s) > maxDigits {
		return 0, &HeaderError{Reason: fmt.Sprintf("more than %d digits", maxDigits)}
	}
	var ms int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, &HeaderError{Reason: fmt.Sprintf("%q is not a whole number of milliseconds", s)}
		}
		ms = ms*10 + int64(c-'0')
	}
	if ms == 0 {
		return 0, &HeaderError{Reason: "must be at least 1 ms"}
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// FormatMillis formats d for a deadline header, in whole milliseconds,
// rounded down and never below zero.
func FormatMillis(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return strconv.FormatInt(int64(d/time.Millisecond), 10)
}

// SetHeaders writes the remaining budget of ctx, and the passive client
// deadline when ctx carries one, onto an outbound HTTP request's headers.
func SetHeaders(ctx context.Context, h http.Header) {
	if rem, ok := Remaining(ctx); ok {
		h.Set(HeaderDeadline, FormatMillis(rem))
	}
	if cd, ok := ClientDeadline(ctx); ok {
		h.Set(HeaderClientDeadline, FormatMillis(time.Until(cd)))
	}
}

// Transport is an http.RoundTripper that propagates the request context's
// budget (see [SetHeaders]) to the server it calls.
type Transport struct {
	// Base makes the actual round trip; nil means http.DefaultTransport.
	Base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	r = r.Clone(r.Context())
	SetHeaders(r.Context(), r.Header)
	return base.RoundTrip(r)
}
