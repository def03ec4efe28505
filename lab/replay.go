package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/internal/setting"
	"github.com/mercado-lab/mercado/internal/stall"
	"github.com/mercado-lab/mercado/internal/timing"
	"github.com/mercado-lab/mercado/lab/driver"
	"github.com/mercado-lab/mercado/lab/shop"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// A replay measures a lesson's checkout on the real shop: the five
// services started in this process on loopback, the lesson's faults put
// in, one checkout sent with the client's deadline, and each of orders'
// calls read back from the answer's Server-Timing. Lesson 7 (naive and
// budgeted), its fan-out exercise (in series and in parallel) and the
// 800 ms waterfall are each such a replay. What differs between them is
// data, which a replay holds; this engine runs any of them.

// replay is a lesson as the engine runs it.
type replay struct {
	// name starts the idempotency key of each checkout the replay sends.
	name string
	// deadline is the client's, sent with the checkout (X-Deadline-Ms).
	deadline time.Duration
	// margin and floor are the budgeted shop's: what each hop keeps back
	// from its calls for its answer's way back, and the least budget
	// worth starting a call with.
	margin, floor time.Duration
	// edge and own are what the checkout spends outside orders' calls:
	// the gateway's work before it calls orders, orders' after its last
	// call. ordersMargin, when set, is orders' own margin instead of
	// margin. The prediction (predict) uses them.
	edge, own, ordersMargin time.Duration
	// spare is what the budget leaves a budgeted answer, after orders'
	// last call, to reach the client by the deadline. An answer that
	// missed the deadline with time to spare was decided by a stall of
	// this process, not by the budget (stalls.go).
	spare time.Duration

	// ways are the runs the lesson compares, in the order it shows them.
	ways []way
	// hops are orders' calls that the lesson shows, in order.
	hops []hopSpec
	// faults make each step of the checkout as slow as the lesson says,
	// by service: the lesson, put on the shop.
	faults map[string]faults.Set
	// body is the checkout the client sends.
	body string
	// configure, when set, is the rest of what the lesson asks of the
	// shop's settings.
	configure func(*shop.Config)
	// showStart has the table show when each call started rather than
	// the chain's time after it: calls made at once start together, and
	// a running total would hide that.
	showStart bool
}

// way is one way of running the checkout, on a shop of its own.
type way struct {
	mode mode.Mode
	// fanout is how orders makes the calls that need nothing from each
	// other ("": as the mode does).
	fanout mode.Fanout
	// heading is what the table calls the run, title what the page does.
	heading, title string
}

// String names the way: "naive", or "budgeted parallel".
func (w way) String() string {
	if w.fanout == "" {
		return string(w.mode)
	}
	return string(w.mode) + " " + string(w.fanout)
}

// hopSpec is one of orders' calls in the lesson: its own cap (orders'
// timeout for it) and how long the called step works in this run.
type hopSpec struct {
	name      string
	cap, work time.Duration
}

// hop is the lesson's call by name.
func (rp replay) hop(name string) hopSpec {
	for _, h := range rp.hops {
		if h.name == name {
			return h
		}
	}
	panic("lab: the replay has no hop " + name)
}

// ReplayHop is one of orders' calls in a replay's checkout, as orders
// reported it.
type ReplayHop struct {
	Name string `json:"name"`
	// StartMS is when the call began, from the request's arrival at
	// orders (Server-Timing's start).
	StartMS int64 `json:"start_ms"`
	// TimeoutMS is the call's effective timeout (0: the call was not made).
	TimeoutMS int64 `json:"timeout_ms"`
	TookMS    int64 `json:"took_ms"`
	// Outcome is ok, timeout, skipped or error; unknown when orders'
	// report never reached the edge.
	Outcome string `json:"outcome"`
	// ClippedByBudget reports that the budget, not the cap, set the timeout.
	ClippedByBudget bool `json:"clipped_by_budget"`
	// ElapsedMS is the chain's time at orders once this call and those
	// above it had ended: in series, their running total.
	ElapsedMS int64 `json:"elapsed_ms"`
	// Note says why a call was skipped, or why its outcome is unknown.
	Note string `json:"note,omitempty"`
}

// Notes on calls that were not made or not reported.
const (
	SkipInsufficientBudget = "insufficient budget"
	SkipEarlierHopFailed   = "an earlier hop failed"
	NotReported            = "not reported: orders answered after the gateway had given up"
)

// ReplayRun is a replay's checkout, run one way.
type ReplayRun struct {
	DeadlineMS int64 `json:"deadline_ms"`
	// TotalMS is the checkout's duration measured by the client.
	TotalMS int64 `json:"total_ms"`
	// Verdict is WITHIN when the answer came by the deadline, else OVER.
	Verdict    string      `json:"verdict"`
	HTTPStatus int         `json:"http_status"`
	Hops       []ReplayHop `json:"hops"`
	// Predicted is what the lesson's hops predict of the checkout.
	Predicted ReplayPrediction `json:"predicted"`
	// MeasuredAgain says why each earlier try was measured again: a
	// stall of this process decided it (see stalls.go). Disturbed says
	// the same of this try, when every try was.
	MeasuredAgain []string `json:"measured_again,omitempty"`
	Disturbed     string   `json:"disturbed,omitempty"`
}

