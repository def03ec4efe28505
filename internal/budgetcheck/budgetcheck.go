// Package budgetcheck holds the guardrails of `mercado budget check`: the
// classic inconsistencies of a shop's timeouts, found in plain values
// before they become incidents. A downstream cap above the longest budget
// its caller can hold, retries multiplied across layers, any call with
// neither a cap nor a budget, caps that add up to more than the client
// waits, margin and floor that make no sense, a cap below the dependency's
// observed p99, and contracts (GET /admin/budget) that do not compose.
//
// The package takes plain values (a Deployment); gathering them from a
// service's configuration, a running shop or deployment files is the
// command's work (cmd/mercado/budget_check.go).
package budgetcheck

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// Criticalities of a call, as the caller's mechanisms in force treat it
// (services/orders/graph.go): an in-line call is on the request's path; an
// optional one runs beside it with its own short cap; a fire-forward one
// is made by a worker, off the request.
const (
	Critical    = "critical"
	Deferred    = "deferred"
	Optional    = "optional"
	FireForward = "fire_forward"
)

// Call is one outbound call a service makes.
type Call struct {
	// From and To are the calling and the called service.
	From, To string
	// Dep is the dependency's name at the caller ("fraud").
	Dep string `json:"dep"`
	// Setting is the flag that sets Cap ("--fraud-cap"); empty when the
	// cap is fixed in code.
	Setting string
	// Cap is the call's own timeout; zero means none.
	Cap time.Duration
	// Attempts is how many times the caller tries the call in the mode in
	// force (1: no retries).
	Attempts int
	// Criticality is how the caller's mechanisms in force treat the call.
	Criticality string
	// Stage orders the calls of one request: calls of one stage are
	// independent, and run at once when Parallel.
	Stage    int
	Parallel bool
	// Route is the caller's request that makes the call ("checkout").
	Route string
	// Method is the callee's route the call leads to (its Route in the
	// callee's own calls: "checkout").
	Method string
	// ObservedP99 is the call's p99 as the caller measured it (zero:
	// unknown, or no traffic yet).
	ObservedP99 time.Duration
	// TimedOut is the share of the calls made that ran into the cap:
	// above 1%, the dependency's p99 is at or above the cap, whatever
	// the histogram says (a timed-out call lasts the cap).
	TimedOut float64
	// Observed is how many calls ObservedP99 and TimedOut are over.
	Observed uint64
}

// Service is one service's settings in force.
type Service struct {
	Name     string
	Settings mode.Settings
	// Accepts is the longest deadline the service accepts per class
	// (zero: any, or no deadline at all).
	Accepts map[deadline.Class]time.Duration
}

// Edge is what the gateway decides at the edge.
type Edge struct {
	// Service is the edge's name ("gateway").
	Service string
	// Budgets are the classes' budgets (default and most a client may
	// ask for).
	Budgets deadline.Budgets
	// WriteTimeout is the HTTP server's: the longest the edge can take
	// to write an answer after reading the request's headers.
	WriteTimeout time.Duration
	// IdleTimeout is how long the HTTP server keeps an idle connection
	// open (zero: unknown).
	IdleTimeout time.Duration
}

// Deployment is a shop as deployed: its edge, services and calls, with
// the settings in effect, and where they were read from.
type Deployment struct {
	// Source says where the values came from ("defaults",
	// "docker-compose.yml", ...).
	Source   string
	Edge     Edge
	Services []Service
	Calls    []Call
	// Contracts are the services' published contracts (with --from).
	Contracts []Contract
	// Proxies are the reverse proxies in front of the edge (nginx).
	Proxies []Proxy
}

// Finding is one inconsistency, with the offending setting and the fix.
type Finding struct {
	// Rule names the guardrail.
	Rule string `json:"rule"`
	// Where is the service or the call ("orders → payments").
	Where string `json:"where"`
	// Setting is the offending setting, as a flag with its value.
	Setting string `json:"setting"`
	Problem string `json:"problem"`
	Fix     string `json:"fix"`
}

// The rules.
const (
	RuleUnbounded         = "unbounded_call"
	RuleCapAboveBudget    = "cap_above_budget"
	RuleWriteTimeout      = "edge_write_timeout"
	RuleRetriesMultiplied = "retries_multiplied"
	RuleCapsExceedBudget  = "caps_exceed_budget"
	RuleMarginFloor       = "margin_not_below_floor"
	RuleFloorAboveBudget  = "floor_above_budget"
	RuleCapBelowFloor     = "cap_below_floor"
	RuleCapBelowP99       = "cap_below_p99"
	RuleConnectTimeout    = "connect_timeout_above_budget"
	RuleNeedAboveBudget   = "contract_need_above_budget"
	RulePromiseAboveWait  = "contract_promise_above_wait"
)

