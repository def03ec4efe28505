package budgetcheck

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// shopOf is a three-hop shop, edge → mid → leaf, every service in mode m.
func shopOf(m mode.Mode, midCap, leafCap time.Duration, attempts int) Deployment {
	st := mode.Settings{Mode: m, Mechanisms: m.Mechanisms(), Margin: 3 * time.Millisecond, Floor: 20 * time.Millisecond, Connect: 2 * time.Second}
	acc := map[deadline.Class]time.Duration{}
	if st.Mechanisms.Admission {
		for _, c := range []deadline.Class{deadline.Interactive, deadline.Background, deadline.Batch} {
			acc[c] = deadline.DefaultBudgets().For(c).Max
		}
	}
	return Deployment{
		Source:   "test",
		Edge:     Edge{Service: "edge", Budgets: deadline.DefaultBudgets(), WriteTimeout: time.Hour},
		Services: []Service{{Name: "edge", Settings: st}, {Name: "mid", Settings: st, Accepts: acc}, {Name: "leaf", Settings: st, Accepts: acc}},
		Calls: []Call{
			{From: "edge", To: "mid", Dep: "mid", Setting: "--mid-cap", Cap: midCap, Attempts: attempts, Criticality: Critical, Stage: 1, Route: "R", Method: "R"},
			{From: "mid", To: "leaf", Dep: "leaf", Setting: "--leaf-cap", Cap: leafCap, Attempts: attempts, Criticality: Critical, Stage: 1, Route: "R", Method: "M"},
		},
	}
}

func rules(f []Finding) []string {
	var out []string
	for _, x := range f {
		out = append(out, x.Rule)
	}
	return out
}

func has(f []Finding, rule string) bool {
	for _, x := range f {
		if x.Rule == rule {
			return true
		}
	}
	return false
}

func TestBudgetedShopIsClean(t *testing.T) {
	if f := Check(shopOf(mode.Budgeted, 0, 300*time.Millisecond, 1)); len(f) != 0 {
		t.Fatalf("findings on a budgeted shop: %+v", f)
	}
}

func TestNaiveUncappedCallIsUnbounded(t *testing.T) {
	f := Check(shopOf(mode.Naive, 0, 300*time.Millisecond, 1))
	if !has(f, RuleUnbounded) || !strings.Contains(f[0].Setting, "--mid-cap=0") || !strings.Contains(f[0].Problem, "edge_deadline off") {
		t.Fatalf("want the edge → mid call unbounded, got %+v", f)
	}
	// Capped, it is bounded.
	if f := Check(shopOf(mode.Naive, time.Second, 300*time.Millisecond, 1)); has(f, RuleUnbounded) {
		t.Fatalf("a capped call reported unbounded: %+v", f)
	}
}

func TestDroppedDeadlineLeavesCallUnbounded(t *testing.T) {
	s := shopOf(mode.Budgeted, 0, 0, 1)
	s.Services[1].Settings.Mechanisms.HonourCancel = false
	f := Check(s)
	if !has(f, RuleUnbounded) || !strings.Contains(Check(s)[0].Problem, "honour_cancel off") {
		t.Fatalf("want mid → leaf unbounded once mid drops its deadline, got %+v", f)
	}
}

func TestRetriesMultiplyAcrossLayers(t *testing.T) {
	f := Check(shopOf(mode.Naive, time.Second, 100*time.Millisecond, 3))
	var got Finding
	for _, x := range f {
		if x.Rule == RuleRetriesMultiplied {
			got = x
		}
	}
	if !strings.Contains(got.Problem, "9 calls of each of leaf") || !strings.Contains(got.Problem, "3 × edge → mid, 3 × mid → each") {
		t.Fatalf("want 3 × 3 named by layer, got %+v", f)
	}
	// One layer retrying is no storm.
	s := shopOf(mode.Naive, time.Second, 100*time.Millisecond, 3)
	s.Calls[0].Attempts = 1
	if has(Check(s), RuleRetriesMultiplied) {
		t.Fatalf("one retrying layer reported: %+v", Check(s))
	}
}

func TestCapAboveLongestBudget(t *testing.T) {
	s := shopOf(mode.Budgeted, 0, 800*time.Millisecond, 1)
	s.Edge.Budgets.Interactive = deadline.ClassBudget{Default: 400 * time.Millisecond, Max: 500 * time.Millisecond}
	f := Check(s)
	if !has(f, RuleCapAboveBudget) || !strings.Contains(f[0].Setting, "mid --leaf-cap=800ms") || !strings.Contains(f[0].Problem, "500ms") {
		t.Fatalf("want the 800ms cap above the 500ms budget, got %+v", f)
	}
	s.Calls[1].Cap = 450 * time.Millisecond
	if has(Check(s), RuleCapAboveBudget) {
		t.Fatalf("a cap under the budget reported: %+v", Check(s))
	}
}

