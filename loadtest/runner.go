package loadtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
	"golang.org/x/sync/errgroup"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/stall"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// RunOptions adjust a scenario run.
type RunOptions struct {
	// Progress is told how far each mode's run has got.
	Progress func(mode string, done, total time.Duration)
	// OnSample, when set, sees each mode's samples as they arrive
	// (Options.OnSample): the console charts a run live.
	OnSample func(mode string, s Sample)
	// CPU, when set, reads the shop's CPU time (in-process runs), for CPU
	// seconds per good checkout.
	CPU func() time.Duration
	// Validity, when set, is the rule the runs are held to instead of
	// DefaultValidity (a test's way to make a run INVALID on purpose).
	Validity *Validity
}

// validity is the rule o holds the runs to.
func (o RunOptions) validity() Validity {
	if o.Validity != nil {
		return *o.Validity
	}
	return DefaultValidity()
}

// RunScenario runs sc against shop once per mode, switching the whole shop
// between modes.
func RunScenario(ctx context.Context, sc Scenario, shop Target, o RunOptions) (Results, error) {
	res := Results{Scenario: sc.Name, Description: strings.TrimSpace(sc.Description), StartedAt: time.Now().UTC().Format(time.RFC3339),
		Settings: sc.Settings()}
	nonce := make([]byte, 4)
	_, _ = rand.Read(nonce)
	for i, m := range sc.Modes {
		if i > 0 {
			// Work the previous mode left running must not count against
			// this one: wait (a while) for the pools to empty.
			shop.Settle(ctx, 15*time.Second)
		}
		mr, err := runMode(ctx, sc, shop, m, hex.EncodeToString(nonce), o)
		if err != nil {
			return Results{}, fmt.Errorf("%s: %w", m, err)
		}
		res.Modes = append(res.Modes, mr)
	}
	res.Conclude(sc.Checks)
	return res, nil
}

