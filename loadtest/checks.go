package loadtest

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/sim"
)

// Check is a claim a scenario makes about its own results, evaluated
// after the run: one figure of one class, in one mode and (optionally)
// one phase, against a bound. With Of set, the bound is relative: the
// figure must be at least (or at most) that many times the same figure
// somewhere else — another mode, or another phase.
//
//   - name: budgeted checkout goodput under the fault is ≥ 3× naive's
//     mode: budgeted
//     phase: carrier hangs
//     class: checkout
//     figure: goodput
//     at_least: 3
//     of: {mode: naive}
//
// A server figure (ServerFigureNames) is what a service counted, per
// request of the class the generator sent, over the same span: with
// figure calls_per_request and service payments, the calls payments
// received per checkout sent. A hop figure (HopFigureNames) is one hop's,
// from service to dep; a pool figure (PoolFigureNames) one service's
// pools', read from the gauges sampled during the span.
type Check struct {
	Name  string `yaml:"name" json:"name"`
	Mode  string `yaml:"mode" json:"mode"`
	Phase string `yaml:"phase" json:"phase,omitempty"`
	Class string `yaml:"class" json:"class"`
	// Figure is one of Figures' keys.
	Figure string `yaml:"figure" json:"figure"`
	// Service names the service of a server figure; Method, optional,
	// one of its gRPC methods ("CreateCharge"): that method's calls alone.
	Service string `yaml:"service" json:"service,omitempty"`
	Method  string `yaml:"method" json:"method,omitempty"`
	// Dep names the dependency of a hop figure: the hop from Service to
	// Dep.
	Dep string `yaml:"dep" json:"dep,omitempty"`
	// Pool, optional, names one pool of Service for a pool figure
	// ("to.payments", "shared"); without it, the service's fullest pool.
	Pool    string   `yaml:"pool" json:"pool,omitempty"`
	AtLeast *float64 `yaml:"at_least" json:"at_least,omitempty"`
	AtMost  *float64 `yaml:"at_most" json:"at_most,omitempty"`
	Of      *CheckOf `yaml:"of" json:"of,omitempty"`
}

// CheckOf names the reference figure of a relative check: the same
// figure and class, with the mode or the phase replaced.
type CheckOf struct {
	Mode  string `yaml:"mode" json:"mode,omitempty"`
	Phase string `yaml:"phase" json:"phase,omitempty"`
}

// CheckResult is a check with what the run measured.
type CheckResult struct {
	Check
	Pass bool `json:"pass"`
	// Value is the measured figure; Bound what it was held to (for a
	// relative check, the multiple times the reference figure).
	Value float64 `json:"value"`
	Bound float64 `json:"bound"`
	// Error says why the check could not be evaluated (a mode or phase
	// that did not run); such a check fails.
	Error string `json:"error,omitempty"`
}

// Figures are the figures a check can name, read from a Summary.
var Figures = map[string]func(Summary) float64{
	"goodput": func(s Summary) float64 { return s.Goodput },
	"success": func(s Summary) float64 { return s.SuccessRatio },
	// accepted is the share of requests answered 202 processing.
	"accepted": func(s Summary) float64 {
		if s.Requests == 0 {
			return 0
		}
		return float64(s.Accepted) / float64(s.Requests)
	},
	"p50_ms":  func(s Summary) float64 { return s.P50MS },
	"p90_ms":  func(s Summary) float64 { return s.P90MS },
	"p99_ms":  func(s Summary) float64 { return s.P99MS },
	"p999_ms": func(s Summary) float64 { return s.P999MS },
	"max_ms":  func(s Summary) float64 { return s.MaxMS },
	// degraded: the share of good answers marked degraded.
	"degraded": func(s Summary) float64 { return s.DegradedRatio },
	// p99_over_predicted: the measured p99 divided by the p99 the lab
	// composed from the hops over the same span (Summary.Predicted); NaN,
	// which fails any bound, where there is no prediction.
	"p99_over_predicted": func(s Summary) float64 {
		if s.Predicted == nil || s.Predicted.P99MS <= 0 {
			return math.NaN()
		}
		return s.P99MS / s.Predicted.P99MS
	},
}

