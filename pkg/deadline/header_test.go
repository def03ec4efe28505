package deadline_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mercado-lab/mercado/pkg/deadline"
)

func TestParseMillis(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{in: "1", want: ms},
		{in: "250", want: 250 * ms},
		{in: "0250", want: 250 * ms},
		{in: "99999999", want: 99999999 * ms},
		{in: "9999999999", want: 9999999999 * ms}, // ten digits: the longest accepted
		{in: "", wantErr: true},
		{in: "0", wantErr: true},
		{in: "0000000000", wantErr: true},
		{in: "abc", wantErr: true},
		{in: "-5", wantErr: true},
		{in: "+5", wantErr: true},
		{in: " 5", wantErr: true},
		{in: "5 ", wantErr: true},
		{in: "5ms", wantErr: true},
		{in: "1.5", wantErr: true},
		{in: "1e3", wantErr: true},
		{in: "0x10", wantErr: true},
		{in: "٣", wantErr: true}, // a non-ASCII digit
		{in: "12345678901", wantErr: true},
		{in: "99999999999999999999999999", wantErr: true}, // would overflow int64
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := deadline.ParseMillis(tt.in)
			if tt.wantErr {
				if !errors.Is(err, deadline.ErrBadHeader) {
					t.Fatalf("ParseMillis(%q) = %v, %v; want an error wrapping ErrBadHeader", tt.in, got, err)
				}
				if got != 0 {
					t.Errorf("ParseMillis(%q) = %v with an error; want 0", tt.in, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseMillis(%q) = %v, %v; want %v, nil", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestFormatMillis(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0"},
		{-5 * ms, "0"},
		{999 * time.Microsecond, "0"},
		{1999 * time.Microsecond, "1"}, // rounded down
		{250 * ms, "250"},
		{10 * time.Second, "10000"},
	}
	for _, tt := range tests {
		t.Run(tt.in.String(), func(t *testing.T) {
			if got := deadline.FormatMillis(tt.in); got != tt.want {
				t.Errorf("FormatMillis(%v) = %q; want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestFormatParseRoundTrip(t *testing.T) {
	for _, d := range []time.Duration{ms, 160 * ms, 1200 * ms, 10 * time.Second} {
		got, err := deadline.ParseMillis(deadline.FormatMillis(d))
		if err != nil || got != d {
			t.Errorf("ParseMillis(FormatMillis(%v)) = %v, %v", d, got, err)
		}
	}
}

func TestSetHeaders(t *testing.T) {
	tests := []struct {
		name           string
		left           time.Duration // zero: no deadline
		clientLeft     time.Duration // zero: no client deadline
		wantDeadline   string        // "" means absent
		wantClientLeft string
	}{
		{name: "nothing to send"},
		{name: "budget only", left: 250 * ms, wantDeadline: "250"},
		{name: "client deadline only", clientLeft: 900 * ms, wantClientLeft: "900"},
		{name: "both", left: 250 * ms, clientLeft: 900 * ms, wantDeadline: "250", wantClientLeft: "900"},
		{name: "passed deadlines send zero", left: -5 * ms, clientLeft: -5 * ms, wantDeadline: "0", wantClientLeft: "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				if tt.left != 0 {
					ctx = withLeft(t, tt.left)
				}
				if tt.clientLeft != 0 {
					ctx = deadline.WithClientDeadline(ctx, time.Now().Add(tt.clientLeft))
				}
				h := http.Header{}
				deadline.SetHeaders(ctx, h)
				checkHeader(t, h, deadline.HeaderDeadline, tt.wantDeadline)
				checkHeader(t, h, deadline.HeaderClientDeadline, tt.wantClientLeft)
			})
		})
	}
}

func checkHeader(t *testing.T, h http.Header, name, want string) {
	t.Helper()
	got, present := h[http.CanonicalHeaderKey(name)]
	switch {
	case want == "" && present:
		t.Errorf("header %s = %q; want it absent", name, got)
	case want != "" && (len(got) != 1 || got[0] != want):
		t.Errorf("header %s = %q; want [%q]", name, got, want)
	}
}

func TestTransport(t *testing.T) {
	type seen struct{ deadline, client string }
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Header.Get(deadline.HeaderDeadline), r.Header.Get(deadline.HeaderClientDeadline)}
	}))
	defer srv.Close()

	tests := []struct {
		name       string
		base       http.RoundTripper
		budget     time.Duration // zero: no deadline
		clientLeft time.Duration // zero: no client deadline
	}{
		{name: "default base, nothing to send"},
		{name: "default base, budget and client deadline", budget: 5 * time.Second, clientLeft: 8 * time.Second},
		{name: "explicit base, budget only", base: srv.Client().Transport, budget: 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.budget != 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.budget)
				defer cancel()
			}
			if tt.clientLeft != 0 {
				ctx = deadline.WithClientDeadline(ctx, time.Now().Add(tt.clientLeft))
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			client := &http.Client{Transport: deadline.Transport{Base: tt.base}}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("Do() error = %v", err)
			}
			resp.Body.Close()
			s := <-got
			checkSentMillis(t, deadline.HeaderDeadline, s.deadline, tt.budget)
			checkSentMillis(t, deadline.HeaderClientDeadline, s.client, tt.clientLeft)
			if len(req.Header) != 0 {
				t.Errorf("RoundTrip modified the caller's request headers: %v", req.Header)
			}
		})
	}
}

// checkSentMillis checks that a header received by a server is absent when
// max is zero, and otherwise at most max and no more than a generous
// second below it.
func checkSentMillis(t *testing.T, name, value string, max time.Duration) {
	t.Helper()
	if max == 0 {
		if value != "" {
			t.Errorf("server got %s = %q; want it absent", name, value)
		}
		return
	}
	d, err := deadline.ParseMillis(value)
	if err != nil {
		t.Fatalf("server got %s = %q: %v", name, value, err)
	}
	if d > max || d < max-time.Second {
		t.Errorf("server got %s = %v; want in (%v, %v]", name, d, max-time.Second, max)
	}
}
