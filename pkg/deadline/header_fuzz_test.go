package deadline_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/pkg/deadline"
)

// FuzzParseMillis checks the deadline header parser, and the edge's
// budget built on it, against arbitrary header values and options. Its
// seed corpus is testdata/fuzz/FuzzParseMillis; run it with
//
//	go test -run '^$' -fuzz '^FuzzParseMillis$' ./pkg/deadline/
func FuzzParseMillis(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string, defNs, maxNs int64) {
		d, err := deadline.ParseMillis(s)

		// Oracle: 1 to 10 ASCII digits, not all zero.
		valid := len(s) >= 1 && len(s) <= 10 &&
			strings.Trim(s, "0123456789") == "" && strings.Trim(s, "0") != ""
		if err != nil {
			if valid {
				t.Fatalf("ParseMillis(%q) = %v; want it accepted", s, err)
			}
			if !errors.Is(err, deadline.ErrBadHeader) || d != 0 {
				t.Fatalf("ParseMillis(%q) = %v, %v; want 0 and an error wrapping ErrBadHeader", s, d, err)
			}
		} else {
			if !valid {
				t.Fatalf("ParseMillis(%q) = %v; want it rejected", s, d)
			}
			n, perr := strconv.ParseInt(s, 10, 64)
			if perr != nil || d <= 0 || d != time.Duration(n)*time.Millisecond {
				t.Fatalf("ParseMillis(%q) = %v; want %d ms, above zero", s, d, n)
			}
			// Round trip: formatting gives the canonical spelling (no
			// leading zeros), which parses back to the same duration.
			canon := strings.TrimLeft(s, "0")
			if got := deadline.FormatMillis(d); got != canon {
				t.Fatalf("FormatMillis(ParseMillis(%q)) = %q; want %q", s, got, canon)
			}
			if back, err := deadline.ParseMillis(canon); err != nil || back != d {
				t.Fatalf("ParseMillis(%q) = %v, %v; want %v", canon, back, err, d)
			}
		}

		o := deadline.EdgeOptions{Default: time.Duration(defNs), Max: time.Duration(maxNs)}
		effDef, effMax := o.Default, o.Max
		if effDef <= 0 {
			effDef = deadline.DefaultBudget
		}
		if effMax <= 0 {
			effMax = deadline.DefaultMaxBudget
		}
		b, berr := o.Budget(s)
		if s == "" {
			if berr != nil || b != min(effDef, effMax) {
				t.Fatalf("%+v.Budget(\"\") = %v, %v; want %v", o, b, berr, min(effDef, effMax))
			}
			return
		}
		if (berr == nil) != (err == nil) {
			t.Fatalf("Budget(%q) error %v, but ParseMillis error %v", s, berr, err)
		}
		if berr != nil {
			return
		}
		if b <= 0 || b > effMax || b != min(d, effMax) {
			t.Fatalf("%+v.Budget(%q) = %v; want min(%v, %v), never above the max", o, s, b, d, effMax)
		}
	})
}
