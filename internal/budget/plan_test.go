package budget

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func parse(t *testing.T, src string) File {
	t.Helper()
	f, err := Parse("test.yaml", strings.NewReader(src), false)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return f
}

func capsOf(p Plan) map[string]int64 {
	m := map[string]int64{}
	for _, c := range p.Calls {
		m[c.Name] = c.CapMs
	}
	return m
}

// The rule, case by case: available = target − edge − own − reserve; the
// critical path is the sum along seq, the max across par; the available
// time is divided in proportion to p99 along it; a par's branches each get
// the par's whole share as their cap; optional calls get p99 + margin.
func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		name      string
		src       string
		fits      bool
		available int64
		critical  int64
		caps      map[string]int64
		advice    []string // substrings, in order
	}{
		{"in series, in proportion", `
target: 400ms
reserve: 100ms
graph:
  seq:
    - call: {name: a, p99: 50ms}
    - call: {name: b, p99: 100ms}
`, true, 300, 150, map[string]int64{"a": 100, "b": 200}, nil},
		{"a par is its slowest branch, and each branch gets its share", `
target: 1s
edge: 100ms
own: 100ms
reserve: 200ms
graph:
  seq:
    - call: {name: a, p99: 100ms}
    - par:
        - call: {name: b, p99: 200ms}
        - call: {name: c, p99: 50ms}
        - seq:
            - call: {name: d, p99: 100ms}
            - call: {name: e, p99: 100ms}
`, true, 600, 300, map[string]int64{"a": 200, "b": 400, "c": 400, "d": 200, "e": 200}, nil},
		{"a par with one branch is the branch", `
target: 300ms
graph:
  par:
    - call: {name: a, p99: 100ms}
`, true, 300, 100, map[string]int64{"a": 300}, nil},
		{"optional beside the path takes nothing from it", `
target: 300ms
margin: 10ms
graph:
  par:
    - call: {name: a, p99: 100ms}
    - call: {name: opt, p99: 50ms, criticality: optional}
    - call: {name: later, p99: 500ms, criticality: deferred}
    - call: {name: audit, p99: 900ms, criticality: fire-forward}
`, true, 300, 100, map[string]int64{"a": 300, "opt": 60, "later": 510, "audit": 910}, nil},
		{"optional in series is flagged", `
target: 300ms
graph:
  seq:
    - call: {name: a, p99: 100ms}
    - call: {name: recs, p99: 50ms, criticality: optional}
`, true, 300, 100, map[string]int64{"a": 300, "recs": 50},
			[]string{"optional recs (50 ms) would lengthen the critical path by 50 ms"}},
		{"optional longer than the par beside it is flagged", `
target: 100ms
graph:
  par:
    - call: {name: a, p99: 50ms}
    - call: {name: recs, p99: 150ms, criticality: optional}
`, true, 100, 50, map[string]int64{"a": 100, "recs": 150},
			[]string{"optional recs (150 ms) would lengthen the critical path by 50 ms"}},
		{"margins count against the fit", `
target: 210ms
margin: 10ms
graph:
  seq:
    - call: {name: a, p99: 100ms}
    - call: {name: b, p99: 100ms}
`, false, 210, 200, map[string]int64{"a": 105, "b": 105},
			[]string{"no configuration fixes this: the critical path's worst case, 220 ms, is more than the available 210 ms",
				"parallelise a and b (consecutive in a seq; if they are independent): worst case 110 ms",
				"take a off the critical path", "take b off the critical path",
				"renegotiate the target to at least 220 ms"}},
		// auth beside profile (450 ms) and taking auth off (450 ms) do not
		// fit, so they are not offered.
		{"too long: the redesigns that fit, and the target that would", `
target: 500ms
edge: 20ms
reserve: 80ms
graph:
  seq:
    - call: {name: auth, p99: 50ms}
    - call: {name: profile, p99: 200ms}
    - call: {name: prices, p99: 250ms}
`, false, 400, 500, map[string]int64{"auth": 40, "profile": 160, "prices": 200},
			[]string{"no configuration fixes this",
				"parallelise profile and prices (consecutive in a seq; if they are independent): worst case 300 ms",
				"parallelise all of auth, profile, prices (if they are independent): worst case 250 ms",
				"take profile off the critical path (defer it, make it optional with a default, or drop it): worst case 300 ms",
				"take prices off the critical path (defer it, make it optional with a default, or drop it): worst case 250 ms",
				"renegotiate the target to at least 600 ms (worst case 500 ms + edge 20 ms + own 0 ms + reserve 80 ms)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Make(parse(t, tc.src))
			if p.Fits != tc.fits || p.AvailableMs != tc.available || p.CriticalPathP99Ms != tc.critical {
				t.Errorf("fits %v, available %d ms, critical path %d ms; want %v, %d, %d",
					p.Fits, p.AvailableMs, p.CriticalPathP99Ms, tc.fits, tc.available, tc.critical)
			}
			got := capsOf(p)
			for name, want := range tc.caps {
				if got[name] != want {
					t.Errorf("%s: cap %d ms, want %d", name, got[name], want)
				}
			}
			if len(got) != len(tc.caps) {
				t.Errorf("caps %v, want %v", got, tc.caps)
			}
			if len(p.Advice) != len(tc.advice) {
				t.Errorf("advice:\n%s\nwant %d lines", strings.Join(p.Advice, "\n"), len(tc.advice))
			}
			for i := range min(len(p.Advice), len(tc.advice)) {
				if !strings.Contains(p.Advice[i], tc.advice[i]) {
					t.Errorf("advice %d: %q, want it to contain %q", i, p.Advice[i], tc.advice[i])
				}
			}
		})
	}
}

