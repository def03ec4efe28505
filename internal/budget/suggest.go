package budget

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/mercado-lab/mercado/internal/budgetcheck"
	"github.com/mercado-lab/mercado/internal/flagenv"
)

// Suggesting caps from what a shop measured. The rules, from the lessons:
//
//   - a read cap is the dependency's observed p99 plus a stated margin: a
//     cap below the p99 manufactures failures for requests that would
//     have succeeded, one far above it holds budget a sibling could use;
//   - a p99 needs calls to stand on: over fewer than a hundred it is no
//     better than the slowest call or two;
//   - a call that ran into its cap lasted the cap, so its p99 says only
//     "at least the cap";
//   - connecting is a handshake, not the dependency's work: Drill 76
//     gives it 2 s under an 8 s budget, a quarter, and a connect timeout
//     must stay well under the request budget, or a dependency whose
//     address accepts nothing spends all of it on the handshake;
//   - the caps along the critical path must fit the edge budget, or no
//     configuration fixes it (`mercado budget plan` says what would).

// HopObservation is one outbound call of a running shop: where it goes,
// the flag that caps it, its place in the request, and its hop histogram.
type HopObservation struct {
	// From is the calling service, To the dependency as the caller names
	// it ("fraud"), Callee the service that answers it ("payments").
	From, To, Callee string
	// Setting is the flag that sets the cap ("--fraud-cap").
	Setting string
	// Cap is the cap in force; zero means none.
	Cap time.Duration
	// Floor is the caller's floor when it clips calls to the budget: a
	// cap below it is doomed, so no suggestion goes under it.
	Floor time.Duration
	// Criticality, Stage, Parallel, Route and Method place the call in
	// its request, as budgetcheck.Call does.
	Criticality   string
	Stage         int
	Parallel      bool
	Route, Method string
	// Durations is the hop histogram (mercado_hop_duration_seconds) of
	// the calls made, every outcome but skipped merged; nil with none.
	Durations *dto.Histogram
	// TimedOut is how many of them ran into the cap.
	TimedOut uint64
}

// Margin is what a suggested cap adds to the p99: a share of it (0.2 for
// 20%) or a fixed duration.
type Margin struct {
	Share float64
	Fixed time.Duration
}

// DefaultMargin is 20% over the p99, the command's default.
var DefaultMargin = Margin{Share: 0.2}

