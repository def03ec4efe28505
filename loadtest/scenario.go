package loadtest

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mercado-lab/mercado/internal/faults"
	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/internal/netfault"
)

//go:embed scenarios/*.yaml
var builtin embed.FS

// Scenario is a load test written as a file: traffic classes, phases with
// their faults, and the modes to compare. See loadtest/scenarios/.
type Scenario struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Modes to compare, in order (default: naive, then budgeted); a mode
	// may name switches it turns on, "budgeted+hedging" (mode.Variant).
	Modes []mode.Mode `yaml:"modes"`
	// Deadline is every client's deadline; Patience how long past it the
	// client still waits to measure a late answer.
	Deadline Duration `yaml:"deadline"`
	Patience Duration `yaml:"patience"`
	// Client is how the clients behave past one try; Clients, by mode,
	// replaces it in that mode (a budgeted system's clients may retry as
	// its services do).
	Client  ClientSpec               `yaml:"client"`
	Clients map[mode.Mode]ClientSpec `yaml:"clients"`
	// Classes are the traffic: rates per second by class.
	Classes map[string]ClassSpec `yaml:"classes"`
	// Checkout is what the checkouts buy (default: Zipf 1.1 over the
	// catalogue, one product a checkout).
	Checkout Basket `yaml:"checkout"`
	// Arrivals is how requests arrive in every phase that does not say
	// (arrivals.go); constant when the file does not say either.
	Arrivals Arrivals `yaml:"arrivals"`
	Phases   []Phase  `yaml:"phases"`
	// Shop sizes the in-process shop a lab starts. Against a running
	// deployment only its workers apply, through each mode's switch.
	Shop ShopSpec `yaml:"shop"`
	// Checks are the claims the scenario makes about its results, printed
	// as PASS or FAIL after the run.
	Checks []Check `yaml:"checks"`
	// Scale is what Scaled multiplied every rate by; 0 for the scenario's
	// own rates.
	Scale float64 `yaml:"-"`
}

// ClientSpec is the clients' behaviour when an answer fails.
type ClientSpec struct {
	// Retries is how many more times a client sends a request that got a
	// 502/503/504/429 or no answer (the same Idempotency-Key for a
	// checkout), within its patience; 0 never retries.
	Retries int `yaml:"retries"`
	// Backoff is the most a client waits before trying again (full
	// jitter: anything from 0 to it).
	Backoff Duration `yaml:"backoff"`
	// AttemptTimeout is how long a client waits for one try before it
	// gives that try up and sends the request again; 0 waits out its
	// whole patience on the first try.
	AttemptTimeout Duration `yaml:"attempt_timeout"`
	// BudgetAware: a client that waits at least what an answer's
	// Retry-After asks, and makes no try that could not start before its
	// deadline. Otherwise it retries blind.
	BudgetAware bool `yaml:"budget_aware"`
}

// ClientFor is how the clients behave in mode m.
func (s Scenario) ClientFor(m mode.Mode) ClientSpec {
	if c, ok := s.Clients[m]; ok {
		return c
	}
	return s.Client
}

func (c ClientSpec) validate() []error {
	var errs []error
	if c.Retries < 0 || c.Retries > 10 {
		errs = append(errs, fmt.Errorf("retries %d is outside 0 to 10", c.Retries))
	}
	if c.Backoff < 0 || c.AttemptTimeout < 0 {
		errs = append(errs, errors.New("backoff and attempt_timeout must not be negative"))
	}
	if c.AttemptTimeout > 0 && c.Retries == 0 {
		errs = append(errs, errors.New("attempt_timeout needs retries"))
	}
	if c.BudgetAware && c.Retries == 0 {
		errs = append(errs, errors.New("budget_aware needs retries"))
	}
	return errs
}

// ClassSpec is one kind of request the generator sends.
type ClassSpec struct {
	Rate float64 `yaml:"rate"`
	// Deadline, when set, is this kind's clients' deadline instead of the
	// scenario's: an export's client waits minutes, a shopper a second.
	Deadline Duration `yaml:"deadline"`
	// Client, when set, is how this kind's clients behave past one try,
	// instead of the scenario's client.
	Client *ClientSpec `yaml:"client"`
}