// Rules lists every rule, for the docs and the usage text.
func Rules() []string {
	return []string{RuleUnbounded, RuleCapAboveBudget, RuleWriteTimeout, RuleConnectTimeout, RuleRetriesMultiplied, RuleCapsExceedBudget,
		RuleMarginFloor, RuleFloorAboveBudget, RuleCapBelowFloor, RuleCapBelowP99, RuleNeedAboveBudget, RulePromiseAboveWait,
		RuleProxyRead, RuleProxyIdle, RuleProxyConnect}
}

// forever stands for no bound at all.
const forever = time.Duration(math.MaxInt64)

// Classes are the classes in force at the edge: the three with Classes
// on, interactive alone (the one class) with it off.
func (s Deployment) Classes() []deadline.Class {
	if e, ok := s.service(s.Edge.Service); ok && !e.Settings.Mechanisms.Classes {
		return []deadline.Class{deadline.Interactive}
	}
	return []deadline.Class{deadline.Interactive, deadline.Background, deadline.Batch}
}

func (s Deployment) service(name string) (Service, bool) {
	for _, x := range s.Services {
		if x.Name == name {
			return x, true
		}
	}
	return Service{}, false
}

// Holds is the longest deadline a request of class c can carry at the
// named service: at the edge the class's maximum when the edge stamps a
// deadline; below it the longest any caller's call gives it, cut to what
// the service accepts, and none at all when the service drops its
// caller's deadline (HonourCancel off). forever means no deadline.
func (s Deployment) Holds(name string, c deadline.Class) time.Duration {
	return s.holds(name, c, map[string]bool{})
}

func (s Deployment) holds(name string, c deadline.Class, seen map[string]bool) time.Duration {
	svc, ok := s.service(name)
	if !ok || seen[name] {
		return forever
	}
	m := svc.Settings.Mechanisms
	if name == s.Edge.Service {
		if !m.EdgeDeadline {
			return forever
		}
		return s.Edge.Budgets.For(c).Max
	}
	if !m.HonourCancel {
		return forever
	}
	seen[name] = true
	defer delete(seen, name)
	longest := time.Duration(0)
	for _, call := range s.Calls {
		if call.To != name || call.Criticality == FireForward {
			continue
		}
		longest = max(longest, min(capOrForever(call.Cap), s.holds(call.From, c, seen)))
	}
	if longest == 0 {
		longest = forever
	}
	if m.Admission {
		if a := svc.Accepts[c]; a > 0 {
			longest = min(longest, a)
		}
	}
	return longest
}

func capOrForever(d time.Duration) time.Duration {
	if d <= 0 {
		return forever
	}
	return d
}

// Check runs every guardrail over s and returns the findings, in the
// order of the rules and then of the calls.
func Check(s Deployment) []Finding {
	var out []Finding
	out = append(out, s.unbounded()...)
	out = append(out, s.capsAboveBudget()...)
	out = append(out, s.writeTimeout()...)
	out = append(out, s.connectTimeouts()...)
	out = append(out, s.retries()...)
	out = append(out, s.capsExceedBudget()...)
	out = append(out, s.marginFloor()...)
	out = append(out, s.capsBelowP99()...)
	out = append(out, s.contracts()...)
	out = append(out, s.proxies()...)
	return out
}

func where(c Call) string { return c.From + " → " + c.Dep }

func setting(c Call) string {
	if c.Setting == "" {
		return fmt.Sprintf("%s's %s cap %s (fixed in code)", c.From, c.Dep, ms(c.Cap))
	}
	return fmt.Sprintf("%s %s=%s", c.From, c.Setting, ms(c.Cap))
}

// ms writes a duration for a finding: "800ms", "1.2s", "none".
func ms(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d == forever:
		return "none"
	}
	return d.String()
}

