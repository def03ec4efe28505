package console

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/mercado-lab/mercado/internal/problem"
	"github.com/mercado-lab/mercado/loadtest"
)

// Rates are the console's traffic: requests per second by class, sent
// open loop by loadtest's generator, and the deadline checkouts and
// browsing carry (X-Deadline-Ms). Exports carry a batch client's two
// minutes.
type Rates struct {
	Checkout   float64 `json:"checkout"`
	Browse     float64 `json:"browse"`
	Export     float64 `json:"export"`
	DeadlineMS int64   `json:"deadline_ms"`
	// Buys is what the checkouts buy: Zipf over the catalogue when left
	// out, as a scenario's checkout: says it (a lesson preset sets its
	// scenario's).
	Buys loadtest.Basket `json:"buys"`
	// Running is set in the state while the traffic runs; a change
	// leaves it out.
	Running bool `json:"running,omitempty"`
}

// The bounds of a traffic change: the console is for watching the shop,
// not for finding its limit (mercado lab capacity does that).
const (
	maxRate        = 1000
	maxExportRate  = 100
	minDeadlineMS  = 50
	maxDeadlineMS  = 60_000
	exportDeadline = 2 * time.Minute
	// chunk is how long each of the generator's runs lasts: one starts
	// every chunk, so that the charts get each second's answers as soon
	// as they are all in, while the schedule stays open loop.
	chunk = time.Second
)

func (r Rates) validate() error {
	switch {
	case !rateIn(r.Checkout, maxRate) || !rateIn(r.Browse, maxRate):
		return fmt.Errorf("checkout and browse rates must be 0, or 1 to %d a second", maxRate)
	case !rateIn(r.Export, maxExportRate):
		return fmt.Errorf("the export rate must be 0, or 1 to %d a second", maxExportRate)
	case r.Checkout == 0 && r.Browse == 0 && r.Export == 0:
		return fmt.Errorf("set at least one rate above 0 (DELETE stops the traffic)")
	case r.DeadlineMS < minDeadlineMS || r.DeadlineMS > maxDeadlineMS:
		return fmt.Errorf("deadline_ms must be %d to %d", minDeadlineMS, maxDeadlineMS)
	case r.Running:
		return fmt.Errorf("running is set by the console, not by a change")
	}
	if errs := r.Buys.Validate(); len(errs) > 0 {
		return fmt.Errorf("buys: %w", errors.Join(errs...))
	}
	return nil
}

// rateIn reports a rate of 0 (the class is off) or 1 to most a second:
// each chunk of the generator lasts a second, so a lower rate would be
// rounded up to one.
func rateIn(rate, most float64) bool { return rate == 0 || rate >= 1 && rate <= most }

// traffic runs the console's load against the gateway and keeps a
// minute of its answers, by class and by the second each was meant to
// be sent.
type traffic struct {
	ctx     context.Context
	gateway string
	chain   *chain
	prefix  string // the Idempotency-Keys' prefix, apart from any other client's

	mu      sync.Mutex
	cat     loadtest.Catalogue // what checkouts buy and browses page through, once read
	now     Rates
	stop    context.CancelFunc  // nil while stopped
	seconds map[string]bySecond // by class, then by chunk start (Unix ms)
}

func newTraffic(ctx context.Context, gateway string, ch *chain) *traffic {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return &traffic{ctx: ctx, gateway: gateway, chain: ch, prefix: "console-" + hex.EncodeToString(b),
		seconds: map[string]bySecond{}}
}

func (t *traffic) rates() Rates {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.now
	r.Running = t.stop != nil
	return r
}

func (t *traffic) running() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stop != nil
}

// follow stops the console's traffic for a scenario's, whose deadline
// the latency chart then draws.
func (t *traffic) follow(deadline time.Duration) {
	t.halt()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.now = Rates{DeadlineMS: deadline.Milliseconds()}
}

// start replaces the traffic with r's.
func (t *traffic) start(r Rates) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stop != nil {
		t.stop()
	}
	ctx, stop := context.WithCancel(t.ctx)
	t.now, t.stop = r, stop
	go t.run(ctx, r)
}

// halt stops the traffic; the answers still due are kept as they come.
func (t *traffic) halt() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stop != nil {
		t.stop()
		t.stop = nil
	}
}