// A lesson is what a replay is made from: settings that check themselves
// and turn into the replay.
type lesson interface {
	Validate() error
	replay() replay
}

// measureLesson checks l's settings and measures its replay, each way's
// run into the next of into (in the order of the ways). On an error it
// fills none of them.
func measureLesson(ctx context.Context, l lesson, log *slog.Logger, into ...*ReplayRun) error {
	if err := l.Validate(); err != nil {
		return err
	}
	runs, err := l.replay().measure(ctx, log)
	if err != nil {
		return err
	}
	for i, r := range runs {
		*into[i] = r
	}
	return nil
}

// measure runs the checkout each way, on a fresh shop each time, and
// again while a stall of this process rather than the budget decided
// the try (up to maxTries). The runs are in the order of the ways.
func (rp replay) measure(ctx context.Context, log *slog.Logger) ([]ReplayRun, error) {
	var runs []ReplayRun
	for _, w := range rp.ways {
		r, again, stalled, err := untilUndisturbed(func() (ReplayRun, string, error) { return rp.once(ctx, w, log) })
		if err != nil {
			return nil, fmt.Errorf("%s run: %w", w, err)
		}
		r.MeasuredAgain, r.Disturbed, r.Predicted = again, stalled, rp.predict(w)
		runs = append(runs, r)
	}
	return runs, nil
}

// once measures one checkout on a fresh shop run way. It says why, when a
// stall of this process rather than the budget decided it.
func (rp replay) once(ctx context.Context, w way, log *slog.Logger) (ReplayRun, string, error) {
	st, err := rp.start(ctx, w, log)
	if err != nil {
		return ReplayRun{}, "", err
	}
	defer st.stop()
	t, err := st.watched(ctx)
	if err != nil {
		return ReplayRun{}, "", err
	}
	run := st.read(t)
	return run, st.stalled(run, t), nil
}

// stage is a shop made ready for a replay's checkout, run one way.
type stage struct {
	replay
	way    way
	driver *driver.Driver
	// client sent the warm-up: its connection to the gateway is open.
	client *http.Client
	stop   func() error
}

// start starts a shop run way with the lesson's settings, warms it up and
// puts the lesson's faults in (arrange). The caller stops it.
func (rp replay) start(ctx context.Context, w way, log *slog.Logger) (stage, error) {
	sc := shop.EphemeralConfig()
	sc.Shared.Mode, sc.Shared.Margin, sc.Shared.Floor = w.mode, rp.margin, rp.floor
	// The lessons are about timeouts alone: one attempt per call in every
	// mode, so that a call's time is one attempt's.
	off := mode.RetriesOff
	sc.Shared.Overrides = mode.Overrides{Retries: &off}
	if w.fanout != "" {
		sc.Shared.Overrides.Fanout = &w.fanout
	}
	// A naive call leaves its dependency working after it is abandoned;
	// don't wait for that work when the lab is done.
	sc.Shared.DrainTimeout = 100 * time.Millisecond
	for _, h := range rp.hops {
		*capOf(&sc, h.name) = h.cap
	}
	if rp.configure != nil {
		rp.configure(&sc)
	}
	s, err := shop.Start(ctx, sc, log)
	if err != nil {
		return stage{}, err
	}
	st := stage{replay: rp, way: w, client: &http.Client{Timeout: rp.deadline + time.Minute}, stop: s.Stop}
	if st.driver, err = arrange(ctx, st.client, s, st.key()+"-warm-up", rp.faults); err != nil {
		s.Stop()
		return stage{}, err
	}
	return st, nil
}

// capOf is orders' setting for the cap of its call to hop.
func capOf(sc *shop.Config, hop string) *time.Duration {
	switch hop {
	case "catalog":
		return &sc.Orders.CatalogCap
	case "fraud":
		return &sc.Orders.FraudCap
	case "payments":
		return &sc.Orders.PaymentsCap
	case "shipping":
		return &sc.Orders.ShippingCap
	}
	panic("lab: orders has no cap for " + hop)
}

// key is the idempotency key of the way's checkout: "fanout-budgeted-parallel".
func (st stage) key() string {
	return st.name + "-" + strings.ReplaceAll(st.way.String(), " ", "-")
}

// send sends the lesson's checkout, under the way's key.
func (st stage) send(ctx context.Context) (checkout, error) {
	return measureCheckout(ctx, st.client, st.driver.URL(), st.key(), st.deadline, st.body)
}