// unbounded: a call with no cap made where the request carries no
// deadline waits forever for a dependency that never answers.
func (s Deployment) unbounded() []Finding {
	var out []Finding
	for _, c := range s.Calls {
		if c.Cap > 0 {
			continue
		}
		bound := forever
		if c.Criticality != FireForward {
			for _, class := range s.Classes() {
				bound = min(bound, s.Holds(c.From, class))
			}
		}
		if bound != forever {
			continue
		}
		why := "its requests carry no deadline"
		if c.Criticality == FireForward {
			why = "a worker makes it, outside any request"
		} else if svc, ok := s.service(c.From); ok && c.From == s.Edge.Service && !svc.Settings.Mechanisms.EdgeDeadline {
			why = "the edge puts no deadline on the request (edge_deadline off)"
		} else if ok && !svc.Settings.Mechanisms.HonourCancel {
			why = fmt.Sprintf("%s drops its caller's deadline (honour_cancel off)", c.From)
		}
		set, fix := setting(c), fmt.Sprintf("give the call a cap (%s)", flagOr(c))
		if svc, ok := s.service(c.From); ok && !svc.Settings.Mechanisms.Caps {
			what := c.Setting
			if what == "" {
				what = "its cap fixed in code"
			}
			set = fmt.Sprintf("%s caps off (%s is not applied)", c.From, what)
			fix = "turn the caps on (--mechanisms caps=on)"
		}
		out = append(out, Finding{Rule: RuleUnbounded, Where: where(c), Setting: set,
			Problem: fmt.Sprintf("%s's call to %s has no cap and no budget: %s, so if %s never answers, %s waits forever", c.From, c.Dep, why, c.To, c.From),
			Fix:     fix + ", or put a deadline on the request (mode budgeted, or --mechanisms edge_deadline=on)"})
	}
	return out
}

func flagOr(c Call) string {
	if c.Setting == "" {
		return "in code"
	}
	return c.Setting
}

// capsAboveBudget: a cap longer than the longest budget the caller can
// hold never takes effect: outer must be larger than inner, hop by hop.
func (s Deployment) capsAboveBudget() []Finding {
	var out []Finding
	for _, c := range s.Calls {
		if c.Cap <= 0 || c.Criticality == FireForward {
			continue
		}
		for _, class := range s.Classes() {
			h := s.Holds(c.From, class)
			if h == forever || c.Cap <= h {
				continue
			}
			out = append(out, Finding{Rule: RuleCapAboveBudget, Where: where(c), Setting: setting(c),
				Problem: fmt.Sprintf("the cap is above the longest %s budget %s can hold (%s): the caller gives up first, and the callee works on for nobody",
					class, c.From, ms(h)),
				Fix: fmt.Sprintf("lower %s below %s, or raise the %s budget above it", flagOr(c), ms(h), class)})
			break
		}
	}
	return out
}

// writeTimeout: the edge's HTTP server cuts an answer written after its
// write timeout, whatever budget the request was given.
func (s Deployment) writeTimeout() []Finding {
	e := s.Edge
	if e.WriteTimeout <= 0 {
		return nil
	}
	var out []Finding
	for _, class := range s.Classes() {
		b := e.Budgets.For(class)
		if b.Max < e.WriteTimeout {
			continue
		}
		out = append(out, Finding{Rule: RuleWriteTimeout, Where: e.Service,
			Setting: fmt.Sprintf("%s %s=%s", e.Service, maxBudgetFlag(class), ms(b.Max)),
			Problem: fmt.Sprintf("a %s request may ask for %s, but the HTTP server's write timeout (%s) cuts any answer written later",
				class, ms(b.Max), ms(e.WriteTimeout)),
			Fix: fmt.Sprintf("keep %s below the write timeout %s", maxBudgetFlag(class), ms(e.WriteTimeout))})
	}
	return out
}

// GRPCDefaultConnect bounds an attempt to connect when nothing else
// does: gRPC's own default.
const GRPCDefaultConnect = 20 * time.Second