// run starts one chunk of the generator every chunk until ctx ends, and
// one traced checkout a second beside it while checkouts are sent (the
// chain view's). A chunk whose answers are slow runs on beside the next:
// the schedule does not wait for the shop.
func (t *traffic) run(ctx context.Context, r Rates) {
	tick := time.NewTicker(chunk)
	defer tick.Stop()
	for n := 0; ; n++ {
		began := time.Now().UnixMilli()
		record := func(s loadtest.Sample) { t.record(began, r.deadlineOf(s.Class), s) }
		classes := t.classes(r, t.catalogue(ctx), n)
		go func() {
			_, _ = loadtest.Run(ctx, loadtest.Options{Base: t.gateway, Duration: chunk, OnSample: record}, classes...)
		}()
		if r.Checkout > 0 {
			go func() { _, _ = t.chain.checkout(ctx, time.Duration(r.DeadlineMS)*time.Millisecond) }()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// catalogue is the shop's catalogue, read once, by the first chunk that
// can read it (a fault may keep catalog from listing it for a while).
func (t *traffic) catalogue(ctx context.Context) loadtest.Catalogue {
	t.mu.Lock()
	cat := t.cat
	t.mu.Unlock()
	if len(cat.SKUs) > 0 {
		return cat
	}
	ctx, cancel := context.WithTimeout(ctx, chunk)
	defer cancel()
	cat, err := loadtest.ReadCatalogue(ctx, t.gateway)
	if err != nil {
		return loadtest.Catalogue{}
	}
	t.mu.Lock()
	t.cat = cat
	t.mu.Unlock()
	return cat
}

// classes are loadtest's classes for r in chunk n: a client that sends
// each request once, and checkouts with Idempotency-Keys of the chunk's
// own, so that every checkout the console sends is a new one. Until the
// catalogue is read, a chunk sends its exports alone.
func (t *traffic) classes(r Rates, cat loadtest.Catalogue, n int) []loadtest.Class {
	deadline := time.Duration(r.DeadlineMS) * time.Millisecond
	// The client waits past its deadline, as a traced checkout does, so
	// that the latency chart shows how late the late answers are.
	wait := deadline + patience
	var out []loadtest.Class
	shopping := len(cat.SKUs) > 0
	if r.Checkout > 0 && shopping {
		out = append(out, loadtest.Class{Name: "checkout", Rate: r.Checkout, Deadline: deadline, Patience: wait,
			Request: loadtest.CheckoutRequest(fmt.Sprintf("%s-%d", t.prefix, n), cat, r.Buys)})
	}
	if r.Browse > 0 && shopping {
		out = append(out, loadtest.Class{Name: "browse", Rate: r.Browse, Deadline: deadline, Patience: wait, Request: cat.BrowseRequest})
	}
	if r.Export > 0 {
		out = append(out, loadtest.Class{Name: "export", Rate: r.Export, Deadline: exportDeadline, Request: loadtest.ExportRequest})
	}
	return out
}

// deadlineOf is the deadline of a class of r's traffic.
func (r Rates) deadlineOf(class string) time.Duration {
	if class == "export" {
		return exportDeadline
	}
	return time.Duration(r.DeadlineMS) * time.Millisecond
}

// record files one answer, good when within deadline, under the second
// that began at began (Unix ms): the console's own traffic files it
// under its chunk, not a clock second, so that no point is drawn half
// full; a scenario's, under the second it was meant to be sent in.
func (t *traffic) record(began int64, deadline time.Duration, s loadtest.Sample) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seconds[s.Class] == nil {
		t.seconds[s.Class] = bySecond{}
	}
	t.seconds[s.Class].add(began, s.Good(deadline), s.Latency)
}

// window is the last span of seconds before now, one point a second by
// class (a second with no answers yet is left out), and each class's
// deadline in ms.
func (t *traffic) window(now time.Time, span time.Duration) (map[string][]Point, map[string]int64) {
	from := now.Add(-span).UnixMilli()
	t.mu.Lock()
	secs := map[string]map[int64]second{}
	for class, bySec := range t.seconds {
		secs[class] = bySec.since(from)
	}
	dl := t.now.DeadlineMS
	t.mu.Unlock()
	out := map[string][]Point{}
	for class, s := range secs {
		out[class] = points(s)
	}
	if dl == 0 {
		dl = defaultDeadline.Milliseconds()
	}
	return out, classDeadlines(dl)
}

// classDeadlines is each class's deadline in ms, as the latency charts
// draw it: dl for the shoppers' checkouts and browsing, the exports' own.
func classDeadlines(dl int64) map[string]int64 {
	return map[string]int64{"checkout": dl, "browse": dl, "export": exportDeadline.Milliseconds()}
}

// defaultDeadline is the deadline the page offers: lesson 7's client
// waits about a second.
const defaultDeadline = time.Second

func (c *Console) putTraffic(w http.ResponseWriter, r *http.Request) {
	var rates Rates
	if !decode(w, r, &rates) {
		return
	}
	if err := rates.validate(); err != nil {
		problem.Write(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if c.runs.busy() {
		problem.Write(w, r, http.StatusConflict, "a scenario is running: its traffic is the shop's until it ends (DELETE /console/api/scenario stops it)")
		return
	}
	c.traffic.start(rates)
	c.o.Log.Info("traffic started from the console", "checkout", rates.Checkout, "browse", rates.Browse, "export", rates.Export, "deadline_ms", rates.DeadlineMS)
	writeJSON(w, http.StatusOK, c.traffic.rates())
}

func (c *Console) stopTraffic(w http.ResponseWriter, r *http.Request) {
	c.traffic.halt()
	writeJSON(w, http.StatusOK, c.traffic.rates())
}
