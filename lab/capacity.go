package lab

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/serve"
	"github.com/mercado-lab/mercado/internal/setting"
	"github.com/mercado-lab/mercado/lab/shop"
	"github.com/mercado-lab/mercado/loadtest"
)

// CapacityConfig is a search for the highest checkout rate the shop
// sustains, open loop, through the whole chain.
type CapacityConfig struct {
	// Modes are searched one after the other, each on a fresh shop.
	Modes []mode.Mode
	// DatabaseURL keeps the services' state on this PostgreSQL server,
	// each mode's in a database of its own; empty keeps it in memory.
	DatabaseURL string
	// DBMaxConns is each service's database pool on PostgreSQL.
	DBMaxConns int
	// P99 is the bound a sustained rate's p99 latency must stay within.
	P99 time.Duration
	// IdleTimes, when above 0, replaces P99 with that multiple of the
	// idle checkout's median (the higher of the modes', at IdleRate,
	// measured first): a bound relative to what the store itself takes,
	// where a fixed one would only say how fast the disk is. The median,
	// not the idle p99: a hundred idle checkouts' p99 is their second
	// slowest, one stray commit.
	IdleTimes float64
	// Step is how long each rate is held.
	Step time.Duration
	// Start is the first rate tried. While rates hold it doubles (the
	// last step up is Max itself) until one fails; if Start itself fails
	// it halves until a rate holds. Then Refine bisections narrow the gap
	// between the highest rate that held and the lowest that failed.
	Start  float64
	Max    float64
	Refine int
	// Deadline is the clients' deadline.
	Deadline time.Duration
	// Mechanisms switch single mechanisms on top of each mode, in the
	// --mechanisms syntax ("bulkheads=off"), to price one at a time.
	Mechanisms mode.Overrides
	// Basket is what the checkouts buy (its popularity is a flag).
	Basket loadtest.Basket

	// databases are the modes' own databases on DatabaseURL's server,
	// which Capacity creates and drops.
	databases map[mode.Mode]string
}

// DefaultCapacity searches both modes on the memory store for p99 ≤ 25 ms.
// The modes and the clients' deadline are no settings of Settings: the
// modes' flag is a list the command parses, and the deadline has no
// flag.
func DefaultCapacity() CapacityConfig {
	c := CapacityConfig{Modes: []mode.Mode{mode.Naive, mode.Budgeted}, Deadline: time.Second}
	setting.Default(c.Settings()...)
	return c
}

// Settings declares the search's settings, each once: its flag, default,
// range and help. A rate's range is the search's; that start is at most
// max is checked in Validate.
func (c *CapacityConfig) Settings() []setting.Setting {
	return []setting.Setting{
		setting.Var(&c.Mechanisms, "mechanisms", "", "switch single mechanisms on top of each mode, e.g. bulkheads=off,outbox=off",
			func() error { return c.Mechanisms.Validate() }),
		setting.String(&c.Basket.Popularity, "popularity", loadtest.PopularityZipf,
			"how checkouts choose among the catalogue's products: zipf (exponent 1.1), uniform, or one (every checkout the same product)",
			func(string) error { return errors.Join(c.Basket.Validate()...) }),
		setting.String(&c.DatabaseURL, "database-url", "", "keep the services' state on this PostgreSQL server (default: in memory): each mode's in a database of its own, created and dropped by the lab", nil),
		setting.Int(&c.DBMaxConns, "db-max-conns", serve.DefaultDBMaxConns, setting.Within(1, 1000), "each service's database pool, with --database-url"),
		setting.Duration(&c.P99, "p99", 25*time.Millisecond, setting.Within(time.Millisecond, 10*time.Second),
			"the p99 latency a sustained rate must stay within"),
		setting.Float(&c.IdleTimes, "idle-times", 0, setting.Within(0.0, 100),
			"instead of --p99, hold p99 within this multiple of the idle checkout's median, measured first (e.g. 8 on PostgreSQL)"),
		setting.Duration(&c.Step, "step", 5*time.Second, setting.Within(500*time.Millisecond, 5*time.Minute), "how long each rate is held"),
		setting.Float(&c.Start, "start", 100, setting.Within(1.0, 20_000),
			"the first rate tried (checkouts/s); it doubles while rates hold, halves while they fail"),
		setting.Float(&c.Max, "max", 5000, setting.Within(1.0, 20_000),
			"the highest rate tried, the last step up (a shop that holds it is reported at the search's ceiling)"),
		setting.Int(&c.Refine, "refine", 3, setting.Within(0, 10), "bisections between the highest rate that held and the lowest that failed"),
	}
}