// ServerFigureNames are the server figures a check can name: what the
// services counted over a span (ServerFigures) for service, most of them
// divided by the requests of the check's class sent in it.
var ServerFigureNames = map[string]func(f ServerFigures, service, method string, requests int) float64{
	"calls_per_request": func(f ServerFigures, svc, method string, requests int) float64 {
		if method != "" {
			return f.MethodCalls[svc+"/"+method] / float64(requests)
		}
		return f.Calls[svc] / float64(requests)
	},
	// insufficient_budget_per_request: the calls service did not make
	// because less than the floor was left (mercado_skipped_total with
	// reason insufficient_budget) — the floor check firing instead of a
	// doomed call starting.
	"insufficient_budget_per_request": func(f ServerFigures, svc, _ string, requests int) float64 {
		return f.InsufficientBudget[svc] / float64(requests)
	},
	// duplicate_charges_per_request: the charges payments took beyond one
	// per logical checkout (ServerFigures.DuplicateCharges) — what a blind
	// retry without an idempotency key costs the customer. Service
	// payments, which takes them.
	"duplicate_charges_per_request": func(f ServerFigures, _, _ string, requests int) float64 {
		return f.DuplicateCharges / float64(requests)
	},
	// lock_wait_p99_ms: the p99 of the catalog's reservations' waits for
	// their products' locks (ServerFigures.LockWaitP99MS), not divided by
	// anything; NaN, which no bound holds, when none waited. Service
	// catalog.
	"lock_wait_p99_ms": func(f ServerFigures, _, _ string, _ int) float64 {
		if f.LockWaits == 0 {
			return math.NaN()
		}
		return f.LockWaitP99MS
	},
	// late_work_s: seconds of work the whole shop did after its clients'
	// deadlines had passed (ServerFigures.LateWorkSeconds), not divided by
	// anything. No service: every service's counts.
	"late_work_s": func(f ServerFigures, _, _ string, _ int) float64 {
		return f.LateWorkSeconds
	},
}

// methodless are the server figures that count no particular method.
var methodless = map[string]bool{"insufficient_budget_per_request": true, "duplicate_charges_per_request": true,
	"lock_wait_p99_ms": true}

// figureService names the one service a server figure belongs to, for
// the figures that only one service counts; "" for the figures the whole
// shop counts, which name no service.
var figureService = map[string]string{"duplicate_charges_per_request": sim.ServicePayments,
	"lock_wait_p99_ms": sim.ServiceCatalog, "late_work_s": ""}

// HopFigureNames are the figures of one hop (Service to Dep) over a span,
// given the requests of the check's class sent in it; ok is false when
// the hop gives no such figure (it made no calls).
//
//   - headroom_ms: the hop's cap minus the p99 of its calls
//     (ServerFigures.HeadroomMS) — the recording rule
//     mercado:hop_headroom_seconds, in milliseconds, over the span; not
//     divided by anything.
//   - cap_ms: the hop's cap at the end of the span, its calls' own
//     timeout (ServerFigures.CapMS); 0 for a hop with none, as in the
//     fragile preset, where there is no headroom to alert on. slice_ms,
//     its old name, is still accepted (deprecatedFigures).
//   - timeouts_per_request: the hop's calls a deadline ended, its own cap
//     or the caller's budget (ServerFigures.HopTimeouts), per request of
//     the class: where DeadlineExceeded was counted.
//   - breaker_opens: how many times the hop's circuit breaker opened
//     (ServerFigures.HopBreakerOpens); not divided by anything.
var HopFigureNames = map[string]func(f ServerFigures, hop string, requests int) (float64, bool){
	"headroom_ms": func(f ServerFigures, hop string, _ int) (float64, bool) {
		v, ok := f.HeadroomMS[hop]
		return v, ok
	},
	"cap_ms": func(f ServerFigures, hop string, _ int) (float64, bool) {
		return f.CapMS[hop], f.HopCalls[hop] > 0
	},
	"timeouts_per_request": func(f ServerFigures, hop string, requests int) (float64, bool) {
		if f.HopCalls[hop] == 0 || requests == 0 {
			return 0, false
		}
		return f.HopTimeouts[hop] / float64(requests), true
	},
	"breaker_opens": func(f ServerFigures, hop string, _ int) (float64, bool) {
		return f.HopBreakerOpens[hop], f.HopCalls[hop] > 0
	},
}