// Phase is one stretch of the run.
type Phase struct {
	Name     string   `yaml:"name"`
	Duration Duration `yaml:"duration"`
	// Quick, when set, is the phase's length in a quick run instead of a
	// fifth of Duration: the least that lets the fault's effect build (a
	// queue fill, a breaker's open time run out), so that a quick run's
	// checks decide as the full run's do.
	Quick Duration `yaml:"quick"`
	// Rates override the classes' rates during this phase.
	Rates map[string]float64 `yaml:"rates"`
	// Arrivals, when set, is how requests arrive in this phase instead of
	// the scenario's Arrivals.
	Arrivals *Arrivals `yaml:"arrivals"`
	// Faults are each service's fault specs in force during the phase, in
	// the --fault syntax ("CreateShipment:hang=5s"); services not named
	// have none.
	Faults map[string]string `yaml:"faults"`
	// Network are the network faults in force on the links between the
	// services during the phase, by link ("orders-shipping": "stall"; the
	// grammar of internal/netfault); links not named have none. A
	// scenario that names any runs on a shop with its fault proxies on.
	Network map[string]string `yaml:"network"`
}

// ArrivalsOf is how requests arrive in phase p.
func (s Scenario) ArrivalsOf(p Phase) Arrivals {
	if p.Arrivals != nil {
		return *p.Arrivals
	}
	return s.Arrivals
}

// UsesNetwork reports whether any phase sets network faults: the shop
// must then have its fault proxies (Config.Network, --network-proxy).
func (s Scenario) UsesNetwork() bool {
	for _, p := range s.Phases {
		if len(p.Network) > 0 {
			return true
		}
	}
	return false
}

// ShopSpec sizes an in-process shop. A field left zero keeps the shop's
// default (the services' flags of the same names, docs/loadtest.md); a
// running shop the scenario is sent to keeps its own settings but the
// pools' size, which every mode switch sets (Workers, or the shop's own).
type ShopSpec struct {
	Workers     int      `yaml:"workers"`
	BreakerOpen Duration `yaml:"breaker_open"`
	// Bulkhead is each budgeted bulkhead's slots; the breakers open at
	// BreakerRatio failures of at least BreakerMinCalls calls in their
	// window, BreakerWindow long (zero: each dependency's own).
	Bulkhead        int      `yaml:"bulkhead"`
	BreakerMinCalls int      `yaml:"breaker_min_calls"`
	BreakerRatio    float64  `yaml:"breaker_ratio"`
	BreakerWindow   Duration `yaml:"breaker_window"`
	// Margin and Floor are the budget's: what each hop keeps back for the
	// way back, and the least budget worth starting a call with.
	Margin Duration `yaml:"margin"`
	Floor  Duration `yaml:"floor"`
	// ConnectTimeout bounds each attempt to connect to a dependency.
	ConnectTimeout Duration `yaml:"connect_timeout"`
	// Caps are the calls' own caps, by the flag that sets each (without
	// its dashes: one of CapNames); a call not named keeps its default.
	Caps map[string]Duration `yaml:"caps"`
	// Mechanisms are switches applied on top of each mode, in the
	// --mechanisms syntax ("retries=off").
	Mechanisms string `yaml:"mechanisms"`
}

// CapNames are the caps a scenario's shop may set, by the flag of the
// service that owns each: the gateway's call to orders and its browse
// call to catalog, then orders' calls.
func CapNames() []string {
	return []string{"orders-cap", "browse-cap", "catalog-cap", "fraud-cap", "payments-cap", "shipping-cap", "estimate-cap"}
}

// validate reports every setting of the shop that is out of range.
func (sh ShopSpec) validate() []error {
	var errs []error
	if sh.Workers < 0 || sh.Bulkhead < 0 || sh.BreakerMinCalls < 0 {
		errs = append(errs, errors.New("shop: workers, bulkhead and breaker_min_calls must not be negative"))
	}
	if sh.BreakerRatio < 0 || sh.BreakerRatio > 1 {
		errs = append(errs, fmt.Errorf("shop.breaker_ratio: %v is outside 0 to 1", sh.BreakerRatio))
	}
	for name, d := range map[string]Duration{"breaker_open": sh.BreakerOpen, "breaker_window": sh.BreakerWindow, "margin": sh.Margin, "floor": sh.Floor, "connect_timeout": sh.ConnectTimeout} {
		if d < 0 || d > Duration(time.Hour) {
			errs = append(errs, fmt.Errorf("shop.%s: %v is outside 0 to 1h", name, time.Duration(d)))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(sh.Caps)) {
		if !slices.Contains(CapNames(), name) {
			errs = append(errs, fmt.Errorf("shop.caps: unknown cap %q (want one of %s)", name, strings.Join(CapNames(), ", ")))
		} else if d := sh.Caps[name]; d <= 0 || d > Duration(time.Hour) {
			errs = append(errs, fmt.Errorf("shop.caps.%s: %v is outside (0, 1h]", name, time.Duration(d)))
		}
	}
	return errs
}

// Duration is a time.Duration written as "1s" in YAML.
type Duration time.Duration

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// Classes this load generator knows how to send. (These are kinds of
// request; "export" is the catalogue export, sent as the batch traffic
// class with X-Request-Class: batch.)
var knownClasses = map[string]bool{"checkout": true, "browse": true, "status": true, "export": true}

// KindExport is the request kind of the catalogue export.
const KindExport = "export"

// ParseScenario reads a scenario strictly: unknown fields are errors.
func ParseScenario(b []byte) (Scenario, error) {
	var s Scenario
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return Scenario{}, fmt.Errorf("scenario: %w", err)
	}
	if len(s.Modes) == 0 {
		s.Modes = []mode.Mode{mode.Naive, mode.Budgeted}
	}
	return s, s.Validate()
}