// connectTimeouts: a connect timeout longer than the request budget lets
// one dependency whose address accepts nothing spend all of it on the
// handshake. The budget is the longest a request can carry at the
// caller, or, where it carries none, what the client waits at the edge.
func (s Deployment) connectTimeouts() []Finding {
	type key struct {
		ct, budget time.Duration
		set, what  string
	}
	var keys []key
	names := map[key][]string{}
	for _, svc := range s.Services {
		if !slices.ContainsFunc(s.Calls, func(c Call) bool { return c.From == svc.Name && c.Criticality != FireForward }) {
			continue
		}
		k := key{ct: svc.Settings.ConnectTimeout(), set: "--connect-timeout=" + ms(svc.Settings.Connect)}
		if k.ct <= 0 {
			k.ct, k.set = GRPCDefaultConnect, fmt.Sprintf("connect_timeout off (gRPC's default, %s)", ms(GRPCDefaultConnect))
		}
		k.budget = forever
		for _, class := range s.Classes() {
			if h := s.Holds(svc.Name, class); h < k.budget {
				k.budget, k.what = h, fmt.Sprintf("the longest %s budget a request can hold there", class)
			}
		}
		if k.budget == forever {
			k.budget, k.what = s.Edge.Budgets.For(deadline.Interactive).Default, "the interactive budget the client waits"
		}
		if k.ct < k.budget {
			continue
		}
		if names[k] == nil {
			keys = append(keys, k)
		}
		names[k] = append(names[k], svc.Name)
	}
	var out []Finding
	for _, k := range keys {
		who := strings.Join(names[k], ", ")
		fix := fmt.Sprintf("lower --connect-timeout well under %s: %s or less", ms(k.budget), ms(connectWithin(k.budget)))
		if strings.HasPrefix(k.set, "connect_timeout off") {
			fix = fmt.Sprintf("bound connecting apart from the call, well under %s: --mechanisms connect_timeout=on with --connect-timeout=%s or less",
				ms(k.budget), ms(connectWithin(k.budget)))
		}
		out = append(out, Finding{Rule: RuleConnectTimeout, Where: who, Setting: k.set + " at " + who,
			Problem: fmt.Sprintf("an attempt to connect may take %s, not less than %s (%s): a dependency whose address accepts nothing spends the whole request on the handshake", ms(k.ct), k.what, ms(k.budget)),
			Fix:     fix})
	}
	return out
}

// connectWithin is the connect timeout a fix suggests under a budget: a
// quarter of it, to the millisecond, which leaves the call the rest.
func connectWithin(budget time.Duration) time.Duration {
	return max((budget / 4).Truncate(time.Millisecond), time.Millisecond)
}

func maxBudgetFlag(c deadline.Class) string {
	if c == deadline.Interactive {
		return "--max-budget"
	}
	return "--" + string(c) + "-max-budget"
}

func budgetFlag(c deadline.Class) string {
	if c == deadline.Interactive {
		return "--budget"
	}
	return "--" + string(c) + "-budget"
}

// paths are the chains of calls from the edge down, each in order.
func (s Deployment) paths() [][]Call {
	var out [][]Call
	var walk func(from string, prefix []Call)
	walk = func(from string, prefix []Call) {
		for _, c := range s.Calls {
			if c.From != from || c.Criticality == FireForward || slices.ContainsFunc(prefix, func(p Call) bool { return p.From == c.To }) {
				continue
			}
			path := append(slices.Clone(prefix), c)
			out = append(out, path)
			walk(c.To, path)
		}
	}
	walk(s.Edge.Service, nil)
	return out
}

// retries: attempts multiply along a path; more than one layer that
// retries turns one failure into a storm. Paths that share their layers
// down to the last call, and multiply alike, are one finding.
func (s Deployment) retries() []Finding {
	type group struct {
		path    []Call
		product int
		deps    []string
	}
	var groups []*group
	for _, p := range s.paths() {
		last := p[len(p)-1]
		product, retrying := 1, 0
		for _, c := range p {
			product *= max(c.Attempts, 1)
			if c.Attempts > 1 {
				retrying++
			}
		}
		if retrying < 2 || last.Attempts <= 1 {
			continue // reported at the path's end that retries
		}
		head := pathName(p[:len(p)-1])
		i := slices.IndexFunc(groups, func(g *group) bool {
			return pathName(g.path[:len(g.path)-1]) == head && g.product == product && g.path[len(g.path)-1].Attempts == last.Attempts
		})
		if i < 0 {
			groups = append(groups, &group{path: p, product: product})
			i = len(groups) - 1
		}
		groups[i].deps = append(groups[i].deps, last.Dep)
	}
	var out []Finding
	for _, g := range groups {
		var layers, retriers []string
		for _, c := range g.path[:len(g.path)-1] {
			layers = append(layers, fmt.Sprintf("%d × %s", max(c.Attempts, 1), where(c)))
			if c.Attempts > 1 {
				retriers = append(retriers, c.From)
			}
		}
		last := g.path[len(g.path)-1]
		retriers = append(retriers, last.From)
		layers = append(layers, fmt.Sprintf("%d × %s → each", last.Attempts, last.From))
		deps := strings.Join(g.deps, ", ")
		out = append(out, Finding{Rule: RuleRetriesMultiplied, Where: pathName(g.path[:len(g.path)-1]) + " → {" + deps + "}",
			Setting: fmt.Sprintf("retries at %s (--mechanisms retries=%s)", strings.Join(retriers, " and "), s.retryMode(last.From)),
			Problem: fmt.Sprintf("%d calls of each of %s for one failing request: %s", g.product, deps, strings.Join(layers, ", ")),
			Fix:     "retry at one layer only, within the budget: --mechanisms retries=budgeted (or off)"})
	}
	return out
}

