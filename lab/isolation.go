package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/mercado-lab/mercado/internal/admin"
	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/internal/telemetry"
	"github.com/mercado-lab/mercado/lab/driver"
	"github.com/mercado-lab/mercado/lab/shop"
	"github.com/mercado-lab/mercado/loadtest"
)

// IsolationConfig is Drill 76 on the shop: shipping's carrier goes slow
// (not down) while checkouts arrive open-loop and browsers keep browsing.
type IsolationConfig struct {
	// CheckoutRate and BrowseRate are requests per second.
	CheckoutRate, BrowseRate float64
	// Duration is how long each mode is loaded.
	Duration time.Duration
	// Deadline is every client's deadline.
	Deadline time.Duration
	// Hang is how long the slow carrier takes.
	Hang time.Duration
	// BreakerOpen is how long a breaker stays open (shorter than the
	// production 30 s, so the run shows it probing again).
	BreakerOpen time.Duration
	// Workers is each service's worker pool (the naive shared pool).
	Workers int
}

// DefaultIsolation is sized to fill the naive shared pool of 200 on a
// 2-core machine within the run, and to finish both modes in under 45 s.
func DefaultIsolation() IsolationConfig {
	return IsolationConfig{
		CheckoutRate: 100, BrowseRate: 20, Duration: 15 * time.Second,
		Deadline: time.Second, Hang: 5 * time.Second, BreakerOpen: 5 * time.Second,
		Workers: serve.DefaultResilience().Workers,
	}
}

// Validate reports a configuration the lab cannot run.
func (c IsolationConfig) Validate() error {
	switch {
	case c.CheckoutRate <= 0 || c.CheckoutRate > 2000 || c.BrowseRate <= 0 || c.BrowseRate > 2000:
		return fmt.Errorf("rates must be within (0, 2000] per second")
	case c.Duration < time.Second || c.Duration > 10*time.Minute:
		return fmt.Errorf("duration: %v is outside 1s to 10m", c.Duration)
	case c.Deadline < 10*time.Millisecond || c.Deadline > time.Minute:
		return fmt.Errorf("deadline: %v is outside 10ms to 1m", c.Deadline)
	case c.Hang <= 0 || c.Hang > 10*time.Minute:
		return fmt.Errorf("hang: %v is outside (0, 10m]", c.Hang)
	case c.BreakerOpen <= 0 || c.BreakerOpen > time.Hour:
		return fmt.Errorf("breaker-open: %v is outside (0, 1h]", c.BreakerOpen)
	case c.Workers < 1 || c.Workers > 10_000:
		return fmt.Errorf("workers: %d is outside 1 to 10000", c.Workers)
	}
	return nil
}

// IsolationMode is what one mode did.
type IsolationMode struct {
	BrowseRequests     int     `json:"browse_requests"`
	BrowseSuccessRatio float64 `json:"browse_success_ratio"`
	BrowseP99MS        float64 `json:"browse_p99_ms"`
	CheckoutRequests   int     `json:"checkout_requests"`
	CheckoutGood       int     `json:"checkout_good"`
	CheckoutP50MS      float64 `json:"checkout_p50_ms"`
	CheckoutP99MS      float64 `json:"checkout_p99_ms"`
	CheckoutMaxMS      float64 `json:"checkout_max_ms"`
	// PeakPoolInFlight is the most requests each pool held at once, by
	// "service/pool", sampled through the run.
	PeakPoolInFlight map[string]int `json:"peak_pool_in_flight"`
	BreakerOpens     int            `json:"breaker_opens"`
	// Skipped counts calls and requests not served, by reason, over the
	// whole shop.
	Skipped map[string]int `json:"skipped"`
	// LateWorkSeconds is work finished after the client had given up.
	LateWorkSeconds float64 `json:"late_work_seconds"`
	// Amplification is the calls shipping received per checkout sent.
	Amplification float64 `json:"amplification"`
	// Failures counts failed checkouts and browses by class of failure.
	CheckoutFailures map[string]int `json:"checkout_failures"`
	BrowseFailures   map[string]int `json:"browse_failures"`
}

// IsolationResult is the lab's two runs.
type IsolationResult struct {
	Config struct {
		CheckoutRate float64 `json:"checkout_rate"`
		BrowseRate   float64 `json:"browse_rate"`
		DurationS    float64 `json:"duration_s"`
		DeadlineMS   int64   `json:"deadline_ms"`
	} `json:"config"`
	Naive    IsolationMode `json:"naive"`
	Budgeted IsolationMode `json:"budgeted"`
}