// ParseMargin reads "20%" or a duration such as "30ms".
func ParseMargin(s string) (Margin, error) {
	if p, ok := strings.CutSuffix(strings.TrimSpace(s), "%"); ok {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || v < 0 || v > 1000 || math.IsNaN(v) {
			return Margin{}, fmt.Errorf("%q: want a share from 0%% to 1000%% such as 20%%, or a duration such as 30ms", s)
		}
		return Margin{Share: v / 100}, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d < 0 {
		return Margin{}, fmt.Errorf("%q: want a share such as 20%%, or a duration such as 30ms", s)
	}
	return Margin{Fixed: d}, nil
}

func (m Margin) String() string {
	if m.Fixed > 0 || m.Share == 0 {
		return flagDur(m.Fixed)
	}
	return strconv.FormatFloat(m.Share*100, 'f', -1, 64) + "%"
}

func (m Margin) add(p time.Duration) time.Duration {
	if m.Fixed > 0 || m.Share == 0 {
		return p + m.Fixed
	}
	return p + time.Duration(float64(p)*m.Share)
}

// SuggestOptions are Suggest's settings; the zero value is usable.
type SuggestOptions struct {
	// Margin over each p99: zero adds none (the command's default is
	// DefaultMargin).
	Margin Margin
	// Budget is the edge's budget (the interactive class's default): the
	// suggested caps along the critical path are checked against it, and
	// the connect timeout is a quarter of it. Zero: neither.
	Budget time.Duration
	// MinSamples is the fewest calls a p99 is trusted over; zero: 100.
	MinSamples uint64
}

// DefaultMinSamples: below a hundred calls, the 99th percentile is the
// slowest call or two.
const DefaultMinSamples = 100

// LessonsConnect is the lessons' connect timeout (Drill 76: 2 s under an
// 8 s budget), the most Suggest proposes.
const LessonsConnect = 2 * time.Second

// HopSuggestion is the cap proposed for one call.
type HopSuggestion struct {
	From, To string
	Setting  string
	// P99 and Samples are what the cap is based on; Current the cap in
	// force.
	P99     time.Duration
	Samples uint64
	Current time.Duration
	// Cap is the proposal; zero when the call has no calls yet.
	Cap time.Duration
	// Why is the justification: "orders → catalog: p99 212 ms over 1,204
	// calls + 20% = 260 ms".
	Why string
}

// Suggestion is Suggest's answer.
type Suggestion struct {
	Hops []HopSuggestion
	// ConnectTimeout is the proposed --connect-timeout (zero without a
	// budget), ConnectWhy its justification.
	ConnectTimeout time.Duration
	ConnectWhy     string
	// Paths are the critical paths with the suggested caps, one per
	// request of the edge, each against the budget.
	Paths []PathCheck
	// Warnings: p99s over too few calls, calls that ran into their cap,
	// paths that do not fit the budget.
	Warnings []string
	// Flags are command lines to paste (`mercado serve orders ...`, and
	// `mercado serve all ...`), Env the same as environment variables.
	Flags []string
	Env   []string
}

// PathCheck is one request's critical path with the suggested caps.
type PathCheck struct {
	Route  string
	Worst  time.Duration // the caps along it: stages add, a parallel stage costs its slowest
	Budget time.Duration
	Fits   bool
	Caps   string // "orders → catalog 260 ms + max(...)": what adds up
}

// Suggest proposes a read cap for every call in obs (p99 plus the margin,
// rounded up, never under the caller's floor), a connect timeout, and the
// flags and environment that set them. It is pure: obs come from
// ObserveHops, or from synthetic histograms in a test.
func Suggest(obs []HopObservation, opt SuggestOptions) Suggestion {
	if opt.MinSamples == 0 {
		opt.MinSamples = DefaultMinSamples
	}
	var s Suggestion
	caps := map[string]time.Duration{} // by From/To, for the paths
	for _, o := range obs {
		h := HopSuggestion{From: o.From, To: o.To, Setting: o.Setting, Current: o.Cap}
		name := o.From + " → " + o.To
		if o.Durations != nil {
			h.Samples = o.Durations.GetSampleCount()
		}
		caps[o.From+"/"+o.To] = o.Cap
		if h.Samples == 0 {
			h.Why = fmt.Sprintf("%s: no calls yet; %s stays %s", name, o.Setting, capText(o.Cap))
			s.Hops = append(s.Hops, h)
			continue
		}
		h.P99 = Quantile(0.99, o.Durations)
		raw := opt.Margin.add(h.P99)
		h.Cap = roundUp(raw)
		h.Why = fmt.Sprintf("%s: p99 %s over %s calls + %s = %s", name, msText(h.P99), thousands(h.Samples), opt.Margin, ms(h.Cap))
		if h.Cap < o.Floor {
			h.Cap = o.Floor
			h.Why += fmt.Sprintf(", raised to the floor at %s, %s (a shorter cap is doomed)", o.From, ms(o.Floor))
		}
		caps[o.From+"/"+o.To] = h.Cap
		if h.Samples < opt.MinSamples {
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s: a p99 over %d calls is no better than the slowest call or two; send at least %d before trusting its %s",
				name, h.Samples, opt.MinSamples, o.Setting))
		}
		if share := float64(o.TimedOut) / float64(h.Samples); share > 0.01 && o.Cap > 0 {
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s: %.1f%% of the calls ran into the cap in force (%s), and each lasted the cap: the true p99 is at least %s; raise %s, measure again, then ask again",
				name, 100*share, ms(o.Cap), ms(o.Cap), o.Setting))
		}
		s.Hops = append(s.Hops, h)
	}
	// Outer larger than inner: a call to a service that makes calls of
	// its own gets at least what those calls can take with the caps
	// suggested, so that the callee answers with its own error before
	// its caller gives up. Inner calls first: they come later in obs.
	for i := len(s.Hops) - 1; i >= 0; i-- {
		h, o := &s.Hops[i], obs[i]
		inner, _ := pathCost(obs, caps, o.Callee, o.Method, 0)
		if h.Cap == 0 || inner <= h.Cap {
			continue
		}
		h.Cap = roundUp(inner)
		caps[o.From+"/"+o.To] = h.Cap
		h.Why += fmt.Sprintf(", raised to %s, what the calls %s makes can take with these caps (outer larger than inner: %s answers with its own error before %s gives up)",
			ms(h.Cap), o.Callee, o.Callee, o.From)
	}
	if opt.Budget > 0 {
		held, who := shortestHeld(obs, caps, opt.Budget)
		s.ConnectTimeout = max(min(roundDown(held/4), LessonsConnect), 10*time.Millisecond)
		s.ConnectWhy = fmt.Sprintf("connect: a quarter of the shortest budget a calling service holds (%s: %s), at most the lessons' 2 s (Drill 76: 2 s under 8 s) = %s; a handshake is a few round trips, and a dependency whose address accepts nothing then costs a quarter of the budget, not all of it",
			who, ms(held), ms(s.ConnectTimeout))
		s.Paths = paths(obs, caps, opt.Budget)
		for _, p := range s.Paths {
			if !p.Fits {
				s.Warnings = append(s.Warnings, fmt.Sprintf("%s: the suggested caps along the critical path add up to %s, more than the %s edge budget (%s): no cap fixes that; `mercado budget plan` divides the budget and says what would",
					p.Route, ms(p.Worst), ms(p.Budget), p.Caps))
			}
		}
	}
	s.Flags, s.Env = pasteable(s)
	return s
}

