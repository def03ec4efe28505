package loadtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Against a shop that never answers, as the fragile one may not, a run
// ends on time: the generator's client gives up at its patience, and
// each request still unanswered is counted as what it is, no answer by
// the deadline, not waited for.
func TestRunEndsOnTimeAgainstAHungShop(t *testing.T) {
	hung := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hung:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hung) // before srv.Close, which waits for the handlers

	const duration, patience = 500 * time.Millisecond, 300 * time.Millisecond
	start := time.Now()
	out, err := Run(context.Background(), Options{Base: srv.URL, Duration: duration}, Class{
		Name: "hung", Rate: 20, Deadline: 200 * time.Millisecond, Patience: patience,
		Request: func(base string, _ uint64) vegeta.Target {
			return vegeta.Target{Method: http.MethodGet, URL: base}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The last request goes at the end of the run and waits its patience:
	// a second is generous room for a busy machine, and nowhere near
	// forever.
	if took := time.Since(start); took > duration+patience+2*time.Second {
		t.Errorf("the run took %v against a hung shop, want about %v", took, duration+patience)
	}
	samples := out["hung"]
	if len(samples) == 0 {
		t.Fatal("no samples")
	}
	for _, s := range samples {
		if s.Code != 0 || s.Failure != FailDeadline {
			t.Fatalf("a request to the hung shop = code %d, failure %q; want no answer, counted as the deadline missed", s.Code, s.Failure)
		}
	}

	// A class with no deadline would have a client that waits for ever.
	_, err = Run(context.Background(), Options{Base: srv.URL, Duration: duration}, Class{Name: "unbounded", Rate: 1,
		Request: func(base string, _ uint64) vegeta.Target { return vegeta.Target{Method: http.MethodGet, URL: base} }})
	if err == nil || !strings.Contains(err.Error(), "positive deadline") {
		t.Errorf("a class with no deadline: %v, want it refused", err)
	}
}

// A scenario's deadline and patience are bounded, so the generator's
// client is too.
func TestScenarioBoundsTheClientsWait(t *testing.T) {
	base := "name: x\nclasses: {checkout: {rate: 10}}\nphases: [{name: calm, duration: 1s}]\n"
	for extra, want := range map[string]string{
		"deadline: 0s":                "deadline 0s is outside (0, 1h]",
		"deadline: 2h":                "deadline 2h0m0s is outside (0, 1h]",
		"deadline: 1s\npatience: -1s": "patience -1s is outside 0 to 1h",
		"deadline: 1s\npatience: 3h":  "patience 3h0m0s is outside 0 to 1h",
	} {
		_, err := ParseScenario([]byte(base + extra + "\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error containing %q", extra, err, want)
		}
	}
}