// Isolation runs the scenario once per mode. progress, if set, is told
// how far each run has got.
func Isolation(ctx context.Context, cfg IsolationConfig, log *slog.Logger, progress func(mode string, done, total time.Duration)) (IsolationResult, error) {
	if err := cfg.Validate(); err != nil {
		return IsolationResult{}, err
	}
	var res IsolationResult
	res.Config.CheckoutRate, res.Config.BrowseRate = cfg.CheckoutRate, cfg.BrowseRate
	res.Config.DurationS, res.Config.DeadlineMS = cfg.Duration.Seconds(), cfg.Deadline.Milliseconds()
	for _, run := range []struct {
		m   mode.Mode
		out *IsolationMode
	}{{mode.Naive, &res.Naive}, {mode.Budgeted, &res.Budgeted}} {
		r, err := isolationOnce(ctx, cfg, run.m, log, progress)
		if err != nil {
			return IsolationResult{}, fmt.Errorf("%s run: %w", run.m, err)
		}
		*run.out = r
	}
	return res, nil
}

func isolationOnce(ctx context.Context, cfg IsolationConfig, m mode.Mode, log *slog.Logger,
	progress func(string, time.Duration, time.Duration)) (IsolationMode, error) {
	sc := shop.EphemeralConfig()
	sc.Shared.Mode, sc.Shared.Margin, sc.Shared.Floor = m, serve.DefaultMargin, serve.DefaultFloor
	sc.Shared.DrainTimeout = 200 * time.Millisecond
	r := serve.DefaultResilience()
	r.BreakerOpen, r.Workers = cfg.BreakerOpen, cfg.Workers
	sc.Shared.Resilience = r
	sc.Shipping.Faults = faults.Set{"CreateShipment": {Hang: cfg.Hang}}
	s, err := shop.Start(ctx, sc, log)
	if err != nil {
		return IsolationMode{}, err
	}
	defer s.Stop()

	peaks := &peakSampler{peaks: map[string]int{}}
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var sampling sync.WaitGroup
	sampling.Add(1)
	go func() {
		defer sampling.Done()
		peaks.run(sampleCtx, s)
	}()

	var body = `{"customer":"drill76","items":[{"sku":"tea-sencha","qty":1}],"address":"76 Vendor Road"}`
	checkout := loadtest.Class{
		Name: "checkout", Rate: cfg.CheckoutRate, Deadline: cfg.Deadline, Patience: cfg.Deadline + 4*time.Second,
		Request: func(base string, seq uint64) vegeta.Target {
			return vegeta.Target{Method: http.MethodPost, URL: base + "/api/checkout", Body: []byte(body),
				Header: http.Header{"Content-Type": {"application/json"},
					"Idempotency-Key": {fmt.Sprintf("isolation-%s-%d", m, seq)}}}
		},
	}
	browse := loadtest.Class{
		Name: "browse", Rate: cfg.BrowseRate, Deadline: cfg.Deadline, Patience: cfg.Deadline + 4*time.Second,
		Request: func(base string, _ uint64) vegeta.Target {
			return vegeta.Target{Method: http.MethodGet, URL: base + "/api/products"}
		},
	}
	tick := time.NewTicker(time.Second)
	start := time.Now()
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-tick.C:
				if progress != nil {
					progress(string(m), min(time.Since(start), cfg.Duration), cfg.Duration)
				}
			case <-done:
				return
			}
		}
	}()
	samples, err := loadtest.Run(ctx, loadtest.Options{Base: s.GatewayURL(), Duration: cfg.Duration}, checkout, browse)
	tick.Stop()
	close(done)
	stopSampling()
	sampling.Wait()
	if err != nil {
		return IsolationMode{}, err
	}
	if progress != nil {
		progress(string(m), cfg.Duration, cfg.Duration)
	}

	out := IsolationMode{PeakPoolInFlight: peaks.peaks, Skipped: map[string]int{}}
	cs := loadtest.Summarize("checkout", samples["checkout"], cfg.Deadline, cfg.Duration)
	bs := loadtest.Summarize("browse", samples["browse"], cfg.Deadline, cfg.Duration)
	out.CheckoutRequests, out.CheckoutGood = cs.Requests, cs.Good
	out.CheckoutP50MS, out.CheckoutP99MS, out.CheckoutMaxMS = cs.P50MS, cs.P99MS, cs.MaxMS
	out.CheckoutFailures, out.BrowseFailures = cs.Failures, bs.Failures
	out.BrowseRequests, out.BrowseSuccessRatio, out.BrowseP99MS = bs.Requests, bs.SuccessRatio, bs.P99MS

	client := &http.Client{Timeout: 5 * time.Second}
	var shippingCalls float64
	for _, p := range s.Processes() {
		fams, err := driver.Scrape(ctx, admin.Client{URL: "http://" + p.AdminAddr, HTTP: client})
		if err != nil {
			return IsolationMode{}, err
		}
		out.BreakerOpens += int(fams.Sum(telemetry.NameBreakerTransitions, map[string]string{"to": "open"}))
		for reason, n := range fams.ByLabel(telemetry.NameSkipped, "reason") {
			if n > 0 { // every reason is exported, at zero until its first skip
				out.Skipped[reason] += int(n)
			}
		}
		out.LateWorkSeconds += fams.Sum(telemetry.NameLateWork, nil)
		if p.Name == "shipping" {
			shippingCalls = fams.Sum(telemetry.NameRequests, nil)
		}
	}
	if cs.Requests > 0 {
		out.Amplification = shippingCalls / float64(cs.Requests)
	}
	return out, nil
}