// shortestHeld is the shortest budget a service that makes calls can
// hold, and where: the edge holds the budget; a service called with a
// cap, the shortest cap it is called with; called with none, what its
// caller holds. --connect-timeout is one figure for every service, so it
// must fit the shortest.
func shortestHeld(obs []HopObservation, caps map[string]time.Duration, budget time.Duration) (time.Duration, string) {
	var holds func(svc string, depth int) (time.Duration, string)
	holds = func(svc string, depth int) (time.Duration, string) {
		d, why := time.Duration(-1), ""
		for _, o := range obs {
			if o.Callee != svc || depth > len(obs) {
				continue
			}
			c, w := caps[o.From+"/"+o.To], fmt.Sprintf("%s, by %s %s", svc, o.From, o.Setting)
			if c <= 0 {
				c, w = holds(o.From, depth+1)
			}
			if d < 0 || c < d {
				d, why = c, w
			}
		}
		if d < 0 || d >= budget {
			return budget, svc + ", the edge budget"
		}
		return d, why
	}
	best, where := budget, "the gateway, the edge budget"
	for _, o := range obs {
		if d, w := holds(o.From, 0); d < best {
			best, where = d, w
		}
	}
	return best, where
}

// paths are the critical paths of the edge's requests (the calls of the
// service nobody calls), each call costing its cap, or what the callee's
// own calls cost when that is more: stages add up, a parallel stage costs
// its slowest, optional and fire-forward calls are off the path.
func paths(obs []HopObservation, caps map[string]time.Duration, budget time.Duration) []PathCheck {
	called := map[string]bool{}
	for _, o := range obs {
		called[o.Callee] = true
	}
	var out []PathCheck
	var seenRoutes []string
	for _, o := range obs {
		if called[o.From] || slices.Contains(seenRoutes, o.From+" "+o.Route) {
			continue
		}
		seenRoutes = append(seenRoutes, o.From+" "+o.Route)
		worst, parts := pathCost(obs, caps, o.From, o.Route, 0)
		out = append(out, PathCheck{Route: o.From + " " + o.Route, Worst: worst, Budget: budget, Fits: worst <= budget, Caps: parts})
	}
	return out
}

func pathCost(obs []HopObservation, caps map[string]time.Duration, from, route string, depth int) (time.Duration, string) {
	if depth > len(obs) {
		return 0, "" // a cycle; the shop has none
	}
	type stage struct {
		cost     time.Duration
		parallel bool
		parts    []string
	}
	stages := map[int]*stage{}
	var order []int
	for _, o := range obs {
		if o.From != from || (route != "" && o.Route != route) || o.Criticality == budgetcheck.Optional || o.Criticality == budgetcheck.FireForward {
			continue
		}
		one := caps[o.From+"/"+o.To]
		part := o.From + " → " + o.To + " " + capProse(one)
		if inner, innerParts := pathCost(obs, caps, o.Callee, o.Method, depth+1); inner > 0 && inner >= one {
			one, part = inner, fmt.Sprintf("%s %s (%s)", o.From+" → "+o.To, ms(inner), innerParts)
		}
		st, ok := stages[o.Stage]
		if !ok {
			st = &stage{parallel: o.Parallel}
			stages[o.Stage] = st
			order = append(order, o.Stage)
		}
		if o.Parallel {
			st.cost = max(st.cost, one)
		} else {
			st.cost += one
		}
		st.parts = append(st.parts, part)
	}
	slices.Sort(order)
	var total time.Duration
	var parts []string
	for _, k := range order {
		st := stages[k]
		total += st.cost
		if st.parallel && len(st.parts) > 1 {
			parts = append(parts, "the slower of "+strings.Join(st.parts, " and "))
		} else {
			parts = append(parts, strings.Join(st.parts, " + "))
		}
	}
	return total, strings.Join(parts, " + ")
}