// Validate reports every problem with a configuration the lab cannot
// run: its settings out of range, and those bounded by another.
func (c CapacityConfig) Validate() error {
	errs := []error{setting.Check(c.Settings()...)}
	if c.Max < c.Start {
		errs = append(errs, fmt.Errorf("max: %v is below start (%v)", c.Max, c.Start))
	}
	if c.IdleTimes > 0 && c.IdleTimes < 2 {
		errs = append(errs, fmt.Errorf("idle-times: %v is below 2: no rate's p99 is held within about its idle median", c.IdleTimes))
	}
	if c.Deadline < c.P99 || c.Deadline > time.Minute {
		errs = append(errs, fmt.Errorf("deadline: %v must be at least the p99 bound and at most 1m", c.Deadline))
	}
	if len(c.Modes) == 0 {
		errs = append(errs, errors.New("modes: at least one"))
	}
	for _, m := range c.Modes {
		if _, err := mode.Parse(string(m)); err != nil {
			errs = append(errs, fmt.Errorf("modes: %w", err))
		}
	}
	return errors.Join(errs...)
}

// CapacityStep is one rate held for one step.
type CapacityStep struct {
	Rate  float64 `json:"rate"`
	Sent  int     `json:"sent"`
	Good  int     `json:"good"`
	P50MS float64 `json:"p50_ms"`
	P99MS float64 `json:"p99_ms"`
	// P99LoMS and P99HiMS are the p99's 95% interval; Holds how many
	// times the rate was held, its samples pooled (maxHolds).
	P99LoMS  float64 `json:"p99_lo_ms"`
	P99HiMS  float64 `json:"p99_hi_ms"`
	Holds    int     `json:"holds"`
	LagP99MS float64 `json:"schedule_lag_p99_ms"`
	// CPUS is the process's CPU time while the rate was held (shop and
	// generator).
	CPUS      float64 `json:"cpu_s"`
	Sustained bool    `json:"sustained"`
	// Why says what a rate that was not sustained broke, or how one
	// whose interval never left the bound was decided.
	Why string `json:"why,omitempty"`
}

// CapacityMode is one mode's search.
type CapacityMode struct {
	Mode  string         `json:"mode"`
	Steps []CapacityStep `json:"steps"`
	// MaxRate is the highest rate sustained (0: none was).
	MaxRate float64 `json:"max_sustained_rate"`
	// AtCeiling says MaxRate is the search's own ceiling (Max): the shop
	// may hold more.
	AtCeiling bool `json:"at_ceiling,omitempty"`
	// CPUSecondsPerCheckout is the process's CPU time per good checkout
	// over the measured steps, load generator included.
	CPUSecondsPerCheckout float64 `json:"cpu_seconds_per_checkout"`
}

// CapacityResult is the search in every mode.
type CapacityResult struct {
	Store string  `json:"store"`
	P99MS float64 `json:"p99_bound_ms"`
	// IdleP50MS is each mode's idle checkout's median, by mode, when the
	// bound is a multiple of it (CapacityConfig.IdleTimes).
	IdleP50MS map[string]float64 `json:"idle_p50_ms,omitempty"`
	IdleTimes float64            `json:"idle_times,omitempty"`
	StepS     float64            `json:"step_s"`
	Modes     []CapacityMode     `json:"modes"`
	Overhead  *Overhead          `json:"overhead,omitempty"`
}