// peakSampler reads every service's pool gauges through the run and keeps
// the highest value of each.
type peakSampler struct {
	mu    sync.Mutex
	peaks map[string]int
}

func (p *peakSampler) run(ctx context.Context, s *shop.Shop) {
	client := &http.Client{Timeout: time.Second}
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		for _, proc := range s.Processes() {
			fams, err := driver.Scrape(ctx, admin.Client{URL: "http://" + proc.AdminAddr, HTTP: client})
			if err != nil {
				continue
			}
			p.mu.Lock()
			for pool, v := range fams.ByLabel(telemetry.NamePoolInFlight, "pool") {
				key := proc.Name + "/" + pool
				p.peaks[key] = max(p.peaks[key], int(v))
			}
			p.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// WriteJSON writes r as indented JSON.
func (r IsolationResult) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the two modes side by side.
func (r IsolationResult) WriteTable(w io.Writer) {
	n, b := r.Naive, r.Budgeted
	fmt.Fprintf(w, "Shipping's carrier hangs; %.0f checkouts/s and %.0f browses/s for %.0f s per mode; every client waits %d ms.\n\n",
		r.Config.CheckoutRate, r.Config.BrowseRate, r.Config.DurationS, r.Config.DeadlineMS)
	fmt.Fprintf(w, "%-34s %16s %16s\n", "", "naive", "budgeted")
	row := func(name, a, c string) { fmt.Fprintf(w, "%-34s %16s %16s\n", name, a, c) }
	pct := func(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }
	msf := func(x float64) string { return fmt.Sprintf("%.0f ms", x) }
	row("browse success (within deadline)", pct(n.BrowseSuccessRatio), pct(b.BrowseSuccessRatio))
	row("browse p99", msf(n.BrowseP99MS), msf(b.BrowseP99MS))
	row("checkout p50", msf(n.CheckoutP50MS), msf(b.CheckoutP50MS))
	row("checkout p99", msf(n.CheckoutP99MS), msf(b.CheckoutP99MS))
	row("checkout max", msf(n.CheckoutMaxMS), msf(b.CheckoutMaxMS))
	row("checkouts that succeeded in time", fmt.Sprintf("%d/%d", n.CheckoutGood, n.CheckoutRequests), fmt.Sprintf("%d/%d", b.CheckoutGood, b.CheckoutRequests))
	row("peak gateway pool in flight", peakOf(n.PeakPoolInFlight, "gateway/"), peakOf(b.PeakPoolInFlight, "gateway/"))
	row("breaker opens", strconv.Itoa(n.BreakerOpens), strconv.Itoa(b.BreakerOpens))
	row("late work (after the client left)", fmt.Sprintf("%.1f s", n.LateWorkSeconds), fmt.Sprintf("%.1f s", b.LateWorkSeconds))
	row("shipping calls per checkout", fmt.Sprintf("%.2f", n.Amplification), fmt.Sprintf("%.2f", b.Amplification))
	for _, reason := range skipReasons(n.Skipped, b.Skipped) {
		row("skipped: "+reason, strconv.Itoa(n.Skipped[reason]), strconv.Itoa(b.Skipped[reason]))
	}
	fmt.Fprintln(w, "\nEvery figure above was measured: client-side from each request's intended send time,")
	fmt.Fprintln(w, "server-side from the services' /metrics.")
}

// peakOf is the highest peak among the inbound pools (not the pools of
// calls to a dependency) whose name starts with prefix.
func peakOf(peaks map[string]int, prefix string) string {
	best, name := 0, ""
	for pool, v := range peaks {
		inbound := !strings.Contains(pool, "/to.") && !strings.HasSuffix(pool, "/outbound")
		if strings.HasPrefix(pool, prefix) && inbound && (v > best || v == best && pool < name) {
			best, name = v, pool
		}
	}
	if name == "" {
		return "-"
	}
	return fmt.Sprintf("%d (%s)", best, strings.TrimPrefix(name, prefix))
}

func skipReasons(maps ...map[string]int) []string {
	seen := map[string]bool{}
	for _, m := range maps {
		for k := range m {
			seen[k] = true
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
