package lab

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/setting"
	"github.com/mercado-lab/mercado/internal/sim"
	"github.com/mercado-lab/mercado/loadtest"
	"github.com/mercado-lab/mercado/loadtest/report"
)

// IsolationConfig is Drill 76 (the drill76 scenario,
// loadtest/scenarios/drill76.yaml) with its knobs: shipping's carrier goes
// slow (not down) while checkouts arrive open-loop and browsers keep
// browsing. DefaultIsolation reads them from the scenario.
type IsolationConfig struct {
	// CheckoutRate and BrowseRate are requests per second.
	CheckoutRate, BrowseRate float64
	// Duration is how long the carrier hangs; WarmUp and Recovery are the
	// calm phases before and after.
	Duration, WarmUp, Recovery time.Duration
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

// drill76 is the scenario the isolation lab shows: a calm phase, the
// phase in which shipping's carrier hangs, and a calm one again.
const drill76 = "drill76"

// drill76Phases finds the three phases of sc: the hang is the phase that
// puts a fault on shipping.
func drill76Phases(sc loadtest.Scenario) (warmUp, hang, recovery *loadtest.Phase, err error) {
	if len(sc.Phases) != 3 || sc.Phases[1].Faults["shipping"] == "" {
		return nil, nil, nil, fmt.Errorf("scenario %s: want three phases, shipping's fault in the second", sc.Name)
	}
	return &sc.Phases[0], &sc.Phases[1], &sc.Phases[2], nil
}

// DefaultIsolation is Drill 76 as the drill76 scenario runs it: sized to
// fill the naive shared pool of 200 on a 2-core machine.
func DefaultIsolation() (IsolationConfig, error) {
	sc, err := loadtest.LoadScenario(drill76)
	if err != nil {
		return IsolationConfig{}, err
	}
	warmUp, hang, recovery, err := drill76Phases(sc)
	if err != nil {
		return IsolationConfig{}, err
	}
	carrier, err := faults.Parse(hang.Faults["shipping"])
	if err != nil {
		return IsolationConfig{}, err
	}
	return IsolationConfig{
		CheckoutRate: sc.Classes["checkout"].Rate, BrowseRate: sc.Classes["browse"].Rate,
		Duration: time.Duration(hang.Duration), WarmUp: time.Duration(warmUp.Duration), Recovery: time.Duration(recovery.Duration),
		Deadline: time.Duration(sc.Deadline), Hang: carrier[sim.ShippingCreateShipment].Hang,
		BreakerOpen: time.Duration(sc.Shop.BreakerOpen), Workers: sc.Shop.Workers,
	}, nil
}

// Settings declares the drill's flags, each once: its range and help.
// Their defaults are the drill76 scenario's, which DefaultIsolation reads
// from its file, so each setting's default is the value c holds.
func (c *IsolationConfig) Settings() []setting.Setting {
	return []setting.Setting{
		setting.Float(&c.CheckoutRate, "checkout-rate", c.CheckoutRate, setting.Above(0.0, 2000), "checkouts per second, open loop"),
		setting.Float(&c.BrowseRate, "browse-rate", c.BrowseRate, setting.Above(0.0, 2000), "browses per second, open loop"),
		setting.Duration(&c.Duration, "duration", c.Duration, setting.Within(time.Second, 10*time.Minute),
			"how long the carrier hangs in each mode, between the drill's calm phases"),
		setting.Duration(&c.Deadline, "deadline", c.Deadline, setting.Within(10*time.Millisecond, time.Minute), "every client's deadline"),
		setting.Duration(&c.Hang, "hang", c.Hang, setting.Above(0, 10*time.Minute), "how long the slow carrier takes to answer"),
		setting.Duration(&c.BreakerOpen, "breaker-open", c.BreakerOpen, setting.Above(0, time.Hour), "how long an open breaker stays open"),
		setting.Int(&c.Workers, "workers", c.Workers, setting.Within(1, 10_000), "each service's worker pool (naive: shared by every route)"),
	}
}

// Validate reports every problem with a configuration the lab cannot
// run.
func (c IsolationConfig) Validate() error {
	// The warm-up and the recovery are the scenario's, with no flags:
	// checked here all the same.
	phases := []setting.Setting{
		setting.Duration(&c.WarmUp, "warm-up", c.WarmUp, setting.Within(time.Second, 10*time.Minute), ""),
		setting.Duration(&c.Recovery, "recovery", c.Recovery, setting.Within(time.Second, 10*time.Minute), ""),
	}
	return setting.Check(append(c.Settings(), phases...)...)
}

// Scenario is the drill76 scenario with c's knobs turned.
func (c IsolationConfig) Scenario() (loadtest.Scenario, error) {
	if err := c.Validate(); err != nil {
		return loadtest.Scenario{}, err
	}
	sc, err := loadtest.LoadScenario(drill76)
	if err != nil {
		return loadtest.Scenario{}, err
	}
	sc.Phases = slices.Clone(sc.Phases)
	warmUp, hang, recovery, err := drill76Phases(sc)
	if err != nil {
		return loadtest.Scenario{}, err
	}
	sc.Classes = maps.Clone(sc.Classes)
	sc.Classes["checkout"] = loadtest.ClassSpec{Rate: c.CheckoutRate}
	sc.Classes["browse"] = loadtest.ClassSpec{Rate: c.BrowseRate}
	// A phase whose length the config changes drops the file's quick
	// length: it was chosen for the file's length, and may exceed the new one.
	for _, l := range []struct {
		phase *loadtest.Phase
		d     time.Duration
	}{{warmUp, c.WarmUp}, {hang, c.Duration}, {recovery, c.Recovery}} {
		if l.phase.Duration != loadtest.Duration(l.d) {
			l.phase.Duration, l.phase.Quick = loadtest.Duration(l.d), 0
		}
	}
	hang.Faults = map[string]string{"shipping": fmt.Sprintf("%s:hang=%s", sim.ShippingCreateShipment, c.Hang)}
	sc.Deadline = loadtest.Duration(c.Deadline)
	sc.Shop.Workers, sc.Shop.BreakerOpen = c.Workers, loadtest.Duration(c.BreakerOpen)
	return sc, sc.Validate()
}

// IsolationMode is what one mode did. The clients' figures are those of
// the requests sent while the carrier hung, and so are the calls shipping
// received (Amplification); the rest of the servers' figures are counted
// over the whole run, so that work still hung when the hang ended counts
// when it finishes.
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
	// "service/pool", over the run.
	PeakPoolInFlight map[string]int `json:"peak_pool_in_flight"`
	BreakerOpens     int            `json:"breaker_opens"`
	// Skipped counts calls and requests not served, by reason, over the
	// whole shop (only the reasons that happened).
	Skipped map[string]int `json:"skipped"`
	// LateWorkSeconds is work finished after the client had given up.
	LateWorkSeconds float64 `json:"late_work_seconds"`
	// Amplification is the bookings (CreateShipment calls) shipping
	// received per checkout sent, while the carrier hung.
	Amplification float64 `json:"amplification"`
	// Failures counts failed checkouts and browses by class of failure.
	CheckoutFailures map[string]int `json:"checkout_failures"`
	BrowseFailures   map[string]int `json:"browse_failures"`
	// Valid is false when the load generator fell behind its schedule:
	// Invalid says why, Advice what to do.
	Valid   bool   `json:"valid"`
	Invalid string `json:"invalid,omitempty"`
	Advice  string `json:"advice,omitempty"`
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
	// Checks are Drill 76's claims, measured on this run, and Verdict
	// what they say with the runs' validity weighed (loadtest.Results).
	Checks  []loadtest.CheckResult `json:"checks"`
	Verdict loadtest.Verdict       `json:"verdict"`
	// Run is the scenario run the figures were read from: what the HTML
	// page draws.
	Run loadtest.Results `json:"-"`
}