// Overhead is what the budgeted mode costs against the naive one when
// nothing is wrong: throughput is the ratio of their highest sustained
// rates; latency their p50s at the same rate (half the lower maximum,
// where both are comfortably within the bound).
type Overhead struct {
	Rate             float64 `json:"rate"`
	NaiveP50MS       float64 `json:"naive_p50_ms"`
	BudgetedP50MS    float64 `json:"budgeted_p50_ms"`
	P50Ratio         float64 `json:"p50_ratio"`
	ThroughputRatio  float64 `json:"throughput_ratio"`
	NaiveMaxRate     float64 `json:"naive_max_rate"`
	BudgetedMaxRate  float64 `json:"budgeted_max_rate"`
	ComparisonStepsS float64 `json:"comparison_step_s"`
}

// Capacity searches each mode for the highest checkout rate whose p99
// stays within the bound with every request answered well, the load
// generator keeping its schedule. Every rate is held on a freshly started
// shop. The generator shares the machine with the shop, as a learner's
// laptop does.
func Capacity(ctx context.Context, cfg CapacityConfig, log *slog.Logger, progress func(string)) (CapacityResult, error) {
	res := CapacityResult{Store: "memory", P99MS: ms(cfg.P99), StepS: cfg.Step.Seconds()}
	say := func(format string, args ...any) {
		if progress != nil {
			progress(fmt.Sprintf(format, args...))
		}
	}
	if cfg.DatabaseURL != "" {
		// A database of its own for each mode: in one shared database the
		// second mode's search would meet the rows, the dead tuples and
		// the checkpoints of the first's thousands of checkouts.
		res.Store = "postgres"
		cfg.databases = map[mode.Mode]string{}
		for _, m := range cfg.Modes {
			u, drop, err := modeDatabase(ctx, cfg.DatabaseURL, m)
			if err != nil {
				return CapacityResult{}, err
			}
			defer drop()
			cfg.databases[m] = u
		}
	}
	if cfg.IdleTimes > 0 {
		bound, idle, err := idleBound(ctx, cfg, log, say)
		if err != nil {
			return CapacityResult{}, err
		}
		cfg.P99, res.P99MS, res.IdleP50MS, res.IdleTimes = bound, ms(bound), idle, cfg.IdleTimes
	}
	for _, m := range cfg.Modes {
		cm := CapacityMode{Mode: string(m)}
		var cpu float64
		good := 0
		hold := func(rate float64) (CapacityStep, error) {
			st, err := holdRateFresh(ctx, cfg, m, rate, log)
			if err != nil {
				return st, err
			}
			good, cpu = good+st.Good, cpu+st.CPUS
			cm.Steps = append(cm.Steps, st)
			verdict := "ok"
			if !st.Sustained {
				verdict = st.Why
			}
			say("%-9s %6.0f/s  p50 %6.1f ms  p99 %7.1f ms  %s", m, rate, st.P50MS, st.P99MS, verdict)
			return st, nil
		}
		if err := warmUp(ctx, cfg, m, log, say); err != nil {
			return CapacityResult{}, err
		}
		top, err := searchRate(cfg, func(rate float64) (bool, error) {
			st, err := hold(rate)
			return st.Sustained, err
		})
		if err != nil {
			return CapacityResult{}, err
		}
		cm.MaxRate, cm.AtCeiling = top, top == cfg.Max
		if good > 0 {
			cm.CPUSecondsPerCheckout = cpu / float64(good)
		}
		res.Modes = append(res.Modes, cm)
	}
	naive, budgeted := res.mode(mode.Naive), res.mode(mode.Budgeted)
	if naive == nil || budgeted == nil || naive.MaxRate == 0 || budgeted.MaxRate == 0 {
		return res, nil
	}
	// Both modes at the same comfortable rate, alternating, on fresh
	// shops: the p50 each adds when nothing is wrong.
	o := Overhead{Rate: math.Round(min(naive.MaxRate, budgeted.MaxRate) / 2), NaiveMaxRate: naive.MaxRate,
		BudgetedMaxRate: budgeted.MaxRate, ThroughputRatio: budgeted.MaxRate / naive.MaxRate, ComparisonStepsS: cfg.Step.Seconds()}
	for _, m := range []mode.Mode{mode.Naive, mode.Budgeted} {
		st, err := holdRateFresh(ctx, cfg, m, o.Rate, log)
		if err != nil {
			return CapacityResult{}, err
		}
		say("%-9s %6.0f/s  p50 %6.1f ms  (overhead comparison)", m, o.Rate, st.P50MS)
		if m == mode.Naive {
			o.NaiveP50MS = st.P50MS
		} else {
			o.BudgetedP50MS = st.P50MS
		}
	}
	if o.NaiveP50MS > 0 {
		o.P50Ratio = o.BudgetedP50MS / o.NaiveP50MS
	}
	res.Overhead = &o
	return res, nil
}

