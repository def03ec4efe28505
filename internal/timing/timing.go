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

	"github.com/mercado-lab/mercado/pkg/deadline"
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
	// Start is when the call began, as an offset from the start of the
	// request at the server that recorded it (see Recorder.End): two calls
	// made at once start at the same offset, two in series one after the
	// other's end. HasStart reports that it is known, even when it rounds
	// to 0.0 ms: a call made as the request arrived.
	Start    time.Duration
	HasStart bool
	// Rem is what was left of the client's deadline when the call began:
	// the budget the hop had to fit in, whether the mode honoured it or
	// not (naive and fragile ignore it; it is negative once the deadline
	// has passed). HasRem reports that it is known: a request with no
	// client deadline has none.
	Rem    time.Duration
	HasRem bool
}

// Recorder collects the hops of one request. It is safe for concurrent
// use. Its zero value is ready to use, but knows no start: End leaves the
// hops' Start at zero.
type Recorder struct {
	begin time.Time // the request's start, at this server

	mu   sync.Mutex
	hops []Hop
}

// Add records h as it is: a hop reported by another server, whose Start
// is that server's offset.
func (r *Recorder) Add(h Hop) {
	r.mu.Lock()
	r.hops = append(r.hops, h)
	r.mu.Unlock()
}

// End records h, a call of this server's that ends now: its Start is
// when it began (now − h.Took), as an offset from the recorder's
// creation.
func (r *Recorder) End(h Hop) {
	if !r.begin.IsZero() {
		h.Start, h.HasStart = max(time.Since(r.begin)-h.Took, 0), true
	}
	r.Add(h)
}

// Hops returns the hops recorded so far, in order.
func (r *Recorder) Hops() []Hop {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Hop(nil), r.hops...)
}

// EndCall records h in ctx's Recorder, if it has one, as End does, with
// what was left of the client's deadline in ctx when the call began:
// the hop's remaining budget on arrival. The call's caller measures it,
// at the moment it makes the call, so that every mode reports it alike.
func EndCall(ctx context.Context, h Hop) {
	r := FromContext(ctx)
	if r == nil {
		return
	}
	if cd, ok := deadline.ClientDeadline(ctx); ok {
		h.Rem, h.HasRem = time.Until(cd)+h.Took, true
	}
	r.End(h)
}

type recorderKey struct{}

// recorderRoom is how many hops a new Recorder has room for before its
// list must grow: those of a checkout (orders' calls, with a retry or two,
// or the gateway's call and the hops orders reports back), so that
// recording them allocates nothing call by call.
const recorderRoom = 8

// WithRecorder returns ctx carrying a new Recorder, and the Recorder,
// whose hops' start offsets count from now.
func WithRecorder(ctx context.Context) (context.Context, *Recorder) {
	r := &Recorder{begin: time.Now(), hops: make([]Hop, 0, recorderRoom)}
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
//	catalog;dur=280.4;desc="ok";timeout=300;rem=1199.6, payments;dur=760.1;desc="ok";timeout=800;start=280.9;rem=918.7
//
// dur and desc are the standard parameters; timeout (the effective timeout
// in ms, left out when unbounded), start (the start offset in ms, left
// out when unknown) and rem (the remaining budget on arrival in ms, left out
// when unknown) are Mercado's extensions, which the header's grammar
// allows and browsers ignore.
func Format(hops []Hop) string {
	b := make([]byte, 0, 64*len(hops))
	for i, h := range hops {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, h.Name...)
		b = append(b, ";dur="...)
		b = strconv.AppendFloat(b, ms(h.Took), 'f', 1, 64)
		if h.Outcome != "" {
			b = append(b, ";desc="...)
			b = strconv.AppendQuote(b, h.Outcome)
		}
		if h.Timeout > 0 {
			b = append(b, ";timeout="...)
			b = strconv.AppendInt(b, h.Timeout.Milliseconds(), 10)
		}
		if h.Start > 0 || h.HasStart {
			b = append(b, ";start="...)
			b = strconv.AppendFloat(b, ms(h.Start), 'f', 1, 64)
		}
		if h.HasRem {
			b = append(b, ";rem="...)
			b = strconv.AppendFloat(b, ms(h.Rem), 'f', 1, 64)
		}
	}
	return string(b)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Parse reads a Server-Timing value written by Format. Unknown parameters
// are ignored; a metric without a dur counts as zero.
func Parse(value string) ([]Hop, error) {
	hops := make([]Hop, 0, strings.Count(value, ",")+1)
	for metric := range strings.SplitSeq(value, ",") {
		metric = strings.TrimSpace(metric)
		if metric == "" {
			continue
		}
		name, params, _ := strings.Cut(metric, ";")
		h := Hop{Name: strings.TrimSpace(name)}
		for p := range strings.SplitSeq(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			switch k {
			case "dur":
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return nil, fmt.Errorf("server-timing %q: dur: %w", h.Name, err)
				}
				h.Took = time.Duration(math.Round(f * float64(time.Millisecond)))
			case "start":
				f, err := strconv.ParseFloat(v, 64)
				if err != nil || f < 0 {
					return nil, fmt.Errorf("server-timing %q: start: %q is not a non-negative number", h.Name, v)
				}
				h.Start, h.HasStart = time.Duration(math.Round(f*float64(time.Millisecond))), true
			case "rem":
				f, err := strconv.ParseFloat(v, 64)
				if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
					return nil, fmt.Errorf("server-timing %q: rem: %q is not a number", h.Name, v)
				}
				h.Rem, h.HasRem = time.Duration(math.Round(f*float64(time.Millisecond))), true
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