// deprecatedFigures are the old names of figures, still accepted in a
// check and read as the name each maps to. Deprecated: slice_ms is
// cap_ms's name from when the lab called a call's cap its slice; write
// cap_ms.
var deprecatedFigures = map[string]string{"slice_ms": "cap_ms"}

// figureName is the name c's figure is read by: c.Figure, or the figure
// a deprecated name stands for.
func (c Check) figureName() string {
	if name, ok := deprecatedFigures[c.Figure]; ok {
		return name
	}
	return c.Figure
}

// PoolFigureNames are the figures of a service's pools over a span, read
// from the gauges sampled during it (ModeResult.PoolInFlight, each
// second's highest reading); ok is false when no such pool was seen.
//
//   - pool_peak_use: the most work the pool held at once ÷ its slots
//     (1: pinned full); without a pool named, the service's fullest.
var PoolFigureNames = map[string]func(m ModeResult, service, pool string, span PhaseSpan) (float64, bool){
	"pool_peak_use": poolPeakUse,
}

func poolPeakUse(m ModeResult, service, pool string, span PhaseSpan) (float64, bool) {
	// The seconds the span overlaps; the whole run's span has no end.
	from, to := int(math.Floor(span.StartS)), math.MaxInt
	if !math.IsInf(span.EndS, 1) {
		to = int(math.Ceil(span.EndS))
	}
	use, seen := 0.0, false
	for name, series := range m.PoolInFlight {
		svc, p, _ := strings.Cut(name, "/")
		capacity := m.PoolCapacity[name]
		if svc != service || (pool != "" && p != pool) || capacity <= 0 {
			continue
		}
		seen = true
		for t := max(from, 0); t < min(to, len(series)); t++ {
			use = max(use, series[t]/capacity)
		}
	}
	return use, seen
}

// shopWide reports a server figure that the whole shop counts.
func shopWide(figure string) bool {
	svc, ok := figureService[figure]
	return ok && svc == ""
}