// Isolation runs Drill 76 — the drill76 scenario with cfg's knobs, on the
// scenario runner — and reads the lesson's figures from its results.
// progress, if set, is told how far each mode's run has got.
func Isolation(ctx context.Context, cfg IsolationConfig, log *slog.Logger, progress func(mode string, done, total time.Duration)) (IsolationResult, error) {
	return IsolationApart(ctx, cfg, log, progress, nil)
}

// IsolationApart is Isolation with each mode's load sent by gen (nil: in
// this process), as ScenarioApart.
func IsolationApart(ctx context.Context, cfg IsolationConfig, log *slog.Logger, progress func(mode string, done, total time.Duration), gen Generator) (IsolationResult, error) {
	sc, err := cfg.Scenario()
	if err != nil {
		return IsolationResult{}, err
	}
	sc.Modes = []mode.Mode{mode.Naive, mode.Budgeted}
	run, err := ScenarioApart(ctx, sc, log, ScenarioRun{Progress: progress, Generator: gen})
	if err != nil {
		return IsolationResult{}, err
	}
	return isolationView(cfg, run)
}

// isolationView reads the isolation lab's figures from a run of Drill 76
// (see IsolationMode): the hang is its second phase.
func isolationView(cfg IsolationConfig, run loadtest.Results) (IsolationResult, error) {
	res := IsolationResult{Run: run, Checks: run.Checks, Verdict: run.Verdict}
	res.Config.CheckoutRate, res.Config.BrowseRate = cfg.CheckoutRate, cfg.BrowseRate
	res.Config.DurationS, res.Config.DeadlineMS = cfg.Duration.Seconds(), cfg.Deadline.Milliseconds()
	for _, m := range []struct {
		name mode.Mode
		out  *IsolationMode
	}{{mode.Naive, &res.Naive}, {mode.Budgeted, &res.Budgeted}} {
		i := slices.IndexFunc(run.Modes, func(r loadtest.ModeResult) bool { return r.Mode == string(m.name) })
		if i < 0 {
			return IsolationResult{}, fmt.Errorf("the run has no %s mode", m.name)
		}
		mr := run.Modes[i]
		if len(mr.Phases) != 3 {
			return IsolationResult{}, fmt.Errorf("%s: want Drill 76's three phases, the run has %d", m.name, len(mr.Phases))
		}
		hang := mr.Phases[1]
		checkout, browse := summaryOf(hang.Classes, "checkout"), summaryOf(hang.Classes, "browse")
		*m.out = IsolationMode{
			BrowseRequests: browse.Requests, BrowseSuccessRatio: browse.SuccessRatio, BrowseP99MS: browse.P99MS,
			CheckoutRequests: checkout.Requests, CheckoutGood: checkout.Good,
			CheckoutP50MS: checkout.P50MS, CheckoutP99MS: checkout.P99MS, CheckoutMaxMS: checkout.MaxMS,
			CheckoutFailures: checkout.Failures, BrowseFailures: browse.Failures,
			PeakPoolInFlight: map[string]int{}, Skipped: map[string]int{},
			BreakerOpens: int(mr.Server.BreakerOpens), LateWorkSeconds: mr.Server.LateWorkSeconds,
			Valid: mr.Valid, Invalid: mr.Invalid, Advice: mr.Advice,
		}
		for pool, series := range mr.PoolInFlight {
			m.out.PeakPoolInFlight[pool] = int(slices.Max(append(series, 0)))
		}
		for reason, n := range mr.Server.Skipped {
			m.out.Skipped[reason] = int(n)
		}
		if checkout.Requests > 0 {
			// The bookings alone: shipping also quotes the delivery, a
			// call of its own that the hang leaves alone.
			m.out.Amplification = hang.Server.MethodCalls[shippingBookings] / float64(checkout.Requests)
		}
	}
	return res, nil
}

