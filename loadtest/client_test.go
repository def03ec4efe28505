package loadtest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// TestClientRetriesWithTheSameKey: a retrying client sends the same
// request again — body and Idempotency-Key — after a 503, stops at the
// first answer that is not "try again", and the sample says how many
// tries it took.
func TestClientRetriesWithTheSameKey(t *testing.T) {
	var mu sync.Mutex
	tries := map[string][]string{} // key -> bodies seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		key := r.Header.Get("Idempotency-Key")
		mu.Lock()
		tries[key] = append(tries[key], string(body))
		n := len(tries[key])
		mu.Unlock()
		switch {
		case r.URL.Path == "/bad":
			w.WriteHeader(http.StatusBadRequest)
		case n < 3:
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusCreated)
		}
	}))
	defer srv.Close()

	class := func(name, path string) Class {
		return Class{Name: name, Rate: 10, Deadline: 2 * time.Second, Retries: 3, RetryBackoff: 5 * time.Millisecond,
			Request: func(base string, seq uint64) vegeta.Target {
				return vegeta.Target{Method: http.MethodPost, URL: base + path, Body: []byte(`{"n":1}`),
					Header: http.Header{"Idempotency-Key": {name + "-" + string(rune('a'+seq))}}}
			}}
	}
	got, err := Run(context.Background(), Options{Base: srv.URL, Duration: 300 * time.Millisecond},
		class("checkout", "/ok"), class("bad", "/bad"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range got["checkout"] {
		if s.Code != http.StatusCreated || s.Attempts != 3 || s.Failure != "" {
			t.Errorf("checkout sample %+v, want 201 after 3 attempts", s)
		}
	}
	for _, s := range got["bad"] {
		if s.Code != http.StatusBadRequest || s.Attempts != 1 {
			t.Errorf("a 400 is final: sample %+v, want 1 attempt", s)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for key, bodies := range tries {
		for _, b := range bodies {
			if b != `{"n":1}` {
				t.Errorf("%s: a retry sent body %q", key, b)
			}
		}
	}
	if sum := Summarize("checkout", got["checkout"], time.Second, time.Second); sum.ClientRetries != 2*len(got["checkout"]) || sum.Good != len(got["checkout"]) {
		t.Errorf("summary %+v: want 2 client retries per checkout, all good", sum)
	}
}

// TestClientRetriesStayWithinPatience: a client that keeps getting 503s
// gives up at its patience, however many retries it had left.
func TestClientRetriesStayWithinPatience(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(40 * time.Millisecond)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	c := Class{Name: "checkout", Rate: 5, Deadline: 150 * time.Millisecond, Retries: 10, RetryBackoff: time.Millisecond,
		Request: func(base string, _ uint64) vegeta.Target { return vegeta.Target{Method: http.MethodGet, URL: base} }}
	got, err := Run(context.Background(), Options{Base: srv.URL, Duration: 500 * time.Millisecond}, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range got["checkout"] {
		if s.Failure != FailDeadline {
			t.Errorf("sample %+v: want the client to give up at its deadline", s)
		}
		// Generous: the schedule may lag on a busy machine.
		if s.Latency > 2*time.Second {
			t.Errorf("sample took %v, far past the client's 150 ms patience", s.Latency)
		}
	}
}

// TestClientGivesUpOnASlowTry: with an attempt timeout, a client that
// hears nothing in time sends the request again rather than waiting out
// its whole patience on the first try.
func TestClientGivesUpOnASlowTry(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		mu.Lock()
		seen[key]++
		n := seen[key]
		mu.Unlock()
		if n == 1 {
			select { // the first try hangs
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	c := Class{Name: "checkout", Rate: 5, Deadline: time.Second, Patience: 4 * time.Second,
		Retries: 2, RetryBackoff: time.Millisecond, AttemptTimeout: 150 * time.Millisecond,
		Request: func(base string, seq uint64) vegeta.Target {
			return vegeta.Target{Method: http.MethodPost, URL: base, Body: []byte(`{}`),
				Header: http.Header{"Idempotency-Key": {"k" + string(rune('a'+seq))}}}
		}}
	got, err := Run(context.Background(), Options{Base: srv.URL, Duration: 500 * time.Millisecond}, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(got["checkout"]) == 0 {
		t.Fatal("no samples")
	}
	for _, s := range got["checkout"] {
		// Generous: a busy machine may lag the schedule.
		if s.Code != http.StatusCreated || s.Attempts != 2 || s.Latency > 2*time.Second {
			t.Errorf("sample %+v: want 201 on the second try, well before the 4 s patience", s)
		}
	}
}

// TestBudgetAwareClientHonoursRetryAfter: a budget-aware client waits the
// Retry-After a 503 asks before trying again, and makes no try that could
// not start before its deadline; a blind one ignores both.
func TestBudgetAwareClientHonoursRetryAfter(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		mu.Lock()
		seen[key]++
		n := seen[key]
		mu.Unlock()
		if r.URL.Path == "/down" || n == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	class := func(name, path string, deadline time.Duration, aware bool) Class {
		return Class{Name: name, Rate: 5, Deadline: deadline, Patience: 4 * time.Second,
			Retries: 2, RetryBackoff: 5 * time.Millisecond, BudgetAware: aware,
			Request: func(base string, seq uint64) vegeta.Target {
				return vegeta.Target{Method: http.MethodPost, URL: base + path, Body: []byte(`{}`),
					Header: http.Header{"Idempotency-Key": {name + string(rune('a'+seq))}}}
			}}
	}
	got, err := Run(context.Background(), Options{Base: srv.URL, Duration: 300 * time.Millisecond},
		class("aware-down", "/down", 500*time.Millisecond, true),
		class("blind-down", "/down", 500*time.Millisecond, false),
		class("aware-once", "/once", 3*time.Second, true),
		class("blind-once", "/once", 3*time.Second, false))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]struct {
		code, attempts int
		min, max       time.Duration // latency; generous, for a busy machine
	}{
		// Retry-After 1 s does not fit a 500 ms deadline: one try.
		"aware-down": {http.StatusServiceUnavailable, 1, 0, 900 * time.Millisecond},
		"blind-down": {http.StatusServiceUnavailable, 3, 0, 900 * time.Millisecond},
		// It fits a 3 s deadline: the second try, after a second.
		"aware-once": {http.StatusCreated, 2, time.Second, 2500 * time.Millisecond},
		"blind-once": {http.StatusCreated, 2, 0, 900 * time.Millisecond},
	} {
		if len(got[name]) == 0 {
			t.Errorf("%s: no samples", name)
		}
		for _, s := range got[name] {
			if s.Code != want.code || s.Attempts != want.attempts || s.Latency < want.min || s.Latency > want.max {
				t.Errorf("%s: sample %d %d tries in %v, want %d after %d tries in %v to %v",
					name, s.Code, s.Attempts, s.Latency, want.code, want.attempts, want.min, want.max)
			}
		}
	}
}

func TestRetryAfter(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"": 0, "1": time.Second, " 30 ": 30 * time.Second, "-1": 0, "soon": 0,
		"Wed, 21 Oct 2015 07:28:00 GMT": 0,
	} {
		if got := retryAfter(http.Header{"Retry-After": {in}}); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}