// pasteable are the command lines and environment variables that set the
// suggestion: one `serve` line per calling service, one `serve all` line
// with every flag (serve all takes the same names), and MERCADO_* for
// each flag (flagenv), which both read.
func pasteable(s Suggestion) (flags, env []string) {
	var services []string
	per := map[string][]string{}
	var all []string
	for _, h := range s.Hops {
		if h.Cap == 0 || h.Setting == "" {
			continue
		}
		if !slices.Contains(services, h.From) {
			services = append(services, h.From)
		}
		f := fmt.Sprintf("%s=%s", h.Setting, flagDur(h.Cap))
		per[h.From] = append(per[h.From], f)
		all = append(all, f)
		env = append(env, fmt.Sprintf("%s=%s", flagenv.EnvName(strings.TrimPrefix(h.Setting, "--")), flagDur(h.Cap)))
	}
	connect := ""
	if s.ConnectTimeout > 0 {
		connect = " --connect-timeout=" + flagDur(s.ConnectTimeout)
		env = append(env, fmt.Sprintf("%s=%s", flagenv.EnvName("connect-timeout"), flagDur(s.ConnectTimeout)))
	}
	for _, svc := range services {
		flags = append(flags, fmt.Sprintf("mercado serve %s %s%s", svc, strings.Join(per[svc], " "), connect))
	}
	if len(all) > 0 {
		flags = append(flags, fmt.Sprintf("mercado serve all %s%s", strings.Join(all, " "), connect))
	}
	return flags, env
}

// roundUp rounds a cap up to a figure a person would write: to 5 ms below
// 100 ms, to 10 ms below a second, to 100 ms above.
func roundUp(d time.Duration) time.Duration {
	step := step(d)
	return (d + step - 1) / step * step
}

// roundDown rounds a timeout down in the same steps.
func roundDown(d time.Duration) time.Duration {
	step := step(d)
	return d / step * step
}

func step(d time.Duration) time.Duration {
	switch {
	case d < 100*time.Millisecond:
		return 5 * time.Millisecond
	case d < time.Second:
		return 10 * time.Millisecond
	default:
		return 100 * time.Millisecond
	}
}

// flagDur writes a duration as a flag takes it: "260ms", "1.5s".
func flagDur(d time.Duration) string {
	if d >= time.Second && d%(100*time.Millisecond) == 0 {
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// msText writes a measured duration to a tenth of a millisecond below
// 10 ms, to the millisecond above: "212 ms", "1.3 ms".
func msText(d time.Duration) string {
	f := float64(d) / float64(time.Millisecond)
	if f < 10 {
		return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64) + " ms"
	}
	return strconv.FormatFloat(math.Round(f), 'f', -1, 64) + " ms"
}

func capProse(d time.Duration) string {
	if d <= 0 {
		return "no cap"
	}
	return ms(d)
}

func capText(d time.Duration) string {
	if d <= 0 {
		return "no cap"
	}
	return flagDur(d)
}

// thousands writes 1204 as "1,204".
func thousands(n uint64) string {
	s := strconv.FormatUint(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// MarshalJSON writes the durations in milliseconds.
func (h HopSuggestion) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		From      string  `json:"from"`
		To        string  `json:"to"`
		Setting   string  `json:"setting"`
		P99MS     float64 `json:"p99_ms"`
		Samples   uint64  `json:"samples"`
		CurrentMS float64 `json:"current_ms"`
		CapMS     float64 `json:"cap_ms"`
		Why       string  `json:"why"`
	}{h.From, h.To, h.Setting, msf(h.P99), h.Samples, msf(h.Current), msf(h.Cap), h.Why})
}

// MarshalJSON writes the durations in milliseconds.
func (p PathCheck) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Route    string  `json:"route"`
		WorstMS  float64 `json:"worst_ms"`
		BudgetMS float64 `json:"budget_ms"`
		Fits     bool    `json:"fits"`
		Caps     string  `json:"caps"`
	}{p.Route, msf(p.Worst), msf(p.Budget), p.Fits, p.Caps})
}

// MarshalJSON writes the durations in milliseconds, and empty lists as [].
func (s Suggestion) MarshalJSON() ([]byte, error) {
	orEmpty := func(l []string) []string {
		if l == nil {
			return []string{}
		}
		return l
	}
	return json.Marshal(struct {
		Hops             []HopSuggestion `json:"hops"`
		ConnectTimeoutMS float64         `json:"connect_timeout_ms"`
		ConnectWhy       string          `json:"connect_why"`
		Paths            []PathCheck     `json:"paths"`
		Warnings         []string        `json:"warnings"`
		Flags            []string        `json:"flags"`
		Env              []string        `json:"env"`
	}{s.Hops, msf(s.ConnectTimeout), s.ConnectWhy, s.Paths, orEmpty(s.Warnings), orEmpty(s.Flags), orEmpty(s.Env)})
}

func msf(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Millisecond)*10) / 10 }
