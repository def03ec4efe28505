package loadtest

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// headerAttempts carries, on the answer a retrying client finally got, how
// many times it sent the request. It never leaves the load generator.
const headerAttempts = "Mercado-Client-Attempts"

// retryTransport is a client that tries again — the same request, so the
// same Idempotency-Key — when the answer says "not now" (502, 503, 504,
// 429) or none came (within perTry, when set), up to retries more times,
// waiting a jittered backoff between tries. Every try comes out of the
// client's one timeout: its patience covers them all, as a real app's does.
//
// A budget-aware client (aware) retries as the budgeted services do: it
// waits at least what an answer's Retry-After asks, and it makes no try
// that could not start before its deadline, since an answer after the
// deadline is worth nothing. A blind one (the naive client) ignores both.
type retryTransport struct {
	base    http.RoundTripper
	retries int
	backoff time.Duration
	// perTry, when set, is how long the client waits for one try before
	// giving it up and trying again.
	perTry time.Duration
	// aware makes the client budget-aware, within deadline.
	aware    bool
	deadline time.Duration
}

func (t retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	for attempt := 1; ; attempt++ {
		try := req
		if attempt > 1 {
			try = req.Clone(req.Context())
			if req.GetBody != nil {
				body, err := req.GetBody()
				if err != nil {
					return nil, err
				}
				try.Body = body
			}
		}
		cancel := context.CancelFunc(func() {})
		if t.perTry > 0 {
			var ctx context.Context
			ctx, cancel = context.WithTimeout(req.Context(), t.perTry)
			try = try.WithContext(ctx)
		}
		resp, err := t.base.RoundTrip(try)
		wait, again := t.next(start, resp, err)
		if attempt > t.retries || !again || req.Context().Err() != nil {
			if resp != nil {
				resp.Header.Set(headerAttempts, strconv.Itoa(attempt))
				// The try's context must outlive the reading of its body.
				resp.Body = cancelOnClose{resp.Body, cancel}
			} else {
				cancel()
			}
			return resp, err
		}
		cancel()
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-time.After(wait):
		}
	}
}

// next decides whether a try that ended with resp or err is made again,
// and after how long: full jitter (a crowd of clients that failed together
// must not come back together) and, for a budget-aware client, at least
// the answer's Retry-After, and only if the next try would start before
// the deadline.
func (t retryTransport) next(start time.Time, resp *http.Response, err error) (time.Duration, bool) {
	if !retryable(resp, err) {
		return 0, false
	}
	wait := time.Duration(rand.Int64N(int64(t.backoff) + 1))
	if !t.aware {
		return wait, true
	}
	if resp != nil {
		wait = max(wait, retryAfter(resp.Header))
	}
	return wait, time.Since(start)+wait < t.deadline
}

// retryAfter reads an answer's Retry-After in seconds (RFC 9110); 0 when
// there is none or it is a date.
func retryAfter(h http.Header) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After")))
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// cancelOnClose ends a try's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// retryable reports an answer worth trying again: none (the try timed
// out, or the connection failed), or one that says "not now". Whether the
// client as a whole has run out of patience is checked by the caller.
func retryable(resp *http.Response, err error) bool {
	if err != nil {
		return !errors.Is(err, context.Canceled)
	}
	switch resp.StatusCode {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout, http.StatusTooManyRequests:
		return true
	}
	return false
}

// attempts reads how many times a retrying client sent a request (1 when
// it did not retry, or did not say).
func attempts(h http.Header) int {
	if n, err := strconv.Atoi(h.Get(headerAttempts)); err == nil && n > 0 {
		return n
	}
	return 1
}