// Bad input is answered with the line and the field at fault.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"empty", ``, "test.yaml: empty file"},
		{"unknown field", "target: 1s\ngrpah: {}\n", `test.yaml:2: the file: unknown field "grpah"`},
		{"bad duration", "target: 1s\ngraph:\n  call: {name: a, p99: soon}\n", `test.yaml:3: call a: p99 "soon": want a duration such as 120ms or 2s`},
		{"negative duration", "target: 1s\nedge: -5ms\ngraph:\n  call: {name: a, p99: 1ms}\n", `test.yaml:2: edge "-5ms": want a duration`},
		{"no target", "graph:\n  call: {name: a, p99: 1ms}\n", "test.yaml:1: no target"},
		{"no graph", "target: 1s\n", "test.yaml:1: no graph"},
		{"empty seq", "target: 1s\ngraph:\n  seq: []\n", "test.yaml:3: seq: want a list of one or more seq, par or call"},
		{"two kinds in one node", "target: 1s\ngraph:\n  seq: [{call: {name: a, p99: 1ms}}]\n  par: [{call: {name: b, p99: 1ms}}]\n", "test.yaml:3: graph: want exactly one of seq, par or call"},
		{"unknown call field", "target: 1s\ngraph:\n  call: {name: a, p99: 1ms, timeout: 2s}\n", `test.yaml:3: call: unknown field "timeout" (want name, p50, p99, cap, criticality)`},
		{"unknown criticality", "target: 1s\ngraph:\n  call: {name: a, p99: 1ms, criticality: nice}\n", `test.yaml:3: call a: criticality "nice": want critical, optional, deferred or fire-forward`},
		{"no p99", "target: 1s\ngraph:\n  call: {name: a}\n", `test.yaml:3: call "a": no p99`},
		{"a name twice", "target: 1s\ngraph:\n  seq:\n    - call: {name: a, p99: 1ms}\n    - call: {name: a, p99: 1ms}\n", `test.yaml:5: call "a": named twice (first on line 4)`},
		{"negative available", "target: 100ms\nedge: 50ms\nreserve: 60ms\ngraph:\n  call: {name: a, p99: 1ms}\n",
			"test.yaml: nothing is available for the dependencies: target 100 ms − edge 50 ms − own 0 ms − reserve 60 ms = -10 ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("test.yaml", strings.NewReader(tc.src), false)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func load(t *testing.T, name string) Plan {
	t.Helper()
	path := filepath.Join("..", "..", "docs", "budgets", name)
	r, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, err := Parse(path, r, false)
	if err != nil {
		t.Fatal(err)
	}
	return Make(f)
}

// The lessons' own tables, from the shipped example files.
func TestLessonsTables(t *testing.T) {
	t.Run("the pattern card's 800 ms table", func(t *testing.T) {
		p := load(t, "card-800ms.yaml")
		if !p.Fits || p.AvailableMs != 650 {
			t.Fatalf("fits %v, available %d ms; want a fit and 800 − 20 − 130 = 650", p.Fits, p.AvailableMs)
		}
		// The card rounds its rows to 50 ms: auth ≈ 100, catalog ≈ 300,
		// pricing ≈ 250, and together they are the 650 ms.
		var sum int64
		for name, card := range map[string]int64{"auth": 100, "catalog": 300, "pricing": 250} {
			got := capsOf(p)[name]
			sum += got
			if got < card-5 || got > card+5 {
				t.Errorf("%s: %d ms, the card has %d", name, got, card)
			}
		}
		if sum < 648 || sum > 650 {
			t.Errorf("the caps sum to %d ms, want the 650 available", sum)
		}
	})
	t.Run("the allocation note's 380 ms", func(t *testing.T) {
		p := load(t, "note-500ms.yaml")
		if !p.Fits || p.AvailableMs != 380 {
			t.Errorf("fits %v, available %d ms; want a fit and 500 − 40 − 40 − 40 = 380", p.Fits, p.AvailableMs)
		}
		s := capsOf(p)
		if s["profile"] != s["inventory"] {
			t.Errorf("the par's branches get %d and %d ms, want the same cap", s["profile"], s["inventory"])
		}
		if got := s["auth"] + s["inventory"]; got < 378 || got > 380 {
			t.Errorf("the critical path's caps sum to %d ms, want the 380 available", got)
		}
	})
	t.Run("the allocation note's sequential 40/120/180", func(t *testing.T) {
		p := load(t, "note-sequential.yaml")
		want := map[string]int64{"auth": 40, "profile": 120, "recommendations": 180}
		if got := capsOf(p); len(got) != 3 || got["auth"] != 40 || got["profile"] != 120 || got["recommendations"] != 180 {
			t.Errorf("caps %v, want %v", got, want)
		}
		// With its 40 ms slack, 380 ms of the note's 500 − 40 − 40 − 40.
		if p.AvailableMs+40 != 380 {
			t.Errorf("available %d ms, want 380 − 40 ms of slack", p.AvailableMs)
		}
	})
	t.Run("Mercado's checkout fits, the slow chain does not", func(t *testing.T) {
		if p := load(t, "checkout.yaml"); !p.Fits || p.AvailableMs != 1000 || p.CriticalPathP99Ms != 620 {
			t.Errorf("checkout: fits %v, available %d, critical path %d; want a fit, 1000 and 180 + 350 + 90", p.Fits, p.AvailableMs, p.CriticalPathP99Ms)
		}
		p := load(t, "too-slow.yaml")
		if p.Fits || p.CriticalPathP99Ms != 390 || len(p.Advice) == 0 || !strings.HasPrefix(p.Advice[0], "no configuration fixes this") {
			t.Errorf("too-slow: fits %v, critical path %d, advice %q", p.Fits, p.CriticalPathP99Ms, p.Advice)
		}
	})
}