func (s Deployment) retryMode(name string) mode.Retries {
	svc, _ := s.service(name)
	return svc.Settings.Mechanisms.Retries
}

func pathName(p []Call) string {
	parts := []string{p[0].From}
	for _, c := range p {
		parts = append(parts, c.Dep)
	}
	return strings.Join(parts, " → ")
}

// Worst is the longest the named service's route can spend in its calls
// given a budget of the given length at it (forever: none), with each
// call's cap and attempts: stages add up, a parallel stage costs its
// slowest call, optional and fire-forward calls are off the path. A
// service that clips its calls to the budget never spends more than it.
func (s Deployment) Worst(name, route string, budget time.Duration) time.Duration {
	return s.worst(name, route, budget, map[string]bool{})
}

func (s Deployment) worst(name, route string, budget time.Duration, seen map[string]bool) time.Duration {
	if seen[name] {
		return forever
	}
	seen[name] = true
	defer delete(seen, name)
	svc, _ := s.service(name)
	if name == s.Edge.Service && !svc.Settings.Mechanisms.EdgeDeadline {
		budget = forever // the client's budget is on no context
	}
	stages := map[int]time.Duration{}
	for _, c := range s.Calls {
		if c.From != name || (route != "" && c.Route != route) || c.Criticality == Optional || c.Criticality == FireForward {
			continue
		}
		// A blind call's worst case is its cap (the callee may hang);
		// with no cap, whatever the callee can take under the deadline
		// it is given, if it keeps it.
		one := c.Cap
		if one <= 0 {
			callee, ok := s.service(c.To)
			given := budget
			if !callee.Settings.Mechanisms.HonourCancel {
				given = forever
			}
			one = forever // a callee this shop does not describe
			if ok {
				one = s.worst(c.To, c.Method, given, seen)
			}
		}
		total := mulSat(one, max(c.Attempts, 1))
		if c.Parallel {
			stages[c.Stage] = max(stages[c.Stage], total)
		} else {
			stages[c.Stage] = addSat(stages[c.Stage], total)
		}
	}
	var sum time.Duration
	for _, d := range stages {
		sum = addSat(sum, d)
	}
	if svc.Settings.Mechanisms.ClipToBudget && budget != forever {
		sum = min(sum, budget)
	}
	return sum
}

func mulSat(d time.Duration, n int) time.Duration {
	if d == forever || d > forever/time.Duration(n) {
		return forever
	}
	return d * time.Duration(n)
}

func addSat(a, b time.Duration) time.Duration {
	if a == forever || b == forever || a > forever-b {
		return forever
	}
	return a + b
}

// capsExceedBudget: below an edge that does not clip, the caps (times
// their attempts) add up to more than the client waits: work goes on long
// after the client has given up.
func (s Deployment) capsExceedBudget() []Finding {
	var out []Finding
	for _, class := range s.Classes() {
		b := s.Edge.Budgets.For(class).Default
		for _, route := range s.routes(s.Edge.Service) {
			w := s.Worst(s.Edge.Service, route, b)
			if w == forever || w <= b {
				continue // unbounded is reported as such
			}
			out = append(out, Finding{Rule: RuleCapsExceedBudget, Where: s.Edge.Service + " " + route,
				Setting: fmt.Sprintf("%s %s=%s, and the caps below it: %s", s.Edge.Service, budgetFlag(class), ms(b), s.capList(s.Edge.Service, route)),
				Problem: fmt.Sprintf("one %s %s can spend %s in its calls, blind to the %s the client waits", class, route, ms(w), ms(b)),
				Fix:     "clip every call to the remaining budget (--mechanisms clip_to_budget=on, edge_deadline=on), or lower the caps and retries until they fit"})
		}
		if class == deadline.Interactive && len(out) > 0 {
			break // the other classes' budgets are longer still
		}
	}
	return out
}

func (s Deployment) routes(from string) []string {
	var out []string
	for _, c := range s.Calls {
		if c.From == from && !slices.Contains(out, c.Route) {
			out = append(out, c.Route)
		}
	}
	return out
}