func TestEdgeWriteTimeoutBelowClassMaximum(t *testing.T) {
	s := shopOf(mode.Budgeted, 0, 300*time.Millisecond, 1)
	s.Edge.WriteTimeout = 30 * time.Second
	f := Check(s)
	if !has(f, RuleWriteTimeout) || !strings.Contains(f[0].Setting, "--background-max-budget=2m0s") {
		t.Fatalf("want background's 2m maximum above a 30s write timeout, got %+v", f)
	}
	s.Edge.WriteTimeout = time.Hour
	if has(Check(s), RuleWriteTimeout) {
		t.Fatal("a write timeout above every maximum reported")
	}
}

func TestBlindCapsAddUpPastTheClientBudget(t *testing.T) {
	s := shopOf(mode.Naive, 2*time.Second, 500*time.Millisecond, 1)
	f := Check(s)
	if !has(f, RuleCapsExceedBudget) {
		t.Fatalf("want 2s of caps under a 1.2s budget reported, got %v", rules(f))
	}
	// Clipped to the budget, the same caps cannot outlast it.
	s = shopOf(mode.Budgeted, 2*time.Second, 500*time.Millisecond, 1)
	if has(Check(s), RuleCapsExceedBudget) {
		t.Fatalf("a clipping shop reported: %+v", Check(s))
	}
	// Worst: a parallel stage costs its slowest call, stages add up.
	s = shopOf(mode.Naive, 0, 0, 1)
	s.Calls = []Call{
		{From: "edge", To: "leaf", Dep: "a", Cap: 100 * time.Millisecond, Attempts: 2, Stage: 1, Parallel: true, Route: "R", Criticality: Critical},
		{From: "edge", To: "leaf", Dep: "b", Cap: 300 * time.Millisecond, Attempts: 1, Stage: 1, Parallel: true, Route: "R", Criticality: Critical},
		{From: "edge", To: "leaf", Dep: "c", Cap: 50 * time.Millisecond, Attempts: 1, Stage: 2, Route: "R", Criticality: Critical},
		{From: "edge", To: "leaf", Dep: "d", Cap: time.Hour, Attempts: 1, Stage: 3, Route: "R", Criticality: Optional},
	}
	if w := s.Worst("edge", "R", forever); w != 350*time.Millisecond {
		t.Fatalf("worst = %v, want max(2×100, 300) + 50 = 350ms", w)
	}
}

func TestMarginAndFloor(t *testing.T) {
	s := shopOf(mode.Budgeted, 0, 10*time.Millisecond, 1)
	for i := range s.Services {
		s.Services[i].Settings.Margin = 30 * time.Millisecond
	}
	f := Check(s)
	for _, r := range []string{RuleMarginFloor, RuleCapBelowFloor} {
		if !has(f, r) {
			t.Fatalf("want %s, got %v", r, rules(f))
		}
	}
	if n := len(f); n != 2 {
		t.Fatalf("services sharing a margin and floor share a finding: got %d findings %v", n, rules(f))
	}
	s.Edge.Budgets.Interactive.Default = 40 * time.Millisecond
	if !has(Check(s), RuleFloorAboveBudget) {
		t.Fatalf("want margin + floor above a 40ms budget, got %v", rules(Check(s)))
	}
	// Naive calls use neither: nothing to say.
	if f := Check(shopOf(mode.Naive, time.Second, 10*time.Millisecond, 1)); has(f, RuleCapBelowFloor) {
		t.Fatalf("a blind shop's floor reported: %v", rules(f))
	}
}

func TestCapBelowObservedP99(t *testing.T) {
	s := shopOf(mode.Budgeted, 0, 300*time.Millisecond, 1)
	s.Calls[1].ObservedP99, s.Calls[1].Observed = 280*time.Millisecond, 200
	if has(Check(s), RuleCapBelowP99) {
		t.Fatal("a p99 under the cap reported")
	}
	s.Calls[1].TimedOut = 0.01
	if has(Check(s), RuleCapBelowP99) {
		t.Fatal("1% of calls at the cap is the p99 itself, not above it")
	}
	s.Calls[1].ObservedP99, s.Calls[1].TimedOut = 299*time.Millisecond, 0.05
	if f := Check(s); !has(f, RuleCapBelowP99) || !strings.Contains(f[0].Problem, "5.0% of 200 calls ran into it") {
		t.Fatalf("calls timing out at the cap are a p99 above it: %+v", f)
	}
}