// IdleRate is the rate an idle checkout is measured at: low enough that
// no checkout waits for another.
const IdleRate = 20

// idleBound measures the idle checkout's median in each mode, on a fresh
// shop, and returns cfg.IdleTimes the highest of them (at most the
// clients' deadline): one bound for every mode, so that their rates
// compare.
func idleBound(ctx context.Context, cfg CapacityConfig, log *slog.Logger, say func(string, ...any)) (time.Duration, map[string]float64, error) {
	idle := map[string]float64{}
	var most float64
	for _, m := range cfg.Modes {
		st, err := holdRateFresh(ctx, cfg, m, IdleRate, log)
		if err != nil {
			return 0, nil, err
		}
		if st.Good < st.Sent {
			return 0, nil, fmt.Errorf("%s: the idle checkouts (%d/s) were not all answered well: %d of %d", m, IdleRate, st.Sent-st.Good, st.Sent)
		}
		idle[string(m)], most = st.P50MS, max(most, st.P50MS)
		say("%-9s %6d/s  p50 %6.1f ms  p99 %7.1f ms  (idle)", m, IdleRate, st.P50MS, st.P99MS)
	}
	bound := min(time.Duration(cfg.IdleTimes*most*float64(time.Millisecond)), cfg.Deadline)
	say("bound: p99 ≤ %.1f ms, %g × the idle median of %.1f ms", ms(bound), cfg.IdleTimes, most)
	return bound, idle, nil
}

// minRate is the lowest rate the search goes down to.
const minRate = 1

