package deadline_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mercado-lab/mercado/pkg/deadline"
)

func TestEdgeOptionsBudget(t *testing.T) {
	tests := []struct {
		name    string
		opts    deadline.EdgeOptions
		header  string
		want    time.Duration
		wantErr bool
	}{
		{name: "zero options, no header: default", header: "", want: deadline.DefaultBudget},
		{name: "zero options, in range", header: "250", want: 250 * ms},
		{name: "zero options, forged huge value capped", header: "99999999", want: deadline.DefaultMaxBudget},
		{name: "zero options, exactly the max", header: "10000", want: 10 * time.Second},
		{name: "custom default", opts: deadline.EdgeOptions{Default: 800 * ms}, want: 800 * ms},
		{name: "custom max caps", opts: deadline.EdgeOptions{Max: 2 * time.Second}, header: "5000", want: 2 * time.Second},
		{name: "default above max is capped", opts: deadline.EdgeOptions{Default: 5 * time.Second, Max: 2 * time.Second}, want: 2 * time.Second},
		{name: "negative settings mean the defaults", opts: deadline.EdgeOptions{Default: -1, Max: -1}, header: "99999999", want: deadline.DefaultMaxBudget},
		{name: "garbage", header: "abc", wantErr: true},
		{name: "zero", header: "0", wantErr: true},
		{name: "unit", header: "5ms", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.opts.Budget(tt.header)
			if tt.wantErr {
				if !errors.Is(err, deadline.ErrBadHeader) {
					t.Fatalf("Budget(%q) = %v, %v; want ErrBadHeader", tt.header, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Budget(%q) = %v, %v; want %v, nil", tt.header, got, err, tt.want)
			}
		})
	}
}

// edgeSeen is what a handler behind Edge observed.
type edgeSeen struct {
	called       bool
	left         time.Duration
	hasDeadline  bool
	clientLeft   time.Duration
	hasClient    bool
	deadlineTime time.Time
}

// serveEdge sends one request with the given X-Deadline-Ms header ("" for
// none) through Edge(o) to a handler that sleeps for work and records what
// it saw. Run it inside a synctest bubble: time stands still until the
// handler sleeps, so the remaining budget is exact.
func serveEdge(o deadline.EdgeOptions, header string, work time.Duration) (*httptest.ResponseRecorder, edgeSeen) {
	var seen edgeSeen
	h := deadline.Edge(o)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		seen.called = true
		seen.left, seen.hasDeadline = deadline.Remaining(ctx)
		seen.deadlineTime, _ = ctx.Deadline()
		cd, ok := deadline.ClientDeadline(ctx)
		seen.hasClient = ok
		seen.clientLeft = time.Until(cd)
		time.Sleep(work)
		w.WriteHeader(http.StatusNoContent)
	}))
	r := httptest.NewRequest(http.MethodGet, "/checkout", nil)
	if header != "" {
		r.Header.Set(deadline.HeaderDeadline, header)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w, seen
}

func TestEdgeStampsBudget(t *testing.T) {
	tests := []struct {
		name   string
		opts   deadline.EdgeOptions
		header string
		want   time.Duration
	}{
		{name: "default budget", want: deadline.DefaultBudget},
		{name: "client's budget", header: "250", want: 250 * ms},
		{name: "forged budget capped", header: "99999999", want: deadline.DefaultMaxBudget},
		{name: "stamp func says yes", opts: deadline.EdgeOptions{Stamp: func(context.Context) bool { return true }}, header: "250", want: 250 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w, seen := serveEdge(tt.opts, tt.header, 0)
				if w.Code != http.StatusNoContent {
					t.Fatalf("status = %d; want %d", w.Code, http.StatusNoContent)
				}
				if !seen.hasDeadline || seen.left != tt.want {
					t.Errorf("handler saw deadline %v (present %v); want %v", seen.left, seen.hasDeadline, tt.want)
				}
				if !seen.hasClient || seen.clientLeft != tt.want {
					t.Errorf("handler saw client deadline %v (present %v); want %v", seen.clientLeft, seen.hasClient, tt.want)
				}
			})
		})
	}
}

// Outside a bubble, with the real clock: the stamped deadline is within a
// generous bound of the budget.
func TestEdgeStampsBudgetRealClock(t *testing.T) {
	before := time.Now()
	_, seen := serveEdge(deadline.EdgeOptions{}, "5000", 0)
	after := time.Now()
	if !seen.hasDeadline {
		t.Fatal("handler saw no deadline")
	}
	if seen.deadlineTime.Before(before.Add(5*time.Second)) || seen.deadlineTime.After(after.Add(5*time.Second)) {
		t.Errorf("deadline %v not within [%v, %v] + 5s", seen.deadlineTime, before, after)
	}
	if seen.left <= 4*time.Second || seen.left > 5*time.Second {
		t.Errorf("remaining = %v; want in (4s, 5s]", seen.left)
	}
}

