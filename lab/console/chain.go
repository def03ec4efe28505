package console

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/problem"
	"github.com/mercado-lab/mercado/internal/timing"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// Checkout is one traced checkout: how the client saw it, and each hop
// as the shop reported it in Server-Timing.
type Checkout struct {
	// N numbers the console's traced checkouts, from 1.
	N int `json:"n"`
	// At is when it was sent, Unix milliseconds.
	At         int64 `json:"at"`
	DeadlineMS int64 `json:"deadline_ms"`
	// Status is the HTTP status, 0 when no answer came (Error says why).
	Status int `json:"status"`
	// Result is "good" (a success within the deadline), "late" (a
	// success after it), "processing" (202: the shop took it but does
	// not know the outcome yet) or "failed".
	Result string  `json:"result"`
	TookMS float64 `json:"took_ms"`
	Hops   []Hop   `json:"hops"`
	Error  string  `json:"error,omitempty"`
	// Mode is the gateway's mode when it was sent ("" when the gateway
	// did not say). Carried tells whether that mode carries the client's
	// deadline into the shop (the edge deadline and each call clipped to
	// it): otherwise each hop waits for its own timeout, and a hop's
	// RemMS is only what was left of the client's deadline, negative
	// once the client has given up.
	Mode    mode.Mode `json:"mode,omitempty"`
	Carried bool      `json:"carried"`
	// Why says, in words, why a checkout got no answer or was refused.
	Why string `json:"why,omitempty"`
}

// Hop is one call of a traced checkout, from its Server-Timing metric.
type Hop struct {
	Name    string  `json:"name"`
	Outcome string  `json:"outcome"`
	TookMS  float64 `json:"took_ms"`
	StartMS float64 `json:"start_ms"`
	// TimeoutMS is the call's effective timeout, 0 when unbounded.
	TimeoutMS float64 `json:"timeout_ms"`
	// RemMS is the remaining budget on arrival, when HasRem.
	RemMS  float64 `json:"rem_ms"`
	HasRem bool    `json:"has_rem"`
}

// chain makes the traced checkouts and keeps the recent ones.
type chain struct {
	gateway string
	hub     *hub
	prefix  string
	// modeOf reads the gateway's mode.
	modeOf func(context.Context) (admin.ModeView, error)

	mu   sync.Mutex
	n    int
	last []Checkout
}

// keep is how many traced checkouts the chain view lists.
const keep = 12

// checkoutBody is the traced checkout's order: one coffee, as the load
// generator's.
var checkoutBody = []byte(`{"customer":"console","items":[{"sku":"coffee-arabica","qty":1}],"address":"1 Console Street"}`)

func newChain(gateway string, h *hub, modeOf func(context.Context) (admin.ModeView, error)) *chain {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return &chain{gateway: gateway, hub: h, modeOf: modeOf, prefix: "console-trace-" + hex.EncodeToString(b)}
}

// patience is how long past its deadline a traced checkout's client
// waits, to show how late a late answer was.
const patience = 5 * time.Second

// checkout sends one checkout with the deadline, keeps it and tells the
// pages.
func (c *chain) checkout(ctx context.Context, dl time.Duration) (Checkout, error) {
	c.mu.Lock()
	c.n++
	co := Checkout{N: c.n, DeadlineMS: dl.Milliseconds(), Hops: []Hop{}}
	c.mu.Unlock()

	if v, err := c.modeOf(ctx); err == nil {
		co.Mode, co.Carried = v.Mode, v.Mechanisms.EdgeDeadline && v.Mechanisms.ClipToBudget
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.gateway+"/api/checkout", bytes.NewReader(checkoutBody))
	if err != nil {
		return co, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", fmt.Sprintf("%s-%d", c.prefix, co.N))
	req.Header.Set(deadline.HeaderDeadline, strconv.FormatInt(dl.Milliseconds(), 10))
	start := time.Now()
	co.At = start.UnixMilli()
	resp, err := (&http.Client{Timeout: dl + patience}).Do(req)
	var body []byte
	if err == nil {
		body, _ = io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}
	co.TookMS = msOf(time.Since(start))
	switch {
	case err != nil:
		co.Result, co.Error, co.Why = "failed", err.Error(), unanswered(err, dl)
	default:
		co.Status = resp.StatusCode
		if resp.StatusCode >= 400 {
			co.Why = refusal(resp.StatusCode, body)
		}
		co.Result = result(resp.StatusCode, time.Since(start), dl)
		hops, perr := timing.Parse(resp.Header.Get("Server-Timing"))
		if perr != nil {
			co.Error = perr.Error()
		}
		for _, h := range hops {
			co.Hops = append(co.Hops, Hop{Name: h.Name, Outcome: h.Outcome, TookMS: msOf(h.Took), StartMS: msOf(h.Start),
				TimeoutMS: msOf(h.Timeout), RemMS: msOf(h.Rem), HasRem: h.HasRem})
		}
	}
	c.mu.Lock()
	c.last = append(c.last, co)
	if len(c.last) > keep {
		c.last = c.last[len(c.last)-keep:]
	}
	c.mu.Unlock()
	c.hub.publish("checkout", co)
	return co, nil
}

// unanswered says why a checkout got no answer: the client gave up, or
// the shop did not let it in.
func unanswered(err error, dl time.Duration) string {
	var nerr net.Error
	switch {
	case errors.As(err, &nerr) && nerr.Timeout():
		return fmt.Sprintf("no answer: the client gave up %v after its %v deadline", patience, dl)
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF):
		return "refused at the door: the gateway did not take the connection"
	}
	return "no answer: " + err.Error()
}

// refusal says why the shop answered status: its problem document's
// detail when it sent one.
func refusal(status int, body []byte) string {
	var p struct {
		Detail string `json:"detail"`
	}
	why := http.StatusText(status)
	if json.Unmarshal(body, &p) == nil && p.Detail != "" {
		why += ": " + p.Detail
	}
	return why
}

// result names how a checkout that answered status after took went.
func result(status int, took, dl time.Duration) string {
	switch {
	case status == http.StatusAccepted:
		return "processing"
	case status >= 200 && status < 300 && took <= dl:
		return "good"
	case status >= 200 && status < 300:
		return "late"
	}
	return "failed"
}

// recent are the kept checkouts, oldest first.
func (c *chain) recent() []Checkout {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Checkout{}, c.last...)
}

// CheckoutRequest is the body of POST /console/api/checkout.
type CheckoutRequest struct {
	// DeadlineMS is the checkout's deadline; 0 means a second.
	DeadlineMS int64 `json:"deadline_ms"`
}

func (c *Console) postCheckout(w http.ResponseWriter, r *http.Request) {
	req := CheckoutRequest{}
	if r.ContentLength != 0 && !decode(w, r, &req) {
		return
	}
	if req.DeadlineMS == 0 {
		req.DeadlineMS = defaultDeadline.Milliseconds()
	}
	if req.DeadlineMS < minDeadlineMS || req.DeadlineMS > maxDeadlineMS {
		problem.Write(w, r, http.StatusBadRequest, fmt.Sprintf("deadline_ms must be %d to %d", minDeadlineMS, maxDeadlineMS))
		return
	}
	co, err := c.chain.checkout(r.Context(), time.Duration(req.DeadlineMS)*time.Millisecond)
	if err != nil {
		problem.Write(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, co)
}