// take is the measured checkout: its answer, when it was sent and the
// stalls of this process seen meanwhile.
type take struct {
	checkout
	sent   time.Time
	stalls []stall.Stall
}

// watched measures the lesson's checkout, watching for stalls of this
// process while it runs.
func (st stage) watched(ctx context.Context) (take, error) {
	watch := stall.Start()
	t := take{sent: time.Now()}
	c, err := st.send(ctx)
	t.stalls = watch.Stop()
	t.checkout = c
	return t, err
}

// read is the run as the lesson's table shows it: the client's figures,
// and each of the lesson's calls as orders reported it in Server-Timing.
func (st stage) read(t take) ReplayRun {
	ms := func(d time.Duration) int64 { return d.Round(time.Millisecond).Milliseconds() }
	run := ReplayRun{DeadlineMS: st.deadline.Milliseconds(), TotalMS: ms(t.took), Verdict: "WITHIN", HTTPStatus: t.status}
	if t.took > st.deadline {
		run.Verdict = "OVER"
	}
	// Orders reports its calls in its answer; when that answer came too
	// late for the gateway, the edge never saw them.
	_, reported := findHop(t.hops, st.hops[0].name)
	var elapsed time.Duration
	for _, spec := range st.hops {
		h := ReplayHop{Name: spec.name, Outcome: "skipped", Note: SkipEarlierHopFailed}
		if !reported {
			h.Outcome, h.Note = "unknown", NotReported
		}
		if got, ok := findHop(t.hops, spec.name); ok {
			h.StartMS, h.Outcome, h.Note = ms(got.Start), lessonOutcome(got.Outcome), ""
			if h.Outcome == "skipped" {
				// Not called: no timeout was applied, whatever the
				// decision would have given it.
				h.Note = SkipInsufficientBudget
			} else {
				h.TimeoutMS, h.TookMS = ms(got.Timeout), ms(got.Took)
				h.ClippedByBudget = st.way.mode == mode.Budgeted && got.Timeout > 0 && got.Timeout < spec.cap
			}
			elapsed = max(elapsed, got.Start+got.Took)
		}
		h.ElapsedMS = ms(elapsed)
		run.Hops = append(run.Hops, h)
	}
	return run
}

// stalled says why a stall of this process rather than the budget decided
// the run, or "": a call timed out although its work ends well within its
// timeout, or a budgeted answer came late although it had time to spare.
func (st stage) stalled(run ReplayRun, t take) string {
	for _, h := range run.Hops {
		if why := hopStalled(h.Name, st.hop(h.Name).work, time.Duration(h.TimeoutMS)*time.Millisecond, h.Outcome); why != "" {
			return why
		}
	}
	// A naive answer is late by design. A budgeted one is due within the
	// deadline, with orders' report of its calls.
	if st.way.mode != mode.Budgeted {
		return ""
	}
	late := run.Verdict == "OVER" || run.Hops[0].Outcome == "unknown"
	return answerStalled(late, t.stalls, t.sent.Add(st.deadline), st.spare)
}

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
// client's to the gateway, the gateway's to orders, orders' to catalog,
// payments and shipping) and runs every step of it once. Otherwise the
// measured checkout would pay for the handshakes and the first-use set-up,
// and pay for some of them in the few milliseconds (the margin) that each
// hop keeps for its answer's way back, after its last call has timed out:
// late there, the answer misses its caller's deadline — a 504, and orders'
// report of its hops lost.
func arrange(ctx context.Context, client *http.Client, s *shop.Shop, key string, lesson map[string]faults.Set) (*driver.Driver, error) {
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

// chainSettings declares what every replay of the checkout's chain has:
// the client's deadline, then the margin and the floor, the services'
// defaults.
func chainSettings(deadline, margin, floor *time.Duration, def time.Duration) []setting.Setting {
	return []setting.Setting{
		setting.Duration(deadline, "deadline", def, setting.Above(0, time.Minute), "the client's deadline for the checkout"),
		setting.Duration(margin, "margin", serve.DefaultMargin, setting.Within(0, time.Minute), "budgeted: time kept back from each call for the way back"),
		setting.Duration(floor, "floor", serve.DefaultFloor, setting.Within(0, time.Minute), "budgeted: least budget worth starting a call with"),
	}
}

// hopCap declares the cap of the hop named hop, whose is how the help
// names its owner ("catalog's").
func hopCap(p *time.Duration, hop, whose string, def time.Duration) setting.Setting {
	return setting.Duration(p, hop+"-cap", def, setting.Above(0, time.Minute), whose+" cap: the call's own timeout")
}

// hopWork declares how long the hop named hop takes in this run.
func hopWork(p *time.Duration, hop, who string, def time.Duration, note string) setting.Setting {
	return setting.Duration(p, hop+"-latency", def, setting.Within(0, time.Minute), "how long "+who+" takes in this run"+note)
}

// writeJSON writes a lab's result as indented JSON, the form of every
// lab's --json.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