func TestEdgeNoStamp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := deadline.EdgeOptions{Stamp: func(context.Context) bool { return false }}
		w, seen := serveEdge(o, "250", 0)
		if w.Code != http.StatusNoContent {
			t.Fatalf("status = %d; want %d", w.Code, http.StatusNoContent)
		}
		if seen.hasDeadline {
			t.Errorf("handler saw a deadline (%v left); want none when Stamp is false", seen.left)
		}
		if !seen.hasClient || seen.clientLeft != 250*ms {
			t.Errorf("handler saw client deadline %v (present %v); want 250ms", seen.clientLeft, seen.hasClient)
		}
	})
}

func TestEdgeBadHeader(t *testing.T) {
	for _, header := range []string{"abc", "-5", "0", "5ms", "12345678901"} {
		t.Run(header, func(t *testing.T) {
			w, seen := serveEdge(deadline.EdgeOptions{}, header, 0)
			if seen.called {
				t.Error("handler was called for a bad header")
			}
			if w.Code != http.StatusBadRequest {
				t.Errorf("status = %d; want 400", w.Code)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type = %q; want application/problem+json", ct)
			}
			var body struct {
				Type   string `json:"type"`
				Title  string `json:"title"`
				Status int    `json:"status"`
				Detail string `json:"detail"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q is not JSON: %v", w.Body, err)
			}
			if body.Status != http.StatusBadRequest || body.Title != "Bad Request" || body.Type != "about:blank" {
				t.Errorf("problem = %+v; want status 400, title Bad Request, type about:blank", body)
			}
			if !strings.Contains(body.Detail, "bad deadline header") {
				t.Errorf("detail = %q; want it to explain the bad header", body.Detail)
			}
		})
	}
}

func TestEdgeCustomReject(t *testing.T) {
	var gotErr error
	o := deadline.EdgeOptions{Reject: func(w http.ResponseWriter, r *http.Request, err error) {
		gotErr = err
		http.Error(w, "no", http.StatusTeapot)
	}}
	w, seen := serveEdge(o, "abc", 0)
	if seen.called {
		t.Error("handler was called for a bad header")
	}
	if w.Code != http.StatusTeapot {
		t.Errorf("status = %d; want the custom Reject's %d", w.Code, http.StatusTeapot)
	}
	if !errors.Is(gotErr, deadline.ErrBadHeader) {
		t.Errorf("Reject got err %v; want ErrBadHeader", gotErr)
	}
}

func TestEdgeHooks(t *testing.T) {
	tests := []struct {
		name     string
		stamp    bool
		header   string
		work     time.Duration
		wantLate time.Duration // zero: OnLate must not run
	}{
		{name: "on time", stamp: true, header: "250", work: 100 * ms},
		{name: "finishes exactly at the deadline", stamp: true, header: "250", work: 250 * ms},
		{name: "late with a budget", stamp: true, header: "250", work: 400 * ms, wantLate: 150 * ms},
		{name: "late without a budget", stamp: false, header: "250", work: 400 * ms, wantLate: 150 * ms},
		{name: "late against the default budget", stamp: false, work: 1500 * ms, wantLate: 300 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var arrivals []deadline.ArrivalInfo
				var lates []deadline.LateInfo
				o := deadline.EdgeOptions{
					Stamp: func(context.Context) bool { return tt.stamp },
					Hooks: deadline.Hooks{
						OnArrival: func(_ context.Context, a deadline.ArrivalInfo) { arrivals = append(arrivals, a) },
						OnLate:    func(_ context.Context, l deadline.LateInfo) { lates = append(lates, l) },
					},
				}
				want, _ := o.Budget(tt.header)
				serveEdge(o, tt.header, tt.work)
				wantArrival := deadline.ArrivalInfo{Method: "http", Class: deadline.Interactive, HasBudget: true, Remaining: want}
				if len(arrivals) != 1 || arrivals[0] != wantArrival {
					t.Errorf("OnArrival got %+v; want one %+v", arrivals, wantArrival)
				}
				switch {
				case tt.wantLate == 0 && len(lates) != 0:
					t.Errorf("OnLate got %+v; want no call", lates)
				case tt.wantLate != 0 && (len(lates) != 1 || lates[0] != deadline.LateInfo{Method: "http", Late: tt.wantLate}):
					t.Errorf("OnLate got %+v; want one with Late %v", lates, tt.wantLate)
				}
			})
		})
	}
}

// With the real clock the budget stamped by Edge really cancels the
// request's context, with cause ErrBudgetExhausted.
func TestEdgeBudgetCancels(t *testing.T) {
	var cause error
	h := deadline.Edge(deadline.EdgeOptions{})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			cause = context.Cause(r.Context())
		case <-time.After(2 * time.Second):
		}
	}))
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set(deadline.HeaderDeadline, "50")
	start := time.Now()
	h.ServeHTTP(httptest.NewRecorder(), r)
	if took := time.Since(start); took >= time.Second {
		t.Errorf("handler ran %v; want the 50ms budget to cut it short", took)
	}
	if cause != deadline.ErrBudgetExhausted {
		t.Errorf("context.Cause = %v; want ErrBudgetExhausted", cause)
	}
}
