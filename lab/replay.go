package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/timing"
	"github.com/mercado-lab/mercado/lab/driver"
	"github.com/mercado-lab/mercado/lab/shop"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// What the two replays (lesson 7 and the waterfall) share: a shop warmed
// up before the lesson's faults go in, and one measured checkout.

// checkout is one measured checkout: its status, body, duration as the
// client saw it, and the hops the shop reported in Server-Timing.
type checkout struct {
	status int
	body   []byte
	took   time.Duration
	hops   []timing.Hop
}

// measureCheckout posts body as a checkout with an idempotency key and the
// client's deadline, and measures it.
func measureCheckout(ctx context.Context, client *http.Client, base, key string, deadlineAfter time.Duration, body string) (checkout, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/checkout", strings.NewReader(body))
	if err != nil {
		return checkout{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set(deadline.HeaderDeadline, strconv.FormatInt(deadlineAfter.Milliseconds(), 10))
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return checkout{}, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return checkout{}, err
	}
	c := checkout{status: resp.StatusCode, body: b, took: time.Since(start)}
	c.hops, err = timing.Parse(resp.Header.Get("Server-Timing"))
	return c, err
}

// arrange readies a replay's shop, started without faults: one checkout
// runs through the whole chain first, then the lesson's faults go in.
//
// The warm-up opens every connection the measured checkout will use (the
// gateway's to orders, orders' to catalog, payments and shipping) and runs
// every step of it once. Otherwise the measured checkout would pay for the
// handshakes and the first-use set-up, and pay for some of them in the
// few milliseconds (the margin) that each hop keeps for its answer's way
// back, after its last call has timed out: late there, the answer misses
// its caller's deadline — a 504, and orders' report of its hops lost.
func arrange(ctx context.Context, client *http.Client, s *shop.Shop, key string, lesson map[string]faults.Set) (*driver.Shop, error) {
	d := drive(s)
	c, err := measureCheckout(ctx, client, d.URL(), key, 5*time.Second,
		`{"customer":"warm-up","items":[{"sku":"tea-sencha","qty":1}],"address":"1 Warm-up Way"}`)
	if err != nil {
		return nil, fmt.Errorf("warming up: %w", err)
	}
	if c.status != http.StatusCreated {
		return nil, fmt.Errorf("warming up: the checkout answered HTTP %d: %s", c.status, c.body)
	}
	if err := d.PutFaults(ctx, lesson); err != nil {
		return nil, fmt.Errorf("putting the lesson's faults in: %w", err)
	}
	return d, nil
}

func findHop(hops []timing.Hop, name string) (timing.Hop, bool) {
	for _, h := range hops {
		if h.Name == name {
			return h, true
		}
	}
	return timing.Hop{}, false
}

// lessonOutcome folds pkg/deadline's outcomes into the lesson's four: a
// call cut by its cap and one cut by the budget both timed out.
func lessonOutcome(o string) string {
	switch deadline.Outcome(o) {
	case deadline.OutcomeOK:
		return "ok"
	case deadline.OutcomeTimeout, deadline.OutcomeBudget:
		return "timeout"
	case deadline.OutcomeSkipped:
		return "skipped"
	}
	return "error"
}

// setting is one of a replay's durations, by its flag's name.
type setting struct {
	flag string
	v    time.Duration
}

// checkSettings reports the first setting out of range: each in positive
// must be within (0, 1m], each in others within [0, 1m].
func checkSettings(positive, others []setting) error {
	for _, s := range positive {
		if s.v <= 0 || s.v > time.Minute {
			return fmt.Errorf("%s: %v is outside (0, 1m]", s.flag, s.v)
		}
	}
	for _, s := range others {
		if s.v < 0 || s.v > time.Minute {
			return fmt.Errorf("%s: %v is outside [0, 1m]", s.flag, s.v)
		}
	}
	return nil
}

// writeJSON writes a lab's result as indented JSON, the form of every
// lab's --json.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// clipSum writes out, in the lesson's terms, how the budget set a call's
// timeout when it clipped it: min(cap, deadline − spent − margins) with
// every term measured. A call orders makes keeps back two margins: the
// gateway's, on its call to orders, and orders' own. before is what the
// chain had taken when the call started, as the replay measured it; the
// way there is the rest of what the budget had spent — the request's way
// to orders and orders' own work between calls.
func clipSum(cap, deadline, margin time.Duration, before, timeout int64) string {
	d, m, c := deadline.Milliseconds(), margin.Milliseconds(), cap.Milliseconds()
	way := max(d-2*m-timeout-before, 0)
	return fmt.Sprintf("min(%d, %d − %d before it − %d on the way − 2 × %d margin) = %d ms", c, d, before, way, m, timeout)
}