func runMode(ctx context.Context, sc Scenario, shop Target, m mode.Mode, nonce string, o RunOptions) (ModeResult, error) {
	preset, overrides, err := sc.Setup(m)
	if err != nil {
		return ModeResult{}, err
	}
	if err := shop.Switch(ctx, preset, overrides, sc.Shop.Workers); err != nil {
		return ModeResult{}, err
	}
	if err := shop.SetFaults(ctx, nil); err != nil {
		return ModeResult{}, err
	}
	if err := setNetwork(ctx, sc, shop, nil); err != nil {
		return ModeResult{}, err
	}
	cat, err := ReadCatalogue(ctx, shop.URL())
	if err != nil {
		return ModeResult{}, err
	}
	fx := fixtures{orderID: seedOrder(ctx, shop.URL(), string(m)+"-"+nonce), cat: cat}

	mechanisms := preset.Mechanisms().Apply(overrides)
	mr := ModeResult{Mode: string(m), Valid: true, Series: map[string][]Second{}, Mechanisms: &mechanisms,
		PoolInFlight: map[string][]float64{}, BreakerState: map[string][]float64{}, PoolCapacity: map[string]float64{}}
	before, err := shop.Counters(ctx)
	if err != nil {
		return ModeResult{}, err
	}
	var cpuStart time.Duration
	if o.CPU != nil {
		cpuStart = o.CPU()
	}

	start := time.Now()
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var sampling sync.WaitGroup
	sampling.Add(1)
	go func() {
		defer sampling.Done()
		sampleGauges(sampleCtx, shop, &mr, start)
	}()
	progressDone := make(chan struct{})
	go reportProgress(string(m), start, sc.Length(), o.Progress, progressDone)

	rule := o.validity()
	watch := stall.Start()
	var onSample func(Sample)
	if o.OnSample != nil {
		onSample = func(s Sample) { o.OnSample(string(m), s) }
	}
	phased, invalid, err := runPhases(ctx, sc, shop, start, m, fmt.Sprintf("%s-%s", m, nonce), fx, rule.MinAchieved, onSample)
	if err != nil {
		watch.Stop()
		close(progressDone)
		stopSampling()
		sampling.Wait()
		return ModeResult{}, err
	}
	stalls := watch.Stop()
	close(progressDone)
	stopSampling()
	sampling.Wait()
	_ = shop.SetFaults(ctx, nil)
	_ = setNetwork(ctx, sc, shop, nil)
	after, err := shop.Counters(ctx)
	if err != nil {
		return ModeResult{}, err
	}
	// After the counters, so that reading the orders is not counted as
	// the shop's work.
	confirmAccepted(ctx, shop.URL(), max(time.Duration(sc.Patience), time.Second), phased)

	all, faulty := map[string][]Sample{}, map[string][]Sample{}
	var faultyLength time.Duration
	for i, p := range sc.Phases {
		span := PhaseSpan{Name: p.Name, StartS: phased[i].start.Seconds(), EndS: (phased[i].start + time.Duration(p.Duration)).Seconds(), Faulty: len(p.Faults) > 0 || len(p.Network) > 0,
			Faults: p.Faults, Network: p.Network, Rates: p.Rates, Arrivals: sc.ArrivalsOf(p)}
		sent := 0
		for _, name := range slices.Sorted(maps.Keys(phased[i].samples)) {
			got := phased[i].samples[name]
			span.Classes = append(span.Classes, Summarize(name, got, sc.DeadlineOf(name), time.Duration(p.Duration)))
			all[name] = append(all[name], got...)
			if span.Faulty {
				faulty[name] = append(faulty[name], got...)
			}
			sent += len(got)
		}
		span.Server = serverFigures(phased[i].from, phased[i].to, sent)
		if phased[i].settled.Hops != nil {
			span.Server.HopDurations = serverFigures(phased[i].settled, phased[i].to, sent).HopDurations
		}
		if span.Faulty {
			faultyLength += time.Duration(p.Duration)
		}
		mr.Phases = append(mr.Phases, span)
	}

	length := sc.Length()
	var lags []time.Duration
	var requests, goodCheckouts int
	for _, name := range slices.Sorted(maps.Keys(all)) {
		samples := all[name]
		s := Summarize(name, samples, sc.DeadlineOf(name), length)
		mr.Classes = append(mr.Classes, s)
		mr.Series[name] = perSecond(samples, start, sc.DeadlineOf(name))
		requests += s.Requests
		if name == "checkout" {
			goodCheckouts = s.Good
		}
		for _, x := range samples {
			lags = append(lags, x.Sent.Sub(x.Intended))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(faulty)) {
		mr.FaultClasses = append(mr.FaultClasses, Summarize(name, faulty[name], sc.DeadlineOf(name), faultyLength))
	}
	slices.Sort(lags)
	mr.ScheduleLag = Lag{P50MS: ms(Percentile(lags, 50)), P99MS: ms(Percentile(lags, 99)), MaxMS: ms(Percentile(lags, 100))}
	if lag := Percentile(lags, 99); lag > rule.MaxLagP99 {
		invalid = append(invalid, fmt.Sprintf("schedule lag p99 %v (more than %v)", lag.Round(time.Microsecond), rule.MaxLagP99))
	}
	longest := stall.Longest(stalls, start, time.Now())
	mr.LongestStallMS = ms(longest)
	if longest > rule.MaxStall {
		invalid = append(invalid, fmt.Sprintf("the generator was kept from running for %v at once (more than %v)", longest.Round(time.Millisecond), rule.MaxStall))
	}
	if len(invalid) > 0 {
		mr.Valid, mr.Invalid = false, strings.Join(invalid, "; ")
	}
	mr.Server = serverFigures(before, after, requests)
	if o.CPU != nil && goodCheckouts > 0 {
		mr.Server.CPUSecondsPerGoodCheckout = (o.CPU() - cpuStart).Seconds() / float64(goodCheckouts)
	}
	return mr, nil
}

// confirmReaders is how many orders confirmAccepted reads at once.
const confirmReaders = 8

// confirmAccepted learns how the checkouts answered 202 processing ended:
// it gives the shop settle (the clients' patience) after the last answer
// to settle them — the reconciler asks payments — then reads each one's
// order through the public API, GET /api/orders/{id}, and marks the
// sample Confirmed when the order is. An order it cannot read stays
// unconfirmed: not a good checkout.
func confirmAccepted(ctx context.Context, base string, settle time.Duration, phased []phaseRun) {
	var accepted []*Sample
	for i := range phased {
		for _, samples := range phased[i].samples {
			for j := range samples {
				if samples[j].Code == http.StatusAccepted && samples[j].OrderID != "" {
					accepted = append(accepted, &samples[j])
				}
			}
		}
	}
	if len(accepted) == 0 {
		return
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(settle):
	}
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	var g errgroup.Group
	g.SetLimit(confirmReaders)
	for _, s := range accepted {
		g.Go(func() error {
			s.Confirmed = orderStatus(ctx, client, base, s.OrderID) == "confirmed"
			return nil
		})
	}
	_ = g.Wait()
}

// orderStatus reads an order's status through the public API; "" when it
// cannot.
func orderStatus(ctx context.Context, client *http.Client, base, id string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/orders/"+url.PathEscape(id), nil)
	if err != nil {
		return ""
	}
	resp, err := client.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var o struct {
		Status string `json:"status"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&o) != nil {
		return ""
	}
	return o.Status
}

// phaseRun is what one phase sent: its samples by class, when it began,
// from the start of the mode's run, and the services' counters at its
// start and at its end.
type phaseRun struct {
	start    time.Duration
	samples  map[string][]Sample
	from, to Counters
	// settled are the counters once the calls the phase before started
	// are over (settleTime into the phase): the hops' histograms the
	// phase's predictions compose start there. Zero if that read failed.
	settled Counters
}

// settleTime is how long into a phase the calls the phase before started
// may still run: the longest deadline of the scenario's classes, at most
// a quarter of the phase.
func (s Scenario) settleTime(p Phase) time.Duration {
	var d time.Duration
	for name := range s.Classes {
		d = max(d, s.DeadlineOf(name))
	}
	return min(d, time.Duration(p.Duration)/4)
}

// runPhases runs the phases on one timeline: each begins at its scheduled
// offset, whatever the requests of the phase before are still waiting
// for. (Waiting for them would pause the arrivals between phases — the
// load would turn closed-loop exactly when the shop is slowest.) Faults
// change at each phase's start. It reports every phase whose generator
// sent less than minAchieved of what its schedule asked; onSample, when
// set, sees the samples as they arrive.
func runPhases(ctx context.Context, sc Scenario, shop Target, start time.Time, m mode.Mode, keyPrefix string, fx fixtures, minAchieved float64, onSample func(Sample)) ([]phaseRun, []string, error) {
	out := make([]phaseRun, len(sc.Phases))
	errs := make([]error, len(sc.Phases))
	var wg sync.WaitGroup
	var offset time.Duration
	var setErr error
	for i, p := range sc.Phases {
		if d := time.Until(start.Add(offset)); d > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		}
		if ctx.Err() != nil {
			break
		}
		if err := shop.SetFaults(ctx, p.Faults); err != nil {
			setErr = err
			break
		}
		if err := setNetwork(ctx, sc, shop, p.Network); err != nil {
			setErr = err
			break
		}
		// The services' counters at the phase's start end the phase
		// before it.
		c, err := shop.Counters(ctx)
		if err != nil {
			setErr = err
			break
		}
		out[i].from = c
		if i > 0 {
			out[i-1].to = c
		}
		out[i].start = time.Since(start)
		classes := sc.phaseClasses(p, m, fmt.Sprintf("%s-%d", keyPrefix, i), fx)
		wg.Add(2)
		go func() {
			defer wg.Done()
			out[i].samples, errs[i] = Run(ctx, Options{Base: shop.URL(), Duration: time.Duration(p.Duration), OnSample: onSample}, classes...)
		}()
		go func() {
			defer wg.Done()
			select {
			case <-ctx.Done():
			case <-time.After(sc.settleTime(p)):
				out[i].settled, _ = shop.Counters(ctx)
			}
		}()
		offset += time.Duration(p.Duration)
	}
	if d := time.Until(start.Add(offset)); d > 0 && setErr == nil {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
	if setErr == nil && ctx.Err() == nil {
		out[len(out)-1].to, setErr = shop.Counters(ctx)
	}
	// The last phase's faults end with the schedule, not with the
	// stragglers it left behind.
	_ = shop.SetFaults(context.WithoutCancel(ctx), nil)
	_ = setNetwork(context.WithoutCancel(ctx), sc, shop, nil)
	wg.Wait()
	if err := errors.Join(append(errs, setErr, ctx.Err())...); err != nil {
		return nil, nil, err
	}
	var invalid []string
	for i, p := range sc.Phases {
		for _, c := range sc.phaseClasses(p, m, "", fx) {
			got := out[i].samples[c.Name]
			want := c.Rate * time.Duration(p.Duration).Seconds()
			if float64(len(got)) < minAchieved*want {
				invalid = append(invalid, fmt.Sprintf("phase %q sent %d of %.0f %s requests", p.Name, len(got), want, c.Name))
			}
		}
	}
	return out, invalid, nil
}

func reportProgress(m string, start time.Time, total time.Duration, progress func(string, time.Duration, time.Duration), done chan struct{}) {
	if progress == nil {
		return
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-done:
			progress(m, total, total)
			return
		case <-tick.C:
			progress(m, min(time.Since(start), total), total)
		}
	}
}

// phaseClasses are the scenario's classes at the phase's rates, with the
// clients of mode m.
func (sc Scenario) phaseClasses(p Phase, m mode.Mode, keyPrefix string, fx fixtures) []Class {
	client := sc.ClientFor(m)
	names := make([]string, 0, len(sc.Classes))
	for n := range sc.Classes {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Class
	for _, n := range names {
		rate := sc.Classes[n].Rate
		if r, ok := p.Rates[n]; ok {
			rate = r
		}
		if rate <= 0 {
			continue
		}
		// A class's own client (a batch export's) is the same in every
		// mode; the others are the mode's clients.
		client := client
		if own := sc.Classes[n].Client; own != nil {
			client = *own
		}
		dl := sc.DeadlineOf(n)
		c := Class{Name: n, Rate: rate, Arrivals: sc.ArrivalsOf(p), Seed: arrivalSeed(sc.Name, p.Name, n),
			Deadline: dl, Patience: dl + time.Duration(sc.Patience),
			Retries: client.Retries, RetryBackoff: time.Duration(client.Backoff), AttemptTimeout: time.Duration(client.AttemptTimeout),
			BudgetAware: client.BudgetAware}
		switch n {
		case "checkout":
			c.Request = CheckoutRequest(keyPrefix, fx.cat, sc.Checkout)
		case "browse":
			c.Request = fx.cat.BrowseRequest
		case "status":
			c.Request = func(base string, _ uint64) vegeta.Target {
				return vegeta.Target{Method: http.MethodGet, URL: base + "/api/orders/" + fx.orderID}
			}
		case KindExport:
			c.Request = ExportRequest
		}
		out = append(out, c)
	}
	return out
}

// fixtures are what a mode's run reads from the shop before it sends
// load: the order the status class looks up, and the catalogue.
type fixtures struct {
	orderID string
	cat     Catalogue
}

// CheckoutRequest builds checkouts of what b picks from cat, the seq-th
// under the Idempotency-Key keyPrefix-seq.
func CheckoutRequest(keyPrefix string, cat Catalogue, b Basket) func(base string, seq uint64) vegeta.Target {
	return func(base string, seq uint64) vegeta.Target {
		return vegeta.Target{Method: http.MethodPost, URL: base + "/api/checkout", Body: checkoutJSON(cat.Pick(b, keyPrefix, seq)),
			Header: http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {keyPrefix + "-" + strconv.FormatUint(seq, 10)}}}
	}
}

// checkoutJSON is the body of a checkout of one of each of skus.
func checkoutJSON(skus []string) []byte {
	b := []byte(`{"customer":"loadtest","items":[`)
	for i, sku := range skus {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"sku":`...)
		b = strconv.AppendQuote(b, sku)
		b = append(b, `,"qty":1}`...)
	}
	return append(b, `],"address":"1 Load Street"}`...)
}

// ExportRequest is a catalogue export sent as batch traffic, a hundred
// products a page: an export of the seeded catalogue is six calls to
// catalog, each a page's work.
func ExportRequest(base string, _ uint64) vegeta.Target {
	return vegeta.Target{Method: http.MethodGet, URL: base + "/api/catalog/export?page_size=100",
		Header: http.Header{deadline.HeaderClass: {string(deadline.Batch)}}}
}

// checkoutBody is the one checkout seedOrder places.
var checkoutBody = checkoutJSON([]string{"coffee-arabica"})

// seedOrder places one order for the status class to look up.
func seedOrder(ctx context.Context, base, key string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/checkout", bytes.NewReader(checkoutBody))
	if err != nil {
		return "none"
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "seed-"+key)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return "none"
	}
	defer resp.Body.Close()
	var o struct {
		OrderID string `json:"order_id"`
	}
	if json.NewDecoder(resp.Body).Decode(&o) != nil || o.OrderID == "" {
		return "none"
	}
	return o.OrderID
}

// perSecond buckets samples by intended send time.
func perSecond(samples []Sample, start time.Time, deadline time.Duration) []Second {
	buckets := map[int][]Sample{}
	last := 0
	for _, s := range samples {
		t := int(s.Intended.Sub(start) / time.Second)
		buckets[t] = append(buckets[t], s)
		last = max(last, t)
	}
	out := make([]Second, 0, last+1)
	for t := 0; t <= last; t++ {
		b := buckets[t]
		sec := Second{T: t, Requests: len(b)}
		lat := make([]time.Duration, 0, len(b))
		for _, s := range b {
			lat = append(lat, s.Latency)
			if s.Good(deadline) {
				sec.Good++
			}
		}
		slices.Sort(lat)
		sec.P50MS, sec.P99MS = ms(Percentile(lat, 50)), ms(Percentile(lat, 99))
		out = append(out, sec)
	}
	return out
}

// gaugeReadings is how often the gauges are read: each second of the run
// keeps its highest reading, so a pool that filled for a few hundred
// milliseconds shows full.
const gaugeReadings = 200 * time.Millisecond

// sampleGauges records pool and breaker gauges, each second's highest.
func sampleGauges(ctx context.Context, shop Target, mr *ModeResult, start time.Time) {
	tick := time.NewTicker(gaugeReadings)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		g, err := shop.Gauges(ctx)
		if err != nil {
			continue
		}
		sec := int(time.Since(start) / time.Second)
		record := func(dst map[string][]float64, key string, v float64) {
			for len(dst[key]) <= sec {
				dst[key] = append(dst[key], 0)
			}
			dst[key][sec] = max(dst[key][sec], v)
		}
		for pool, v := range g.PoolInFlight {
			record(mr.PoolInFlight, pool, v)
		}
		for pool, v := range g.PoolCapacity {
			mr.PoolCapacity[pool] = max(mr.PoolCapacity[pool], v)
		}
		for dep, v := range g.BreakerState {
			record(mr.BreakerState, dep, v)
		}
	}
}