// Validate reports every problem with s.
func (s Scenario) Validate() error {
	var errs []error
	if s.Name == "" {
		errs = append(errs, errors.New("name is required"))
	}
	for _, m := range s.Modes {
		if _, _, err := mode.Variant(string(m)); err != nil {
			errs = append(errs, err)
		}
	}
	// Deadline plus patience is how long the generator's client waits
	// for an answer: a request still unanswered then is counted as the
	// deadline missed, and the phase ends on time whatever the shop does.
	if s.Deadline <= 0 || s.Deadline > Duration(time.Hour) {
		errs = append(errs, fmt.Errorf("deadline %v is outside (0, 1h]", time.Duration(s.Deadline)))
	}
	if s.Patience < 0 || s.Patience > Duration(time.Hour) {
		errs = append(errs, fmt.Errorf("patience %v is outside 0 to 1h", time.Duration(s.Patience)))
	}
	if len(s.Classes) == 0 {
		errs = append(errs, errors.New("at least one class is required"))
	}
	errs = append(errs, s.Checkout.Validate()...)
	for name, c := range s.Classes {
		if !knownClasses[name] {
			errs = append(errs, fmt.Errorf("class %q: want checkout, browse, status or export", name))
		}
		if c.Rate < 0 || c.Rate > 5000 {
			errs = append(errs, fmt.Errorf("class %q: rate %v is outside 0 to 5000", name, c.Rate))
		}
		if c.Deadline < 0 || c.Deadline > Duration(time.Hour) {
			errs = append(errs, fmt.Errorf("class %q: deadline %v is outside 0 to 1h", name, time.Duration(c.Deadline)))
		}
		if c.Client != nil {
			for _, err := range c.Client.validate() {
				errs = append(errs, fmt.Errorf("class %q: client.%w", name, err))
			}
		}
	}
	for _, err := range s.Client.validate() {
		errs = append(errs, fmt.Errorf("client.%w", err))
	}
	for _, m := range slices.Sorted(maps.Keys(s.Clients)) {
		if !slices.Contains(s.Modes, m) {
			errs = append(errs, fmt.Errorf("clients: mode %q is not one the scenario runs", m))
		}
		for _, err := range s.Clients[m].validate() {
			errs = append(errs, fmt.Errorf("clients.%s.%w", m, err))
		}
	}
	if len(s.Phases) == 0 {
		errs = append(errs, errors.New("at least one phase is required"))
	}
	for i, p := range s.Phases {
		if p.Duration <= 0 {
			errs = append(errs, fmt.Errorf("phase %d (%s): duration must be positive", i, p.Name))
		}
		if p.Quick < 0 || p.Quick > p.Duration {
			errs = append(errs, fmt.Errorf("phase %d (%s): quick %v is outside 0 to its duration %v", i, p.Name, time.Duration(p.Quick), time.Duration(p.Duration)))
		}
		for c := range p.Rates {
			if _, ok := s.Classes[c]; !ok {
				errs = append(errs, fmt.Errorf("phase %s: rate for unknown class %q", p.Name, c))
			}
		}
		for svc, spec := range p.Faults {
			known := slices.Contains(faults.Services(), svc)
			if !known {
				errs = append(errs, fmt.Errorf("phase %s: unknown service %q", p.Name, svc))
			}
			set, err := faults.Parse(spec)
			if err == nil && known {
				err = set.CheckMethods(svc)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("phase %s: %s: %w", p.Name, svc, err))
			}
		}
		for _, link := range slices.Sorted(maps.Keys(p.Network)) {
			if err := netfault.CheckLink(link); err != nil {
				errs = append(errs, fmt.Errorf("phase %s: network: %w", p.Name, err))
				continue
			}
			if _, err := netfault.Parse(p.Network[link]); err != nil {
				errs = append(errs, fmt.Errorf("phase %s: network: %s: %w", p.Name, link, err))
			}
		}
	}
	for _, c := range s.Checks {
		if err := c.validate(s); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, s.Shop.validate()...)
	if s.Shop.Mechanisms != "" {
		var o mode.Overrides
		if err := o.Set(s.Shop.Mechanisms); err != nil {
			errs = append(errs, fmt.Errorf("shop.mechanisms: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Setup is what the scenario's mode m switches the shop to: m's preset,
// with the shop's mechanisms on top of it and then the switches m's name
// turns on ("budgeted+hedging").
func (s Scenario) Setup(m mode.Mode) (mode.Mode, mode.Overrides, error) {
	var o mode.Overrides
	if s.Shop.Mechanisms != "" {
		if err := o.Set(s.Shop.Mechanisms); err != nil {
			return "", o, fmt.Errorf("shop.mechanisms: %w", err)
		}
	}
	preset, switched, err := mode.Variant(string(m))
	if err != nil {
		return "", o, err
	}
	return preset, o.Join(switched), nil
}

// DeadlineOf is the deadline of the clients of the request kind named
// kind: its own, or the scenario's.
func (s Scenario) DeadlineOf(kind string) time.Duration {
	if d := s.Classes[kind].Deadline; d > 0 {
		return time.Duration(d)
	}
	return time.Duration(s.Deadline)
}

// Quick shortens every phase to its own quick length, or else to a fifth
// (at least one second): a run a trainer or CI can afford whose checks
// still decide as the full run's do.
func (s Scenario) Quick() Scenario {
	phases := make([]Phase, len(s.Phases))
	for i, p := range s.Phases {
		p.Duration = max(p.Duration/5, Duration(time.Second))
		if p.Quick > 0 {
			p.Duration = p.Quick
		}
		phases[i] = p
	}
	s.Phases = phases
	return s
}

// Scales are the bounds of Scaled's factor.
const (
	MinScale = 0.05
	MaxScale = 10
)

// Scaled returns s with every class's rate and every phase's rates
// multiplied by f: the same lesson at rates a smaller (or larger) machine
// can hold. A scenario's checks compare the modes and the phases with
// each other, so they read the same at any scale where the shop is
// pushed past what each mode can serve as the scenario meant.
func (s Scenario) Scaled(f float64) (Scenario, error) {
	if math.IsNaN(f) || f < MinScale || f > MaxScale {
		return s, fmt.Errorf("scale %v is outside %v to %v", f, MinScale, MaxScale)
	}
	classes := make(map[string]ClassSpec, len(s.Classes))
	for name, c := range s.Classes {
		c.Rate *= f
		classes[name] = c
	}
	phases := make([]Phase, len(s.Phases))
	for i, p := range s.Phases {
		if p.Rates != nil {
			rates := make(map[string]float64, len(p.Rates))
			for class, r := range p.Rates {
				rates[class] = r * f
			}
			p.Rates = rates
		}
		phases[i] = p
	}
	if s.Scale == 0 {
		s.Scale = 1
	}
	s.Classes, s.Phases, s.Scale = classes, phases, s.Scale*f
	return s, nil
}

// Length is the run's length per mode.
func (s Scenario) Length() time.Duration {
	var d time.Duration
	for _, p := range s.Phases {
		d += time.Duration(p.Duration)
	}
	return d
}

// LoadScenario returns a built-in scenario by name, or reads a file.
func LoadScenario(nameOrPath string) (Scenario, error) {
	b, err := fs.ReadFile(builtin, "scenarios/"+nameOrPath+".yaml")
	if err != nil {
		if !strings.ContainsAny(nameOrPath, "/.") {
			return Scenario{}, fmt.Errorf("no built-in scenario %q (have %s)", nameOrPath, strings.Join(Builtin(), ", "))
		}
		if b, err = os.ReadFile(nameOrPath); err != nil {
			return Scenario{}, err
		}
	}
	return ParseScenario(b)
}

// Builtin lists the built-in scenarios.
func Builtin() []string {
	entries, _ := fs.ReadDir(builtin, "scenarios")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), filepath.Ext(e.Name())))
	}
	sort.Strings(names)
	return names
}
