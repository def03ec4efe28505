package loadtest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/mercado-lab/mercado/pkg/deadline"
)

// Class is one kind of traffic.
type Class struct {
	// Name labels the class in results ("checkout", "browse" ...).
	Name string
	// Rate is requests per second, sent open-loop, on average.
	Rate float64
	// Arrivals is how the requests arrive (constant when zero), drawn
	// from Seed.
	Arrivals Arrivals
	Seed     uint64
	// Deadline is the client's deadline, sent as X-Deadline-Ms: an answer
	// after it does not count as good.
	Deadline time.Duration
	// Patience is how long the client waits before hanging up; zero means
	// at the deadline, as a mobile app does. A lab may wait longer to
	// measure how late the late answers are.
	Patience time.Duration
	// Retries is how many more times the client sends a request that got
	// no answer or a 502/503/504/429 — the same request, so a checkout
	// keeps its Idempotency-Key — waiting up to RetryBackoff (jittered)
	// between tries, all within its patience.
	Retries      int
	RetryBackoff time.Duration
	// BudgetAware makes a retrying client wait at least an answer's
	// Retry-After, and make no try that could not start before its
	// deadline; otherwise it retries blind.
	BudgetAware bool
	// AttemptTimeout, when set, is how long a retrying client waits for
	// one try before it gives up on it and tries again.
	AttemptTimeout time.Duration
	// Request builds the seq-th request (0, 1, ...) against base. It is
	// called from many goroutines at once.
	Request func(base string, seq uint64) vegeta.Target
}

// Sample is one request's result.
type Sample struct {
	Class string
	Seq   uint64
	// Intended is when the schedule said to send it; Sent when it went.
	Intended, Sent time.Time
	// Latency runs from Intended to the end of the answer.
	Latency time.Duration
	// Code is the HTTP status, 0 when no answer came.
	Code int
	// Failure classifies a request that did not succeed ("" when it did).
	Failure string
	// Attempts is how many times the client sent it (more than 1 when it
	// retried).
	Attempts int
	// Degraded marks a successful answer that names parts of itself
	// holding a default value instead of a dependency's answer (its JSON
	// "degraded" list is not empty).
	Degraded bool
	// OrderID is the order a checkout's 202 processing named: the shop
	// took the checkout but did not know its outcome yet. Confirmed
	// reports that the order was confirmed by the end of the run (the
	// runner reads it through GET /api/orders/{id}); an unconfirmed 202 is
	// not a good checkout.
	OrderID   string
	Confirmed bool
}

// Good reports a final answer in time: a success within deadline, and for
// a 202 processing, one whose order was confirmed later.
func (s Sample) Good(deadline time.Duration) bool {
	return s.Failure == "" && s.Latency <= deadline && (s.Code != http.StatusAccepted || s.Confirmed)
}

// Failure classes.
const (
	FailDeadline  = "deadline"     // 504, or the client gave up at its deadline
	FailBreaker   = "breaker"      // 503 from an open circuit breaker
	FailBulkhead  = "bulkhead"     // 503 from a full bulkhead or pool
	FailUnavail   = "unavailable"  // other 503s
	FailBudget    = "budget_floor" // 504 because too little budget was left to try
	FailClient    = "4xx"
	FailServer    = "5xx"
	FailTransport = "transport"
)

// Options configure Run.
type Options struct {
	// Base is the gateway's base URL.
	Base string
	// Duration is how long to send for.
	Duration time.Duration
	// OnSample, if set, sees every sample as it arrives (progress, live
	// charts), timed from the schedule as far as it is known by then. It
	// is called from one goroutine per class.
	OnSample func(Sample)
}