func TestConnectTimeoutAboveBudget(t *testing.T) {
	// Budgeted: 2s to connect, under the 10s a request can hold.
	if f := Check(shopOf(mode.Budgeted, 0, 300*time.Millisecond, 1)); has(f, RuleConnectTimeout) {
		t.Fatalf("2s under a 10s budget reported: %+v", f)
	}
	// Naive: gRPC's 20s, and no deadline: against the client's 1.2s.
	f := Check(shopOf(mode.Naive, time.Second, 300*time.Millisecond, 1))
	var got []Finding
	for _, x := range f {
		if x.Rule == RuleConnectTimeout {
			got = append(got, x)
		}
	}
	if len(got) != 1 || got[0].Where != "edge, mid" || !strings.Contains(got[0].Setting, "gRPC's default, 20s") || !strings.Contains(got[0].Problem, "1.2s") {
		t.Fatalf("want edge and mid's 20s connect above the 1.2s budget, one finding, got %+v", got)
	}
	// Budgeted, with a connect timeout past the longest budget.
	s := shopOf(mode.Budgeted, 0, 300*time.Millisecond, 1)
	s.Edge.Budgets.Interactive = deadline.ClassBudget{Default: time.Second, Max: 1500 * time.Millisecond}
	s.Services[0].Settings.Mechanisms.Classes = false
	f = Check(s)
	if !has(f, RuleConnectTimeout) {
		t.Fatalf("2s connect over a 1.5s longest budget not reported: %+v", f)
	}
	// The fix names a value under the budget, not the one it flags (the
	// lessons' 2s was both).
	for _, x := range f {
		if x.Rule == RuleConnectTimeout && (strings.Contains(x.Fix, "2s") || !strings.Contains(x.Fix, "--connect-timeout") || !strings.Contains(x.Fix, "375ms or less")) {
			t.Errorf("fix %q for %q: want --connect-timeout at 375ms or less (a quarter of 1.5s), never the 2s it flags", x.Fix, x.Setting)
		}
	}
}

// A finding's fix never recommends the value it flags: no flag the
// setting names at a value comes back in the fix at that value.
func TestFixNeverRecommendsTheFlaggedValue(t *testing.T) {
	tight := shopOf(mode.Budgeted, 0, 300*time.Millisecond, 1)
	tight.Edge.Budgets.Interactive = deadline.ClassBudget{Default: 500 * time.Millisecond, Max: 600 * time.Millisecond}
	tight.Services[0].Settings.Mechanisms.Classes = false
	tight.Calls[1].Cap = 800 * time.Millisecond
	swapped := shopOf(mode.Budgeted, 0, 300*time.Millisecond, 1)
	swapped.Services[1].Settings.Margin, swapped.Services[1].Settings.Floor = 20*time.Millisecond, 3*time.Millisecond
	flagged := regexp.MustCompile(`(--[a-z-]+)=([0-9a-zµ.]+)`)
	n := 0
	for name, s := range map[string]Deployment{
		"naive": shopOf(mode.Naive, time.Second, 100*time.Millisecond, 3), "fragile": shopOf(mode.Fragile, 0, 0, 3),
		"a tight interactive budget": tight, "margin above the floor": swapped,
	} {
		for _, f := range Check(s) {
			n++
			for _, m := range flagged.FindAllStringSubmatch(f.Setting, -1) {
				again := regexp.MustCompile(regexp.QuoteMeta(m[1]) + `[^;,]*\b` + regexp.QuoteMeta(m[2]) + `\b`)
				if again.MatchString(f.Fix) {
					t.Errorf("%s: %s flags %s=%s and its fix recommends it: %q", name, f.Rule, m[1], m[2], f.Fix)
				}
			}
		}
	}
	if n < 5 {
		t.Fatalf("only %d findings: the shops do not exercise the rules", n)
	}
}

// In the fragile mode every call is unbounded, and each finding says the
// caps are off and how to turn them on.
func TestFragileEveryCallUnbounded(t *testing.T) {
	f := shopOf(mode.Fragile, 0, 0, 3)
	got := Check(f)
	for _, c := range f.Calls {
		found := false
		for _, x := range got {
			if x.Rule == RuleUnbounded && x.Where == where(c) {
				found = true
				if !strings.Contains(x.Setting, "caps off") || !strings.Contains(x.Fix, "caps=on") {
					t.Errorf("%s: setting %q, fix %q; want them to name the caps", x.Where, x.Setting, x.Fix)
				}
			}
		}
		if !found {
			t.Errorf("no %s finding for %s: %v", RuleUnbounded, where(c), rules(got))
		}
	}
}
