package loadtest

import (
	"maps"
	"runtime"
	"slices"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
)

// Results is one scenario run: every mode, measured. It is what the
// results JSON file holds and what the HTML report draws.
type Results struct {
	Scenario    string `json:"scenario"`
	Description string `json:"description"`
	// StartedAt is RFC 3339.
	StartedAt string       `json:"started_at"`
	Modes     []ModeResult `json:"modes"`
	// Checks are the scenario's claims, measured against this run.
	Checks []CheckResult `json:"checks,omitempty"`
	// Verdict weighs the checks and the modes' validity (Conclude):
	// INVALID when a mode's run was, else FAIL when a check failed, else
	// PASS.
	Verdict Verdict `json:"verdict,omitempty"`
	// Settings are what the run was asked to do and where it ran.
	Settings RunSettings `json:"settings"`
}

// RunSettings are a run's settings, stated on its report: the clients'
// deadline and traffic, the shop's size, and the machine that ran it.
type RunSettings struct {
	DeadlineMS float64 `json:"deadline_ms"`
	PatienceMS float64 `json:"patience_ms"`
	// Classes are each class's base rate and deadline; a phase may set
	// other rates (PhaseSpan.Rates).
	Classes []ClassSetting `json:"classes"`
	// Checkouts is what the checkouts bought, in words ("zipf 1.1"): the
	// scenario's Basket.
	Checkouts string `json:"checkouts,omitempty"`
	// Scale is what every rate of the scenario was multiplied by (the
	// rates above are the scaled ones); absent for its own rates.
	Scale float64 `json:"scale,omitempty"`
	// Workers and BreakerOpenMS size an in-process shop (0: the shop's
	// defaults, or a running deployment's own).
	Workers       int     `json:"workers,omitempty"`
	BreakerOpenMS float64 `json:"breaker_open_ms,omitempty"`
	// Mechanisms are the switches applied on top of every mode.
	Mechanisms string `json:"mechanisms,omitempty"`
	// The machine the generator ran on (and the shop, in-process).
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GoVersion  string `json:"go_version"`
}

// ClassSetting is one traffic class's base rate and its clients' deadline.
type ClassSetting struct {
	Class      string  `json:"class"`
	Rate       float64 `json:"rate"`
	DeadlineMS float64 `json:"deadline_ms"`
}

// ModeResult is one mode's run of the scenario.
type ModeResult struct {
	Mode string `json:"mode"`
	// Valid is false when the generator fell behind its schedule; Invalid
	// says why.
	Valid   bool   `json:"valid"`
	Invalid string `json:"invalid,omitempty"`
	// Advice, on an invalid run, says what to do about it.
	Advice string `json:"advice,omitempty"`
	// ScheduleLag is how late the generator sent the requests, against
	// the time its schedule gave each one: the measure of whether the
	// run is valid (a p99 above 10 ms is not).
	ScheduleLag Lag `json:"schedule_lag"`
	// LongestStallMS is the longest the generator's process was kept from
	// running at once during the phases (package stall).
	LongestStallMS float64 `json:"longest_stall_ms"`
	// Phases are the scenario's phases with their start and end, in
	// seconds from the start of this mode's run.
	Phases []PhaseSpan `json:"phases"`
	// Classes summarise each traffic class over the whole run; goodput is
	// per second of the scheduled run (the sum of the phases).
	Classes []Summary `json:"classes"`
	// FaultClasses summarise each class over the requests sent during the
	// phases with faults, taken together (goodput per second of those
	// phases): a fault that changes from phase to phase, measured whole.
	FaultClasses []Summary `json:"fault_classes,omitempty"`
	// Series are one-second buckets per class, in order.
	Series map[string][]Second `json:"series"`
	// Server are figures read from the services' /metrics.
	Server ServerFigures `json:"server"`
	// Gauges are server gauges, each second's highest of readings taken
	// five times a second: "service/pool" in flight, and "service/dep"
	// breaker state (0 closed, 1 half-open, 2 open).
	PoolInFlight map[string][]float64 `json:"pool_in_flight"`
	BreakerState map[string][]float64 `json:"breaker_state"`
	// PoolCapacity is each pool's slots, by "service/pool": with
	// PoolInFlight, how full it was (the pool_peak_use figure).
	PoolCapacity map[string]float64 `json:"pool_capacity,omitempty"`
	// Mechanisms are the switches in force in this mode: its preset with
	// the scenario's overrides. Nil in results written before they were
	// recorded.
	Mechanisms *mode.Mechanisms `json:"mechanisms,omitempty"`
}

// Lag is the spread of a run's schedule lag, each request's send time
// less its intended one, in milliseconds.
type Lag struct {
	P50MS float64 `json:"p50_ms"`
	P99MS float64 `json:"p99_ms"`
	MaxMS float64 `json:"max_ms"`
}