func (c Check) validate(s Scenario) error {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("name is required"))
	}
	if !slices.ContainsFunc(s.Modes, func(m mode.Mode) bool { return string(m) == c.Mode }) {
		errs = append(errs, fmt.Errorf("mode %q is not one the scenario runs", c.Mode))
	}
	if _, ok := s.Classes[c.Class]; !ok {
		errs = append(errs, fmt.Errorf("class %q is not one the scenario sends", c.Class))
	}
	_, client := Figures[c.Figure]
	_, server := ServerFigureNames[c.Figure]
	_, hop := HopFigureNames[c.figureName()]
	_, pool := PoolFigureNames[c.Figure]
	switch {
	case !client && !server && !hop && !pool:
		names := slices.Concat(slices.Collect(maps.Keys(Figures)), slices.Collect(maps.Keys(ServerFigureNames)),
			slices.Collect(maps.Keys(HopFigureNames)), slices.Collect(maps.Keys(PoolFigureNames)))
		slices.Sort(names)
		errs = append(errs, fmt.Errorf("figure %q: want one of %s", c.Figure, strings.Join(names, ", ")))
	case server && shopWide(c.Figure) && (c.Service != "" || c.Method != ""):
		errs = append(errs, fmt.Errorf("figure %s is the whole shop's: drop service and method", c.Figure))
	case server && !shopWide(c.Figure) && !slices.Contains(faults.Services(), c.Service):
		errs = append(errs, fmt.Errorf("figure %s needs a service, one of %s", c.Figure, faults.ServiceList()))
	case server && figureService[c.Figure] != "" && c.Service != figureService[c.Figure]:
		errs = append(errs, fmt.Errorf("figure %s is counted by %s: give service %s", c.Figure, figureService[c.Figure], figureService[c.Figure]))
	case server && methodless[c.Figure] && c.Method != "":
		errs = append(errs, fmt.Errorf("figure %s counts no particular method: drop method", c.Figure))
	case hop && (!slices.Contains(faults.Services(), c.Service) || c.Dep == "" || c.Method != ""):
		errs = append(errs, fmt.Errorf("figure %s is a hop's: give its service (one of %s) and dep, and no method", c.Figure, faults.ServiceList()))
	case pool && (!slices.Contains(faults.Services(), c.Service) || c.Dep != "" || c.Method != ""):
		errs = append(errs, fmt.Errorf("figure %s is a service's pools': give its service (one of %s), optionally a pool, and no dep or method", c.Figure, faults.ServiceList()))
	case !hop && c.Dep != "":
		errs = append(errs, fmt.Errorf("figure %s is not a hop's: drop dep", c.Figure))
	case !pool && c.Pool != "":
		errs = append(errs, fmt.Errorf("figure %s is not a pool's: drop pool", c.Figure))
	case client && (c.Service != "" || c.Method != ""):
		errs = append(errs, fmt.Errorf("figure %s is the clients', not a service's: drop service and method", c.Figure))
	case strings.ContainsAny(c.Method, "/ "):
		errs = append(errs, fmt.Errorf("method %q: give the gRPC method's short name, such as CreateCharge", c.Method))
	case strings.ContainsAny(c.Pool, "/ "):
		errs = append(errs, fmt.Errorf("pool %q: give the pool's name, such as to.payments", c.Pool))
	}
	if (c.AtLeast == nil) == (c.AtMost == nil) {
		errs = append(errs, errors.New("exactly one of at_least and at_most is required"))
	}
	phases := []string{c.Phase}
	if c.Of != nil {
		if c.Of.Mode == "" && c.Of.Phase == "" {
			errs = append(errs, errors.New("of: name a mode or a phase"))
		}
		if c.Of.Mode != "" && !slices.ContainsFunc(s.Modes, func(m mode.Mode) bool { return string(m) == c.Of.Mode }) {
			errs = append(errs, fmt.Errorf("of: mode %q is not one the scenario runs", c.Of.Mode))
		}
		phases = append(phases, c.Of.Phase)
	}
	for _, p := range phases {
		if p != "" && !slices.ContainsFunc(s.Phases, func(q Phase) bool { return q.Name == p }) {
			errs = append(errs, fmt.Errorf("phase %q is not one of the scenario's", p))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("check %q: %w", c.Name, err)
	}
	return nil
}

// Evaluate measures every check against r.
func Evaluate(checks []Check, r Results) []CheckResult {
	out := make([]CheckResult, 0, len(checks))
	for _, c := range checks {
		out = append(out, c.evaluate(r))
	}
	return out
}

func (c Check) evaluate(r Results) CheckResult {
	res := CheckResult{Check: c}
	v, err := r.figure(c.Mode, c.Phase, c)
	if err == nil && math.IsNaN(v) {
		// A figure the span cannot give (no prediction, no lock waited
		// for) fails the check, and JSON has no NaN to carry it.
		err = fmt.Errorf("%s mode gave no %s over the span", c.Mode, c.Figure)
	}
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Value = v
	limit := 0.0
	if c.AtLeast != nil {
		limit = *c.AtLeast
	} else {
		limit = *c.AtMost
	}
	res.Bound = limit
	if c.Of != nil {
		m, p := c.Mode, c.Phase
		if c.Of.Mode != "" {
			m = c.Of.Mode
		}
		if c.Of.Phase != "" {
			p = c.Of.Phase
		}
		ref, err := r.figure(m, p, c)
		if err != nil {
			res.Error = err.Error()
			return res
		}
		res.Bound = limit * ref
	}
	if c.AtLeast != nil {
		res.Pass = v >= res.Bound
	} else {
		res.Pass = v <= res.Bound
	}
	return res
}