func (s Deployment) capList(from, route string) string {
	var parts []string
	var walk func(from, route string)
	walk = func(from, route string) {
		for _, c := range s.Calls {
			if c.From != from || (route != "" && c.Route != route) || c.Criticality == Optional || c.Criticality == FireForward {
				continue
			}
			cap := "no cap"
			if c.Cap > 0 {
				cap = ms(c.Cap)
			}
			parts = append(parts, fmt.Sprintf("%s %d × %s", c.Dep, max(c.Attempts, 1), cap))
			walk(c.To, c.Method)
		}
	}
	walk(from, route)
	return strings.Join(parts, ", ")
}

// marginFloor: the margin and the floor against each other, the budgets
// and the caps, where a service clips its calls (they apply nowhere
// else). Services with the same margin and floor share a finding.
func (s Deployment) marginFloor() []Finding {
	type pair struct{ margin, floor time.Duration }
	var pairs []pair
	names := map[pair][]string{}
	for _, svc := range s.Services {
		st := svc.Settings
		if !st.Mechanisms.ClipToBudget {
			continue
		}
		p := pair{st.Margin, st.Floor}
		if names[p] == nil {
			pairs = append(pairs, p)
		}
		names[p] = append(names[p], svc.Name)
	}
	var out []Finding
	for _, p := range pairs {
		who := strings.Join(names[p], ", ")
		set := fmt.Sprintf("--margin=%s --floor=%s at %s", ms(p.margin), ms(p.floor), who)
		if p.floor > 0 && p.margin >= p.floor {
			out = append(out, Finding{Rule: RuleMarginFloor, Where: who, Setting: set,
				Problem: "the time kept back for the answer's way back is not below the least time worth starting a call with: every call keeps back more than the work it is made for needs",
				Fix:     "keep the margin well below the floor (the defaults are 15ms and 20ms)"})
		}
		for _, class := range s.Classes() {
			b := s.Edge.Budgets.For(class).Default
			if p.margin+p.floor < b {
				continue
			}
			out = append(out, Finding{Rule: RuleFloorAboveBudget, Where: who,
				Setting: fmt.Sprintf("%s, against %s %s=%s", set, s.Edge.Service, budgetFlag(class), ms(b)),
				Problem: fmt.Sprintf("margin plus floor is not below the %s budget: no %s request sent without a deadline of its own gets a call made", class, class),
				Fix:     fmt.Sprintf("lower --floor (and --margin), or raise %s", budgetFlag(class))})
		}
	}
	for _, c := range s.Calls {
		svc, _ := s.service(c.From)
		st := svc.Settings
		if !st.Mechanisms.ClipToBudget || c.Cap <= 0 || c.Cap >= st.Floor {
			continue
		}
		out = append(out, Finding{Rule: RuleCapBelowFloor, Where: where(c), Setting: setting(c),
			Problem: fmt.Sprintf("the cap is below %s's floor (%s), the least time in which a hop can answer: the call is doomed", c.From, ms(st.Floor)),
			Fix:     fmt.Sprintf("raise %s above %s, or lower --floor", flagOr(c), ms(st.Floor))})
	}
	return out
}

// capsBelowP99: a cap below the dependency's p99 manufactures failures
// for requests that would have succeeded. A capped call never lasts much
// longer than its cap, so the sign is in the outcomes: more than one call
// in a hundred ran into the cap.
func (s Deployment) capsBelowP99() []Finding {
	var out []Finding
	for _, c := range s.Calls {
		if c.Cap <= 0 || c.TimedOut <= 0.01 {
			continue
		}
		out = append(out, Finding{Rule: RuleCapBelowP99, Where: where(c), Setting: setting(c),
			Problem: fmt.Sprintf("the cap is below %s's p99: %.1f%% of %d calls ran into it, and each of them fails a request that might have succeeded",
				c.Dep, 100*c.TimedOut, c.Observed),
			Fix: fmt.Sprintf("raise %s above %s's p99 plus a margin (its contract's need says how much it takes), or make %s faster", flagOr(c), c.Dep, c.Dep)})
	}
	return out
}

// Sort orders findings by rule, then place: for a stable report.
func Sort(f []Finding) {
	order := map[string]int{}
	for i, r := range Rules() {
		order[r] = i
	}
	sort.SliceStable(f, func(i, j int) bool { return order[f[i].Rule] < order[f[j].Rule] })
}