// PhaseSpan is when one phase ran, and the faults it applied.
type PhaseSpan struct {
	Name   string  `json:"name"`
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
	// Faulty reports that the phase applied faults, simulated work or
	// network faults (shaded in charts).
	Faulty bool `json:"faulty"`
	// Faults are the phase's simulated faults by service, and Network its
	// network faults by link, when it set any.
	Faults  map[string]string `json:"faults,omitempty"`
	Network map[string]string `json:"network,omitempty"`
	// Rates are the class rates the phase set instead of the base ones.
	Rates map[string]float64 `json:"rates,omitempty"`
	// Arrivals is how the phase's requests arrived.
	Arrivals Arrivals `json:"arrivals"`
	// Classes summarise each class over the requests the phase sent (by
	// intended send time), with goodput per second of the phase.
	Classes []Summary `json:"classes"`
	// Server are the services' counters' growth from the phase's start to
	// its end: what arrived during the phase, and what finished during it
	// (work the phase before left running included).
	Server ServerFigures `json:"server"`
}

// Second is one class's figures over one second of the run.
type Second struct {
	// T is the second's start, from the start of the mode's run.
	T        int     `json:"t"`
	Requests int     `json:"requests"`
	Good     int     `json:"good"`
	P50MS    float64 `json:"p50_ms"`
	P99MS    float64 `json:"p99_ms"`
}

// ServerFigures are what the services themselves counted during a run
// (differences of their counters between the start and the end).
type ServerFigures struct {
	LateCompletions float64            `json:"late_completions"`
	LateWorkSeconds float64            `json:"late_work_seconds"`
	Skipped         map[string]float64 `json:"skipped"`
	// InsufficientBudget are, by service, the calls it did not make
	// because less than the floor was left: the floor check firing
	// instead of a doomed call starting.
	InsufficientBudget map[string]float64 `json:"insufficient_budget,omitempty"`
	BreakerOpens       float64            `json:"breaker_opens"`
	PoolRejections     float64            `json:"pool_rejections"`
	// Calls are the requests each service behind the gateway received;
	// Amplification is that per user request sent.
	Calls         map[string]float64 `json:"calls"`
	Amplification map[string]float64 `json:"amplification"`
	// MethodCalls are Calls by "service/Method" ("payments/CreateCharge").
	MethodCalls map[string]float64 `json:"method_calls,omitempty"`
	Retries     float64            `json:"retries"`
	// DuplicateCharges are charges beyond one per logical checkout.
	DuplicateCharges float64 `json:"duplicate_charges"`
	// HeadroomMS is each hop's headroom over the span, by "service/dep":
	// its cap minus the p99 of the calls it made, computed as the
	// recording rule mercado:hop_headroom_seconds does. Negative: more
	// than 1% of its calls ended at the cap.
	HeadroomMS map[string]float64 `json:"headroom_ms,omitempty"`
	// CapMS is each hop's cap at the end of the span, by "service/dep",
	// for the hops that made calls: its calls' own timeout
	// (mercado_hop_cap_seconds), 0 for a hop with none — nothing for the
	// headroom alert to compute.
	CapMS map[string]float64 `json:"cap_ms,omitempty"`
	// HopTimeouts are each hop's calls a deadline ended (its own cap, or
	// the caller's budget), by "service/dep": where DeadlineExceeded was
	// counted.
	HopTimeouts map[string]float64 `json:"hop_timeouts,omitempty"`
	// HopCalls are each hop's calls made, whatever their outcome, by
	// "service/dep".
	HopCalls map[string]float64 `json:"hop_calls,omitempty"`
	// HopBreakerOpens are how many times each hop's breaker opened, by
	// "service/dep".
	HopBreakerOpens map[string]float64 `json:"hop_breaker_opens,omitempty"`
	// HopDurations are each hop's duration histogram over the span, every
	// outcome together, by "service/dep", for the hops that made calls:
	// what the lab composes into the checkout's predicted latency
	// (Summary.Predicted). A phase's start once the calls of the phase
	// before are over (the longest deadline in, at most a quarter of it).
	HopDurations map[string]Histogram `json:"hop_durations,omitempty"`
	// LockWaitP99MS is the p99 of the catalog's reservations' waits for
	// their products' locks over the span (those that got them and those
	// that gave up), in milliseconds, and LockWaits how many waited: the
	// queue a flash sale builds. Absent when no reservation was made.
	LockWaitP99MS float64 `json:"lock_wait_p99_ms,omitempty"`
	LockWaits     float64 `json:"lock_waits,omitempty"`
	// CPUSecondsPerGoodCheckout is the process's CPU time during the run
	// divided by checkouts answered well in time (in-process runs only).
	CPUSecondsPerGoodCheckout float64 `json:"cpu_seconds_per_good_checkout,omitempty"`
}

// Settings are the run's settings as its report states them, on this
// machine.
func (s Scenario) Settings() RunSettings {
	out := RunSettings{
		DeadlineMS: ms(time.Duration(s.Deadline)), PatienceMS: ms(time.Duration(s.Patience)),
		Workers: s.Shop.Workers, BreakerOpenMS: ms(time.Duration(s.Shop.BreakerOpen)), Mechanisms: s.Shop.Mechanisms,
		CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(),
	}
	for _, name := range slices.Sorted(maps.Keys(s.Classes)) {
		out.Classes = append(out.Classes, ClassSetting{Class: name, Rate: s.Classes[name].Rate, DeadlineMS: ms(s.DeadlineOf(name))})
	}
	if _, ok := s.Classes["checkout"]; ok {
		out.Checkouts = s.Checkout.String()
	}
	if s.Scale != 0 && s.Scale != 1 {
		out.Scale = s.Scale
	}
	return out
}
