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

// A good answer whose JSON names degraded parts counts as degraded; an
// answer with an empty list, none, or a failure does not. The share is of
// the good answers, and a check can name it.
func TestDegradedAnswersAreCounted(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) % 4 {
		case 0:
			_, _ = w.Write([]byte(`{"status":"confirmed","degraded":["delivery_estimate"]}`))
		case 1:
			_, _ = w.Write([]byte(`{"status":"confirmed","degraded":[]}`))
		case 2:
			_, _ = w.Write([]byte(`{"status":"confirmed"}`))
		case 3:
			w.WriteHeader(http.StatusGatewayTimeout)
			_, _ = w.Write([]byte(`{"degraded":["delivery_estimate"]}`))
		}
	}))
	defer srv.Close()
	out, err := Run(context.Background(), Options{Base: srv.URL, Duration: time.Second}, Class{
		Name: "checkout", Rate: 40, Deadline: 5 * time.Second,
		Request: func(base string, _ uint64) vegeta.Target { return vegeta.Target{Method: http.MethodGet, URL: base} },
	})
	if err != nil {
		t.Fatal(err)
	}
	samples := out["checkout"]
	s := Summarize("checkout", samples, 5*time.Second, time.Second)
	degraded := 0
	for _, x := range samples {
		if x.Degraded {
			degraded++
			if x.Failure != "" || x.Code != http.StatusOK {
				t.Errorf("a failed answer (%d) counted as degraded", x.Code)
			}
		}
	}
	if s.Degraded != degraded || degraded == 0 || s.Degraded > s.Good/3+1 {
		t.Errorf("Degraded = %d of %d good (samples say %d); want about one in three good answers", s.Degraded, s.Good, degraded)
	}
	if got := Figures["degraded"](s); got != float64(s.Degraded)/float64(s.Good) {
		t.Errorf("figure degraded = %v, want %d/%d", got, s.Degraded, s.Good)
	}
}
