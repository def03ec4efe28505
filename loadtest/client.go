package loadtest

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// headerAttempts carries, on the answer a retrying client finally got, how
// many times it sent the request. It never leaves the load generator.
const headerAttempts = "Mercado-Client-Attempts"

// retryTransport is a client that tries again — the same request, so the
// same Idempotency-Key — when the answer says "not now" (502, 503, 504,
// 429) or none came, up to retries more times, waiting a jittered backoff
// between tries. Every try comes out of the client's one timeout: the
// client's patience covers them all, as a real app's does.
type retryTransport struct {
	base    http.RoundTripper
	retries int
	backoff time.Duration
}

func (t retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
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
		resp, err := t.base.RoundTrip(try)
		if attempt > t.retries || !retryable(resp, err) || req.Context().Err() != nil {
			if resp != nil {
				resp.Header.Set(headerAttempts, strconv.Itoa(attempt))
			}
			return resp, err
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		// Full jitter: a crowd of clients that failed together must not
		// come back together.
		wait := time.Duration(rand.Int64N(int64(t.backoff) + 1))
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-time.After(wait):
		}
	}
}

func retryable(resp *http.Response, err error) bool {
	if err != nil {
		return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
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