// Run sends every class at its rate for the duration and returns all the
// samples, each class in send order.
func Run(ctx context.Context, o Options, classes ...Class) (map[string][]Sample, error) {
	if o.Duration <= 0 {
		return nil, errors.New("loadtest: duration must be positive")
	}
	out := make(map[string][]Sample, len(classes))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range classes {
		if c.Rate <= 0 || c.Request == nil {
			return nil, fmt.Errorf("loadtest: class %q needs a positive rate and a request", c.Name)
		}
		// The client's patience (the deadline when unset) is its HTTP
		// client's timeout: what bounds the run against a shop that
		// never answers, as the fragile one may not.
		if c.Deadline <= 0 || c.Patience < 0 {
			return nil, fmt.Errorf("loadtest: class %q needs a positive deadline and a patience not below zero", c.Name)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			samples := runClass(ctx, o, c)
			mu.Lock()
			out[c.Name] = samples
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out, ctx.Err()
}

func runClass(ctx context.Context, o Options, c Class) []Sample {
	due := c.Arrivals.schedule(c.Rate, o.Duration, c.Seed)
	patience := c.Patience
	if patience <= 0 {
		patience = c.Deadline
	}
	var transport http.RoundTripper = &http.Transport{
		MaxIdleConnsPerHost: 1000,
		IdleConnTimeout:     30 * time.Second,
	}
	if c.Retries > 0 {
		transport = retryTransport{base: transport, retries: c.Retries, backoff: c.RetryBackoff, perTry: c.AttemptTimeout,
			aware: c.BudgetAware, deadline: c.Deadline}
	}
	client := &http.Client{Timeout: patience, Transport: transport}
	defer client.CloseIdleConnections()
	atk := vegeta.NewAttacker(vegeta.Client(client), vegeta.Workers(16), vegeta.MaxBody(64<<10))
	stop := context.AfterFunc(ctx, func() { atk.Stop() })
	defer stop()

	var seq atomic.Uint64
	targeter := func(t *vegeta.Target) error {
		*t = c.Request(o.Base, seq.Add(1)-1)
		if t.Header == nil {
			t.Header = http.Header{}
		}
		t.Header.Set(deadline.HeaderDeadline, strconv.FormatInt(c.Deadline.Milliseconds(), 10))
		return nil
	}
	var samples []Sample
	var began time.Time
	for r := range atk.Attack(targeter, schedulePacer(due), o.Duration, c.Name) {
		if began.IsZero() || r.Timestamp.Add(-due[r.Seq]).Before(began) {
			// The schedule's origin: the earliest send time less its
			// place in the schedule.
			began = r.Timestamp.Add(-due[r.Seq])
		}
		s := Sample{Class: c.Name, Seq: r.Seq, Sent: r.Timestamp, Code: int(r.Code), Latency: r.Latency, Attempts: attempts(r.Headers)}
		s.Failure = classify(r)
		s.Degraded = s.Failure == "" && degraded(r.Body)
		if s.Code == http.StatusAccepted {
			s.OrderID = acceptedOrder(r)
		}
		samples = append(samples, s)
		if o.OnSample != nil {
			o.OnSample(s.fromSchedule(began, due))
		}
	}
	slices.SortFunc(samples, func(a, b Sample) int { return cmp.Compare(a.Seq, b.Seq) })
	for i := range samples {
		samples[i] = samples[i].fromSchedule(began, due)
	}
	return samples
}

// schedulePacer sends the i-th request when the schedule says, due[i]
// after the start, at once when late, and no more than the schedule has.
type schedulePacer []time.Duration

// Pace implements vegeta.Pacer.
func (due schedulePacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	if hits >= uint64(len(due)) {
		return 0, true
	}
	return due[hits] - elapsed, false
}

// Rate implements vegeta.Pacer: the schedule's average rate.
func (due schedulePacer) Rate(time.Duration) float64 {
	if len(due) < 2 {
		return 0
	}
	return float64(len(due)-1) / (due[len(due)-1] - due[0]).Seconds()
}

// fromSchedule is s, whose Latency runs from its send, timed from when
// the schedule that began at began meant to send it instead (due[Seq]
// after it).
func (s Sample) fromSchedule(began time.Time, due []time.Duration) Sample {
	s.Intended = began.Add(due[s.Seq])
	s.Latency = s.Sent.Add(s.Latency).Sub(s.Intended)
	return s
}

// degraded reports an answer whose JSON body has a non-empty "degraded"
// list. The load generator reads the public API's JSON, nothing of the
// services' code.
func degraded(body []byte) bool {
	if !bytes.Contains(body, []byte(`"degraded"`)) {
		return false
	}
	var a struct {
		Degraded []string `json:"degraded"`
	}
	return json.Unmarshal(body, &a) == nil && len(a.Degraded) > 0
}

// acceptedOrder is the order a 202 processing answer names: its Location
// (/api/orders/{id}), or its body's order_id.
func acceptedOrder(r *vegeta.Result) string {
	if id, ok := strings.CutPrefix(r.Headers.Get("Location"), "/api/orders/"); ok && id != "" {
		return id
	}
	var p struct {
		OrderID string `json:"order_id"`
	}
	if json.Unmarshal(r.Body, &p) == nil {
		return p.OrderID
	}
	return ""
}

// classify names why a request failed, from its status and problem body.
func classify(r *vegeta.Result) string {
	body := strings.ToLower(string(r.Body))
	switch {
	case r.Code >= 200 && r.Code < 300:
		return ""
	case r.Code == 0 && (strings.Contains(r.Error, "Client.Timeout") || strings.Contains(r.Error, "context deadline exceeded")):
		return FailDeadline
	case r.Code == 0:
		return FailTransport
	case r.Code == http.StatusGatewayTimeout && strings.Contains(body, "insufficient budget"):
		return FailBudget
	case r.Code == http.StatusGatewayTimeout:
		return FailDeadline
	case r.Code == http.StatusServiceUnavailable && strings.Contains(body, "breaker"):
		return FailBreaker
	case r.Code == http.StatusServiceUnavailable && (strings.Contains(body, "bulkhead") || strings.Contains(body, "busy")):
		return FailBulkhead
	case r.Code == http.StatusServiceUnavailable:
		return FailUnavail
	case r.Code >= 400 && r.Code < 500:
		return FailClient
	}
	return FailServer
}