// summaryOf is class's summary among sums (zero when it is not there).
func summaryOf(sums []loadtest.Summary, class string) loadtest.Summary {
	for _, s := range sums {
		if s.Class == class {
			return s
		}
	}
	return loadtest.Summary{}
}

// WriteHTML writes the run's report: the scenario report of Drill 76's
// run, charts and all.
func (r IsolationResult) WriteHTML(w io.Writer) error { return report.WriteHTML(w, r.Run) }

// WriteJSON writes r as indented JSON.
func (r IsolationResult) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteTable writes the two modes side by side, then Drill 76's checks
// and the verdict. A mode whose run was INVALID is marked so above the
// table, with why and what to do, and in its column's heading.
func (r IsolationResult) WriteTable(w io.Writer) {
	n, b := r.Naive, r.Budgeted
	fmt.Fprintf(w, "Drill 76: shipping's carrier hangs for %.0f s in each mode, between calm phases, under %.0f checkouts/s\n",
		r.Config.DurationS, r.Config.CheckoutRate)
	fmt.Fprintf(w, "and %.0f browses/s; every client waits %d ms. Clients and shipping's calls while the carrier hangs;\nthe other servers' figures over the whole run.\n\n",
		r.Config.BrowseRate, r.Config.DeadlineMS)
	head := map[string]string{"naive": "naive", "budgeted": "budgeted"}
	for _, m := range []struct {
		name string
		run  IsolationMode
	}{{"naive", n}, {"budgeted", b}} {
		if !m.run.Valid {
			head[m.name] += " (INVALID)"
			fmt.Fprintf(w, "!!! %s run INVALID: %s\n\n", m.name, m.run.Advice)
		}
	}
	fmt.Fprintf(w, "%-34s %16s %16s\n", "", head["naive"], head["budgeted"])
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
	if len(r.Checks) > 0 {
		report.WriteClaims(w, "Checks (the drill76 scenario's)", report.Claims(r.Checks))
	}
	if v := report.VerdictLine(loadtest.Results{Checks: r.Checks, Verdict: r.Verdict}); v != "" {
		fmt.Fprintf(w, "\nVerdict: %s\n", v)
	}
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

// shippingBookings names shipping's bookings among the calls a server
// figure counts by method.
var shippingBookings = sim.ServiceShipping + "/" + sim.ShippingCreateShipment
