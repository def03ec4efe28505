package budgetcheck

import (
	"testing"
	"time"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/pkg/deadline"
)

// contractsOf publishes the contract of every service of s, the leaf's
// own work taking leafWork.
func contractsOf(s Deployment, leafWork time.Duration) []Contract {
	var out []Contract
	for _, svc := range s.Services {
		var calls []Call
		for _, c := range s.Calls {
			if c.From == svc.Name {
				calls = append(calls, c)
			}
		}
		own := map[string]time.Duration{}
		if svc.Name == "leaf" {
			own["M"] = leafWork
		}
		c := Publish(svc.Name, svc.Settings, svc.Accepts, calls, own)
		if svc.Name == s.Edge.Service {
			c.Edge = PublishEdge(s.Edge)
		}
		out = append(out, c)
	}
	return out
}

func TestPublishedPromises(t *testing.T) {
	b := shopOf(mode.Budgeted, 0, 300*time.Millisecond, 1)
	leaf := contractsOf(b, time.Minute)[2]
	if p, _ := leaf.promise(deadline.Interactive); !p.ByDeadline || !p.Bounded || p.MS != 10_000 {
		t.Fatalf("a budgeted leaf promises by the deadline, at most its class's 10s: %+v", p)
	}
	n := shopOf(mode.Naive, 0, 300*time.Millisecond, 3)
	cs := contractsOf(n, 500*time.Millisecond)
	if p, _ := cs[2].promise(deadline.Interactive); p.ByDeadline || p.MS != 500 {
		t.Fatalf("a naive leaf promises its own work, 500ms: %+v", p)
	}
	if p, _ := cs[1].promise(deadline.Interactive); p.MS != 900 {
		t.Fatalf("naive mid promises 3 × its 300ms cap: %+v", p)
	}
	if p, _ := cs[0].promise(deadline.Interactive); p.Bounded {
		t.Fatalf("an uncapped blind call promises no bound: %+v", p)
	}
}

func TestPublishedNeeds(t *testing.T) {
	s := shopOf(mode.Budgeted, 0, 300*time.Millisecond, 1)
	cs := contractsOf(s, 40*time.Millisecond)
	if n, _ := cs[1].need("R", deadline.Interactive); n.Source != "config" || n.MS != 20 {
		t.Fatalf("with no traffic, mid needs its floor for the leaf: %+v", n)
	}
	s.Calls[1].ObservedP99 = 120 * time.Millisecond
	cs = contractsOf(s, 40*time.Millisecond)
	if n, _ := cs[1].need("R", deadline.Interactive); n.Source != "observed" || n.MS != 120 {
		t.Fatalf("with traffic, mid needs the leaf's observed p99: %+v", n)
	}
	if n, _ := cs[2].need("M", deadline.Batch); n.MS != 40 || n.Source != "config" {
		t.Fatalf("the leaf needs its own work: %+v", n)
	}
}

func TestComposedContracts(t *testing.T) {
	// Naive: the leaf works 500ms, mid waits 300ms for it.
	n := shopOf(mode.Naive, time.Second, 300*time.Millisecond, 1)
	n.Contracts = contractsOf(n, 500*time.Millisecond)
	round := FromContracts("test", n.Contracts)
	found := false
	for _, f := range Check(round) {
		if f.Rule == RulePromiseAboveWait && f.Where == "mid → leaf" {
			found = true
		}
	}
	if !found {
		t.Fatalf("want the leaf's 500ms promise above mid's 300ms wait, got %v", rules(Check(round)))
	}
	// Budgeted, the same leaf answers by mid's deadline.
	b := shopOf(mode.Budgeted, 0, 300*time.Millisecond, 1)
	b.Contracts = contractsOf(b, 500*time.Millisecond)
	if f := Check(FromContracts("test", b.Contracts)); has(f, RulePromiseAboveWait) {
		t.Fatalf("a callee that keeps the deadline reported: %+v", f)
	}
	// A callee that needs more than its caller gives it.
	b.Calls[0].ObservedP99 = 0
	b.Edge.Budgets.Interactive = deadline.ClassBudget{Default: 100 * time.Millisecond, Max: 10 * time.Second}
	b.Calls[1].ObservedP99 = 150 * time.Millisecond
	b.Contracts = contractsOf(b, 0)
	f := Check(FromContracts("test", b.Contracts))
	if !has(f, RuleNeedAboveBudget) {
		t.Fatalf("want mid's need of 150ms above the edge's 100ms, got %+v", f)
	}
}

// A fragile service promises no bound, leaf included: with caps off,
// nothing bounds its waits, whatever its dependencies take today. Given
// back its caller's deadline (honour_cancel and admission on, stage 2),
// it promises to answer by it.
func TestFragilePromisesNoBound(t *testing.T) {
	f := shopOf(mode.Fragile, 0, 0, 3)
	for _, c := range contractsOf(f, 50*time.Millisecond) {
		for _, p := range c.Promises {
			if p.Bounded || p.ByDeadline {
				t.Errorf("fragile %s promises %+v for %s, want no bound", c.Service, p, p.Class)
			}
		}
	}
	var stage2 mode.Overrides
	if err := stage2.Set("honour_cancel=on,admission=on"); err != nil {
		t.Fatal(err)
	}
	for i := range f.Services {
		f.Services[i].Settings.Mechanisms = mode.Fragile.Mechanisms().Apply(stage2)
		f.Services[i].Accepts = map[deadline.Class]time.Duration{deadline.Interactive: time.Second}
	}
	leaf := contractsOf(f, 50*time.Millisecond)[2]
	if p, _ := leaf.promise(deadline.Interactive); !p.Bounded || !p.ByDeadline || p.MS != 1000 {
		t.Errorf("a fragile leaf that keeps its caller's deadline promises %+v, want by the deadline, 1s", p)
	}
}
