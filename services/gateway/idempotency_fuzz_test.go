package gateway

import (
	"strings"
	"testing"
)

// FuzzParseIdempotencyKey checks the Idempotency-Key parser against
// arbitrary header values. Its seed corpus is
// testdata/fuzz/FuzzParseIdempotencyKey; run it with
//
//	go test -run '^$' -fuzz '^FuzzParseIdempotencyKey$' ./services/gateway/
func FuzzParseIdempotencyKey(f *testing.F) {
	f.Fuzz(func(t *testing.T, v string) {
		key, err := parseIdempotencyKey(v)
		if err != nil {
			if key != "" {
				t.Fatalf("parseIdempotencyKey(%q) = %q with error %v; want no key", v, key, err)
			}
			return
		}
		if len(key) < 1 || len(key) > MaxIdempotencyKey {
			t.Fatalf("parseIdempotencyKey(%q) = %q: %d characters, want 1 to %d", v, key, len(key), MaxIdempotencyKey)
		}
		for i := 0; i < len(key); i++ {
			if key[i] < 0x20 || key[i] > 0x7e {
				t.Fatalf("parseIdempotencyKey(%q) = %q: byte %d is %#x, not printable ASCII", v, key, i, key[i])
			}
		}
		if strings.HasPrefix(v, `"`) {
			// A Structured Field string: the key is what is inside the quotes.
			if len(v) < 2 || !strings.HasSuffix(v, `"`) || key != v[1:len(v)-1] {
				t.Fatalf("parseIdempotencyKey(%q) = %q; want the inside of the quotes", v, key)
			}
		} else if key != v {
			t.Fatalf("parseIdempotencyKey(%q) = %q; want the bare token unchanged", v, key)
		}
		// Whichever way a client sent it, the same key sent quoted reads
		// back the same: a retry may switch spelling and still match.
		if again, err := parseIdempotencyKey(`"` + key + `"`); err != nil || again != key {
			t.Fatalf("parseIdempotencyKey(%q) = %q, %v; want %q", `"`+key+`"`, again, err, key)
		}
	})
}
