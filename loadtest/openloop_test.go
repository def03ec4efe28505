package loadtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// TestGeneratorIsOpenLoop: the server stalls every request for the first
// second. A closed-loop generator would send nothing while it waits and
// record only the stall of the few requests in flight; an open-loop one
// keeps sending on schedule, so the requests sent during the stall record
// the time they queued, and the achieved rate stays the offered rate.
func TestGeneratorIsOpenLoop(t *testing.T) {
	var stallUntil atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if until := time.Unix(0, stallUntil.Load()); time.Now().Before(until) {
			time.Sleep(time.Until(until))
		}
	}))
	defer srv.Close()
	stallUntil.Store(time.Now().Add(time.Second).UnixNano())

	const rate, seconds = 50.0, 2
	out, err := Run(context.Background(), Options{Base: srv.URL, Duration: seconds * time.Second}, Class{
		Name: "stall", Rate: rate, Deadline: 5 * time.Second,
		Request: func(base string, _ uint64) vegeta.Target {
			return vegeta.Target{Method: http.MethodGet, URL: base}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	samples := out["stall"]
	// Offered: 100 requests. (Nearly) all were sent, not just the few a
	// closed loop would fit around the stall; the bound leaves room for a
	// pacer slowed by a busy machine.
	if want := int(rate * seconds); len(samples) < want*9/10 {
		t.Fatalf("sent %d requests, want the offered %d", len(samples), want)
	}
	// The first request waited the whole stall; the one scheduled half way
	// through it waited about half; after the stall, requests are fast.
	if first := samples[0].Latency; first < 900*time.Millisecond {
		t.Errorf("first request: %v, want about the 1 s stall", first)
	}
	mid := samples[int(rate/2)]
	if mid.Latency < 300*time.Millisecond || mid.Latency > 800*time.Millisecond {
		t.Errorf("request scheduled at 0.5 s: %v, want about 0.5 s of queueing", mid.Latency)
	}
	// Send times follow the schedule during the stall: the generator did
	// not wait for answers.
	if lag := mid.Sent.Sub(mid.Intended); lag > 300*time.Millisecond {
		t.Errorf("request scheduled at 0.5 s was sent %v late", lag)
	}
}
