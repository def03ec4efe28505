package gateway

import (
	"fmt"
	"strings"
)

// MaxIdempotencyKey is the longest Idempotency-Key accepted.
const MaxIdempotencyKey = 255

// parseIdempotencyKey reads an Idempotency-Key header value: a Structured
// Field string ("…", as the IETF httpapi draft specifies) or, leniently, a
// bare token. It returns the key without quotes.
func parseIdempotencyKey(v string) (string, error) {
	if strings.HasPrefix(v, `"`) {
		if len(v) < 2 || !strings.HasSuffix(v, `"`) {
			return "", fmt.Errorf("Idempotency-Key: unterminated string")
		}
		v = v[1 : len(v)-1]
		if strings.ContainsAny(v, `"\`) {
			return "", fmt.Errorf("Idempotency-Key: escapes are not accepted")
		}
		for i := 0; i < len(v); i++ {
			if v[i] < 0x20 || v[i] > 0x7e {
				return "", fmt.Errorf("Idempotency-Key: only printable ASCII is accepted")
			}
		}
	} else {
		for i := 0; i < len(v); i++ {
			if !isTokenChar(v[i]) {
				// The value is not echoed back: it is the client's, and may be
				// anything up to the header limit.
				return "", fmt.Errorf("Idempotency-Key is neither a quoted string nor a token")
			}
		}
	}
	switch {
	case v == "":
		return "", fmt.Errorf("Idempotency-Key is required: send a unique key per checkout, and the same key when retrying it")
	case len(v) > MaxIdempotencyKey:
		return "", fmt.Errorf("Idempotency-Key: longer than %d characters", MaxIdempotencyKey)
	}
	return v, nil
}

func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~:/", c) >= 0
}
