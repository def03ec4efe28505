// Package timing records how each downstream hop of a request went (its
// effective timeout, how long it took, how it ended) and carries those
// records back to the edge, where they become a Server-Timing header.
package timing

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Hop is one downstream call as the caller saw it.
type Hop struct {
	// Name is the dependency: "orders", "catalog", "payments", "shipping".
	Name string
	// Timeout is the call's effective timeout; zero when unbounded.
	Timeout time.Duration
	// Took is how long the call lasted; zero when it was skipped.
	Took time.Duration
	// Outcome is how it ended (ok, timeout, budget_exhausted, skipped ...).
	Outcome string
}

// Recorder collects the hops of one request. Its zero value is ready to
// use and it is safe for concurrent use.
type Recorder struct {
	mu   sync.Mutex
	hops []Hop
}

// Add records h.
func (r *Recorder) Add(h Hop) {
	r.mu.Lock()
	r.hops = append(r.hops, h)
	r.mu.Unlock()
}

// Hops returns the hops recorded so far, in order.
func (r *Recorder) Hops() []Hop {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Hop(nil), r.hops...)
}

type recorderKey struct{}

// WithRecorder returns ctx carrying a new Recorder, and the Recorder.
func WithRecorder(ctx context.Context) (context.Context, *Recorder) {
	r := &Recorder{}
	return context.WithValue(ctx, recorderKey{}, r), r
}

// FromContext returns the Recorder in ctx, or nil.
func FromContext(ctx context.Context) *Recorder {
	r, _ := ctx.Value(recorderKey{}).(*Recorder)
	return r
}

// MetadataKey is the gRPC trailer that carries hops back to the caller.
const MetadataKey = "server-timing"

// Format writes hops as a Server-Timing header value:
//
//	catalog;dur=280.4;desc="ok";timeout=300, payments;dur=760.1;desc="ok";timeout=800
//
// dur and desc are the standard parameters; timeout (the effective timeout
// in ms, left out when unbounded) is Mercado's extension, which the header's
// grammar allows and browsers ignore.
func Format(hops []Hop) string {
	var b strings.Builder
	for i, h := range hops {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s;dur=%.1f", h.Name, ms(h.Took))
		if h.Outcome != "" {
			fmt.Fprintf(&b, ";desc=%q", h.Outcome)
		}
		if h.Timeout > 0 {
			fmt.Fprintf(&b, ";timeout=%d", h.Timeout.Milliseconds())
		}
	}
	return b.String()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Parse reads a Server-Timing value written by Format. Unknown parameters
// are ignored; a metric without a dur counts as zero.
func Parse(value string) ([]Hop, error) {
	var hops []Hop
	for _, metric := range strings.Split(value, ",") {
		metric = strings.TrimSpace(metric)
		if metric == "" {
			continue
		}
		params := strings.Split(metric, ";")
		h := Hop{Name: strings.TrimSpace(params[0])}
		for _, p := range params[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			switch k {
			case "dur":
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return nil, fmt.Errorf("server-timing %q: dur: %w", h.Name, err)
				}
				h.Took = time.Duration(math.Round(f * float64(time.Millisecond)))
			case "desc":
				if u, err := strconv.Unquote(v); err == nil {
					v = u
				}
				h.Outcome = v
			case "timeout":
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("server-timing %q: timeout: %w", h.Name, err)
				}
				h.Timeout = time.Duration(n) * time.Millisecond
			}
		}
		hops = append(hops, h)
	}
	return hops, nil
}