// grown is how much each counter of after grew since before, for the
// counters that grew; nil when none did.
func grown(before, after map[string]float64) map[string]float64 {
	var out map[string]float64
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			if out == nil {
				out = map[string]float64{}
			}
			out[k] = d
		}
	}
	return out
}

// seconds is a difference of two readings of a float counter of seconds,
// to the microsecond: the readings' sums carry rounding residue (3.6e-12
// s of "late work" between two equal readings) that a bound of 0 would
// count.
func seconds(d float64) float64 { return math.Round(d*1e6) / 1e6 }

// serverFigures are the services' counters' growth over the run; requests
// is how many the generator sent.
func serverFigures(before, after Counters, requests int) ServerFigures {
	s := ServerFigures{
		LateCompletions:  after.LateCompletions - before.LateCompletions,
		LateWorkSeconds:  seconds(after.LateWorkSeconds - before.LateWorkSeconds),
		BreakerOpens:     after.BreakerOpens - before.BreakerOpens,
		PoolRejections:   after.PoolRejections - before.PoolRejections,
		Retries:          after.Retries - before.Retries,
		DuplicateCharges: after.DuplicateCharges - before.DuplicateCharges,
		Skipped:          map[string]float64{},
		Calls:            map[string]float64{},
		Amplification:    map[string]float64{},
	}
	s.MethodCalls = grown(before.Methods, after.Methods)
	if waits := after.LockWait.Since(before.LockWait); waits.Total() > 0 {
		s.LockWaitP99MS, s.LockWaits = waits.Quantile(0.99)*1000, waits.Total()
	}
	for hop, h := range after.Hops {
		if n := h.Total() - before.Hops[hop].Total(); n > 0 {
			if s.HopCalls == nil {
				s.HopCalls = map[string]float64{}
			}
			s.HopCalls[hop] = n
			if s.HopDurations == nil {
				s.HopDurations = map[string]Histogram{}
			}
			s.HopDurations[hop] = h.Since(before.Hops[hop])
			if s.CapMS == nil {
				s.CapMS = map[string]float64{}
			}
			s.CapMS[hop] = after.Caps[hop] * 1000
		}
		if ms, ok := headroomMS(after.Caps[hop], before.Hops[hop], h); ok {
			if s.HeadroomMS == nil {
				s.HeadroomMS = map[string]float64{}
			}
			s.HeadroomMS[hop] = ms
		}
	}
	for reason, v := range after.Skipped {
		if d := v - before.Skipped[reason]; d > 0 {
			s.Skipped[reason] = d
		}
	}
	s.InsufficientBudget = grown(before.InsufficientBudget, after.InsufficientBudget)
	s.HopTimeouts = grown(before.HopTimeouts, after.HopTimeouts)
	s.HopBreakerOpens = grown(before.HopBreakerOpens, after.HopBreakerOpens)
	for svc, v := range after.Requests {
		if svc == "gateway" {
			continue
		}
		s.Calls[svc] = v - before.Requests[svc]
		if requests > 0 {
			s.Amplification[svc] = s.Calls[svc] / float64(requests)
		}
	}
	return s
}

// setNetwork puts a phase's network faults in force, when the scenario
// uses any: a shop without fault proxies runs every other scenario.
func setNetwork(ctx context.Context, sc Scenario, shop Target, specs map[string]string) error {
	if !sc.UsesNetwork() {
		return nil
	}
	ns, ok := shop.(NetworkTarget)
	if !ok {
		return errors.New("the scenario sets network faults, and this shop has no fault proxies (serve it with --network-proxy)")
	}
	return ns.SetNetwork(ctx, specs)
}