// figure reads c's figure of c's class in one mode, over the whole run
// (phase "") or over one phase; a server figure is c.Service's, a hop
// figure the hop from c.Service to c.Dep's, a pool figure c.Service's
// pools'.
func (r Results) figure(mode, phase string, c Check) (float64, error) {
	i := slices.IndexFunc(r.Modes, func(m ModeResult) bool { return m.Mode == mode })
	if i < 0 {
		return math.NaN(), fmt.Errorf("mode %s did not run", mode)
	}
	run := r.Modes[i]
	sums, server := run.Classes, run.Server
	span := PhaseSpan{StartS: 0, EndS: math.Inf(1)}
	if phase != "" {
		j := slices.IndexFunc(run.Phases, func(p PhaseSpan) bool { return p.Name == phase })
		if j < 0 {
			return math.NaN(), fmt.Errorf("phase %q did not run in %s mode", phase, mode)
		}
		span = run.Phases[j]
		sums, server = span.Classes, span.Server
	}
	k := slices.IndexFunc(sums, func(s Summary) bool { return s.Class == c.Class })
	if k < 0 {
		return math.NaN(), fmt.Errorf("class %s sent nothing in %s mode", c.Class, mode)
	}
	requests := sums[k].Requests
	if f, ok := PoolFigureNames[c.Figure]; ok {
		v, ok := f(run, c.Service, c.Pool, span)
		if !ok {
			return math.NaN(), fmt.Errorf("%s showed no pool %q in %s mode", c.Service, c.Pool, mode)
		}
		return v, nil
	}
	if f, ok := HopFigureNames[c.figureName()]; ok {
		v, ok := f(server, c.Service+"/"+c.Dep, requests)
		if !ok {
			return math.NaN(), fmt.Errorf("%s → %s made no calls in %s mode (or, for headroom_ms, none with a cap)", c.Service, c.Dep, mode)
		}
		return v, nil
	}
	if f, ok := ServerFigureNames[c.Figure]; ok {
		if requests == 0 {
			return math.NaN(), fmt.Errorf("class %s sent nothing in %s mode", c.Class, mode)
		}
		return f(server, c.Service, c.Method, requests), nil
	}
	f, ok := Figures[c.Figure]
	if !ok {
		return math.NaN(), fmt.Errorf("unknown figure %q", c.Figure)
	}
	return f(sums[k]), nil
}

// Describe says what the check compared, in a line:
// "12.3 ≥ 3 × naive (= 9.1)".
func (c CheckResult) Describe() string {
	if c.Error != "" {
		return "not evaluated: " + c.Error
	}
	op := "≥"
	if c.AtMost != nil {
		op = "≤"
	}
	limit := c.Bound
	if c.AtLeast != nil {
		limit = *c.AtLeast
	} else if c.AtMost != nil {
		limit = *c.AtMost
	}
	if c.Of == nil {
		return fmt.Sprintf("%s %s %s", formatFigure(c.Value), op, formatFigure(c.Bound))
	}
	var ref []string
	if c.Of.Mode != "" {
		ref = append(ref, c.Of.Mode)
	}
	if c.Of.Phase != "" {
		ref = append(ref, c.Of.Phase)
	}
	return fmt.Sprintf("%s %s %s × %s (= %s)", formatFigure(c.Value), op, formatFigure(limit), strings.Join(ref, ", "), formatFigure(c.Bound))
}

func formatFigure(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