// searchRate finds the highest rate for which hold reports true. From
// cfg.Start it halves while rates fail, until one holds, then doubles while
// rates hold; cfg.Refine bisections then narrow the gap between the
// highest rate that held and the lowest that failed. It returns 0 only
// when even minRate fails.
//
// After a failing start, the way up tries the rate that failed just above
// the one that held once more, on a fresh shop: one step's p99 is one
// step's tail, and a first rate that fails by a hair would otherwise bound
// the search for good. So the figure does not depend on where the search
// began (on PostgreSQL, a search started at 100/s read naive 94/s after
// its first step failed at p99 25.4 ms, one started at 25/s read 400/s).
func searchRate(cfg CapacityConfig, hold func(rate float64) (bool, error)) (float64, error) {
	rate := cfg.Start
	ok, err := hold(rate)
	for err == nil && !ok && rate > minRate {
		rate = max(math.Round(rate/2), minRate)
		ok, err = hold(rate)
	}
	if err != nil || !ok {
		return 0, err
	}
	lo, hi := rate, 0.0 // the highest rate that held, the lowest that failed
	for hi == 0 && rate < cfg.Max {
		rate = min(rate*2, cfg.Max)
		if ok, err = hold(rate); err != nil {
			return 0, err
		}
		if ok {
			lo = rate
		} else {
			hi = rate
		}
	}
	for range cfg.Refine {
		mid := math.Round((lo + hi) / 2)
		if hi == 0 || mid == lo || mid == hi {
			break
		}
		if ok, err = hold(mid); err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// warmUp sends checkouts through a shop that is then thrown away, before
// a mode's first step, so that no step pays for a cold store: a fresh
// PostgreSQL database's migrations, empty caches and first table pages.
// Each step still warms its own fresh shop (connections, prepared
// statements) at its own rate before it measures.
func warmUp(ctx context.Context, cfg CapacityConfig, m mode.Mode, log *slog.Logger, say func(string, ...any)) error {
	rate := min(cfg.Start, warmRate)
	say("%-9s %6.0f/s  for %.1f s to warm the store and the shop (not counted)", m, rate, cfg.Step.Seconds())
	s, err := startCapacityShop(ctx, cfg, m, log)
	if err != nil {
		return err
	}
	defer func() {
		if err := s.Stop(); err != nil {
			log.Warn("stopping the shop", "err", err)
		}
	}()
	b, err := newBuyer(ctx, s.GatewayURL(), cfg.Basket)
	if err != nil {
		return err
	}
	if err := warmConnections(ctx, b, fmt.Sprintf("warmup-conns-%s", m), cfg.DBMaxConns); err != nil {
		return err
	}
	c := loadtest.Class{Name: "checkout", Rate: rate, Deadline: cfg.Deadline, Request: b.checkouts(fmt.Sprintf("warmup-%s", m))}
	_, err = loadtest.Run(ctx, loadtest.Options{Base: b.base, Duration: cfg.Step}, c)
	return err
}

// warmConnections sends warmRounds rounds of conns checkouts at once (a
// service's database pool, CapacityConfig.DBMaxConns),
// so that every connection of every service's database pool is opened
// and has run a checkout's statements (its server process's caches, the
// driver's prepared statements) before anything is measured. A timed
// warm-up alone leaves most of them cold at a low rate: a few checkouts a
// second spread over ten fresh connections a service each paid for the
// cold connections in every checkout. Their answers are not judged.
func warmConnections(ctx context.Context, b buyer, keyPrefix string, conns int) error {
	base, request := b.base, b.checkouts(keyPrefix)
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	seq := uint64(0)
	for range warmRounds {
		var wg sync.WaitGroup
		for range conns {
			seq++
			target := request(base, seq)
			wg.Go(func() {
				req, err := target.Request()
				if err != nil {
					return
				}
				resp, err := client.Do(req.WithContext(ctx))
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			})
		}
		wg.Wait()
	}
	return ctx.Err()
}

// warmRounds is how many rounds of checkouts warmConnections sends.
const warmRounds = 3

// warmRate is the highest rate warmUp sends at: gentle enough for a cold
// PostgreSQL store on two cores.
const warmRate = 25

func (r CapacityResult) mode(m mode.Mode) *CapacityMode {
	i := slices.IndexFunc(r.Modes, func(c CapacityMode) bool { return c.Mode == string(m) })
	if i < 0 {
		return nil
	}
	return &r.Modes[i]
}

// holdRateFresh holds one rate on a freshly started shop, after a
// warm-up that is not counted (every connection used, then a short run
// at that rate): each step measures the rate itself, not a cold shop, nor
// the backlog or the heap a failed step before it left.
func holdRateFresh(ctx context.Context, cfg CapacityConfig, m mode.Mode, rate float64, log *slog.Logger) (CapacityStep, error) {
	s, err := startCapacityShop(ctx, cfg, m, log)
	if err != nil {
		return CapacityStep{}, err
	}
	defer func() {
		if err := s.Stop(); err != nil {
			log.Warn("stopping the shop", "err", err)
		}
	}()
	b, err := newBuyer(ctx, s.GatewayURL(), cfg.Basket)
	if err != nil {
		return CapacityStep{}, err
	}
	// Keys of their own: on PostgreSQL every shop of a mode's search shares one
	// database, and a rate held twice (the search's second try, the
	// overhead comparison) under the same keys would be answered from the
	// keys' stored answers, at no cost.
	step := fmt.Sprintf("%s-%v-%s", m, rate, rand.Text()[:8])
	if err := warmConnections(ctx, b, "conns-"+step, cfg.DBMaxConns); err != nil {
		return CapacityStep{}, err
	}
	warm := loadtest.Class{Name: "checkout", Rate: rate, Deadline: cfg.Deadline, Request: b.checkouts("warm-" + step)}
	if _, err := loadtest.Run(ctx, loadtest.Options{Base: b.base, Duration: min(time.Second, cfg.Step/5)}, warm); err != nil {
		return CapacityStep{}, err
	}
	cpu0 := processCPU()
	st, err := holdRate(ctx, b, rate, cfg, "cap-"+step)
	st.CPUS = (processCPU() - cpu0).Seconds()
	return st, err
}

func startCapacityShop(ctx context.Context, cfg CapacityConfig, m mode.Mode, log *slog.Logger) (*shop.Shop, error) {
	sc := shop.EphemeralConfig()
	sc.Shared.Mode, sc.Shared.Margin, sc.Shared.Floor = m, serve.DefaultMargin, serve.DefaultFloor
	sc.Shared.DrainTimeout = time.Second
	sc.Shared.Overrides = cfg.Mechanisms
	if cfg.DatabaseURL != "" {
		sc.Shared.DatabaseURL, sc.Shared.DBMaxConns = cfg.DatabaseURL, cfg.DBMaxConns
		if u, ok := cfg.databases[m]; ok { // Capacity made it
			sc.Shared.DatabaseURL = u
		}
	}
	return shop.Start(ctx, sc, log)
}

// buyer sends a capacity step's checkouts: a shop, and the catalogue its
// checkouts buy from.
type buyer struct {
	base   string
	cat    loadtest.Catalogue
	basket loadtest.Basket
}

func newBuyer(ctx context.Context, base string, b loadtest.Basket) (buyer, error) {
	cat, err := loadtest.ReadCatalogue(ctx, base)
	return buyer{base: base, cat: cat, basket: b}, err
}

func (b buyer) checkouts(keyPrefix string) func(string, uint64) vegeta.Target {
	return loadtest.CheckoutRequest(keyPrefix, b.cat, b.basket)
}

// maxHolds is how many times a rate may be held for one step. One step's
// p99 is one step's tail: its 95% interval (loadtest.PercentileInterval)
// often holds the bound, so a single reading would pass or fail the rate
// on chance. A step whose interval straddles the bound is held again, its
// samples pooled, which narrows the interval, until the interval is on
// one side of the bound or the holds run out; then the point p99 decides,
// and the step says so.
const maxHolds = 3

// holdRate sends checkouts at rate for one step (held up to maxHolds
// times) and judges the step.
func holdRate(ctx context.Context, b buyer, rate float64, cfg CapacityConfig, keyPrefix string) (CapacityStep, error) {
	var samples []loadtest.Sample
	var st CapacityStep
	for hold := 1; hold <= maxHolds; hold++ {
		c := loadtest.Class{Name: "checkout", Rate: rate, Deadline: cfg.Deadline, Request: b.checkouts(fmt.Sprintf("%s-%d", keyPrefix, hold))}
		got, err := loadtest.Run(ctx, loadtest.Options{Base: b.base, Duration: cfg.Step}, c)
		if err != nil {
			return CapacityStep{}, err
		}
		samples = append(samples, got["checkout"]...)
		var straddles bool
		st, straddles = judgeStep(samples, rate, hold, cfg)
		if !straddles {
			break
		}
	}
	return st, ctx.Err()
}

// judgeStep judges the samples of a rate held holds times: whether the
// rate was sustained, and whether the p99's interval straddles the bound
// (so that another hold could decide it).
func judgeStep(samples []loadtest.Sample, rate float64, holds int, cfg CapacityConfig) (st CapacityStep, straddles bool) {
	sum := loadtest.Summarize("checkout", samples, cfg.Deadline, time.Duration(holds)*cfg.Step)
	lags := make([]time.Duration, 0, len(samples))
	lat := make([]time.Duration, 0, len(samples))
	for _, s := range samples {
		lags = append(lags, s.Sent.Sub(s.Intended))
		lat = append(lat, s.Latency)
	}
	slices.Sort(lags)
	slices.Sort(lat)
	lo, hi := loadtest.PercentileInterval(lat, 99)
	st = CapacityStep{Rate: rate, Holds: holds, Sent: sum.Requests, Good: sum.Good, P50MS: sum.P50MS, P99MS: sum.P99MS,
		P99LoMS: ms(lo), P99HiMS: ms(hi), LagP99MS: ms(loadtest.Percentile(lags, 99))}
	want := rate * cfg.Step.Seconds() * float64(holds)
	bound := ms(cfg.P99)
	switch {
	case float64(sum.Requests) < 0.99*want:
		st.Why = fmt.Sprintf("generator sent %d of %.0f", sum.Requests, want)
	case sum.Good < sum.Requests:
		st.Why = fmt.Sprintf("%d of %d not answered well in time", sum.Requests-sum.Good, sum.Requests)
	case st.P99HiMS <= bound:
		st.Sustained = true
	case st.P99LoMS > bound:
		st.Why = fmt.Sprintf("p99 %.1f ms (%.1f–%.1f) > %.0f ms", st.P99MS, st.P99LoMS, st.P99HiMS, bound)
	case holds < maxHolds:
		return st, true
	case st.P99MS <= bound:
		st.Sustained, st.Why = true, fmt.Sprintf("by its p99 after %d holds: the interval holds %.0f ms", holds, bound)
	default:
		st.Why = fmt.Sprintf("p99 %.1f ms > %.0f ms after %d holds (the interval holds it)", st.P99MS, bound, holds)
	}
	return st, false
}

// WriteJSON writes the result as indented JSON.
func (r CapacityResult) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteTable writes every step and the verdict.
func (r CapacityResult) WriteTable(w io.Writer) {
	bound := fmt.Sprintf("p99 ≤ %.0f ms", r.P99MS)
	if r.IdleTimes > 0 {
		var idle []string
		for _, m := range slices.Sorted(maps.Keys(r.IdleP50MS)) {
			idle = append(idle, fmt.Sprintf("%s %.1f ms", m, r.IdleP50MS[m]))
		}
		bound = fmt.Sprintf("p99 ≤ %.1f ms (%g × the idle checkout's median: %s)", r.P99MS, r.IdleTimes, strings.Join(idle, ", "))
	}
	fmt.Fprintf(w, "Capacity: checkouts through the whole chain, %s store, open loop, %s, %.0f s per rate.\n\n", r.Store, bound, r.StepS)
	fmt.Fprintf(w, "%-9s %8s %6s %8s %9s %9s %17s %10s  %s\n", "mode", "rate/s", "holds", "good", "p50 ms", "p99 ms", "p99 95% interval", "lag p99", "verdict")
	for _, m := range r.Modes {
		for _, s := range m.Steps {
			verdict := "sustained"
			switch {
			case s.Sustained && s.Why != "":
				verdict += " " + s.Why
			case !s.Sustained:
				verdict = s.Why
			}
			fmt.Fprintf(w, "%-9s %8.0f %6d %8d %9.1f %9.1f %17s %7.1f ms  %s\n", m.Mode, s.Rate, s.Holds, s.Good, s.P50MS, s.P99MS,
				fmt.Sprintf("%.1f–%.1f", s.P99LoMS, s.P99HiMS), s.LagP99MS, verdict)
		}
	}
	fmt.Fprintln(w)
	for _, m := range r.Modes {
		fmt.Fprintf(w, "%-9s highest sustained rate: %.0f checkouts/s (%.2f ms of CPU per checkout, generator included)\n",
			m.Mode, m.MaxRate, 1000*m.CPUSecondsPerCheckout)
		if m.AtCeiling {
			fmt.Fprintf(w, "%-9s   that is the search's ceiling (--max): the shop may hold more\n", "")
		}
	}
	if o := r.Overhead; o != nil {
		fmt.Fprintf(w, "\nWhat budgets cost when nothing is wrong: throughput %.2fx (%.0f vs %.0f/s); p50 at %.0f/s %.2f vs %.2f ms (%+.1f%%).\n",
			o.ThroughputRatio, o.BudgetedMaxRate, o.NaiveMaxRate, o.Rate, o.BudgetedP50MS, o.NaiveP50MS, 100*(o.P50Ratio-1))
	}
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Microsecond)) / 1000 }
