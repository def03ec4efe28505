package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/agnivade/levenshtein"

	"github.com/mercado-lab/mercado/loadtest"
)

// labInfo is one lab as `mercado lab --help` lists it.
type labInfo struct {
	name, section, about string
	// claims: the lab ends with checks, and its exit status says what
	// they found (exitStatuses).
	claims bool
}

// labList is every lab but the scenarios, in the order the overview
// lists them.
func labList() []labInfo {
	return []labInfo{
		{"lesson7", "Replays (each writes ./lab-report/NAME.html too: --out DIR, or --out \"\" for none)", `lesson 7's chain: a 1200 ms deadline; catalog takes 280 ms,
payments 760 ms, shipping is degraded. Naive ends over the
deadline; budgeted clips shipping and ends within it.`, true},
		{"fanout", "", `lesson 7's exercise 2: a 900 ms deadline; catalog 250 ms and a
fraud screen 300 ms, independent; payments 500 ms. Naive in
series ends over the deadline; budgeted in series clips
payments; budgeted in parallel (catalog and fraud at once,
one budget) ends within it at about 800 ms.`, true},
		{"waterfall", "", `the 800 ms create-order: the gateway works 100 ms, orders keeps
80 ms for its answer, catalog takes 290 of its 300 ms, payment
gets min(400, 330), times out, and the client gets 202
processing at about 800 ms; the reconciler settles the order.`, true},
		{"isolation", "", `Drill 76 (the drill76 scenario, its figures while the carrier
hangs): shipping's carrier hangs under an open-loop stream of
checkouts while browsers keep browsing. Naive fills its shared
pool and browsing goes dark; budgeted keeps it green.`, true},
		{"capstone", "Lesson 8", `the fragile checkout (no read caps, no connect timeout, the
deadline ignored) under the carrier slow, then armoured a step
at a time, each on a fresh shop: + connect and read timeouts
from the healthy p99, + the budget in the chain, + bulkheads
and breakers; prints the before/after table (about 2 minutes;
--quick for a smoke test, --report FILE for charts).`, true},
		{"challenge", "Graded", `NAME --answer FILE: a course challenge's fault profile run on
the shop as the learner's answer sets it up (mode, caps,
margin, floor, bulkheads, breaker, mechanisms), graded
against the challenge's objectives with a hint for each one
missed; --json for a trainer to collect (lesson7, waterfall,
drill76, capstone: docs/course/09-challenges.md).`, true},
		{"console", "Watching", `the live console: the shop served with the console on the
gateway's admin listener (prints its URL); switch modes, set
faults, send traffic, run scenarios and watch the budget
shrink hop by hop, until Ctrl-C (docs/console.md).`, false},
		{"capacity", "Measurements", `the highest checkout rate the whole chain sustains open loop
with p99 within a bound (25 ms), in each mode, on the memory
store or PostgreSQL (--database-url), and what budgets cost
when nothing is wrong. It measures and makes no claims.`, false},
	}
}

const labIntro = `Usage: mercado lab [lab or scenario] [flags]
       mercado lab NAME --help   (that lab's own flags)

Starts the five services in this process on free loopback ports, breaks a
dependency on purpose, and prints what naive and budgeted modes did,
measured, then the lab's checks: its claims, PASS or FAIL, with the
measured value. With no lab named, runs the drill76 scenario (about 50 s).

Scenarios (loadtest/scenarios; writes ./lab-report/results.json and
report.html; --quick shortens each phase to its quick: length, else to
a fifth; mercado lab scenario NAME|FILE runs one by name or from a file):
  %s
  (mercado lab lesson7 is the replay below; run its load scenario with
  mercado lab scenario lesson7)
`

// printLabUsage prints the overview of every lab: `mercado lab --help`.
func printLabUsage(w io.Writer) {
	fmt.Fprintf(w, labIntro, strings.Join(loadtest.Builtin(), ", "))
	for _, l := range labList() {
		if l.section != "" {
			fmt.Fprintf(w, "\n%s:\n", l.section)
		}
		writeAbout(w, l.name, l.about)
	}
	fmt.Fprintf(w, "\n%s\nFlags of a scenario (mercado lab, mercado lab NAME, mercado lab scenario NAME|FILE):\n", exitStatuses)
}

// writeAbout writes a lab's description under its name, indented.
func writeAbout(w io.Writer, name, about string) {
	for i, l := range strings.Split(about, "\n") {
		if i == 0 {
			fmt.Fprintf(w, "  %-10s %s\n", name, l)
		} else {
			fmt.Fprintf(w, "  %-10s %s\n", "", l)
		}
	}
}

// printOneLab prints one lab's usage, above its flags: `mercado lab
// NAME --help`.
func printOneLab(w io.Writer, name string) {
	fmt.Fprintf(w, "Usage: mercado lab %s [flags]\n\n", name)
	claims := true
	labs := labList()
	if i := slices.IndexFunc(labs, func(l labInfo) bool { return l.name == name }); i >= 0 {
		l := labs[i]
		fmt.Fprintf(w, "The %s lab: %s\n", name, l.about)
		claims = l.claims
	} else if sc, err := loadtest.LoadScenario(name); err == nil {
		fmt.Fprintf(w, "The %s scenario: %s\nWrites results.json and report.html to --out; mercado lab --help lists every lab.\n",
			sc.Name, strings.TrimSpace(sc.Description))
	}
	if claims {
		fmt.Fprintf(w, "\n%s", exitStatuses)
	}
	fmt.Fprintln(w, "\nFlags:")
}

// unknownLab is the usage error for a lab nobody knows: the nearest
// known name, when one is close enough to be what was meant.
func unknownLab(what, name string) error {
	known := loadtest.Builtin()
	if what != "scenario" {
		known = append([]string{"scenario"}, known...)
		for _, l := range labList() {
			known = append(known, l.name)
		}
	}
	if near, ok := nearest(name, known); ok {
		return usagef("lab: unknown %s %q: did you mean %s? (mercado lab --help lists them)", what, name, near)
	}
	return usagef("lab: unknown %s %q (mercado lab --help lists them)", what, name)
}

// nearest is the name among known closest to name, case, dashes and
// underscores aside, when it is close enough to be what was meant: at
// most a third of its letters changed.
func nearest(name string, known []string) (string, bool) {
	fold := func(s string) string {
		return strings.NewReplacer("-", "", "_", "", " ", "").Replace(strings.ToLower(s))
	}
	best, dist := "", -1
	for _, k := range known {
		if d := levenshtein.ComputeDistance(fold(name), fold(k)); dist < 0 || d < dist {
			best, dist = k, d
		}
	}
	return best, dist >= 0 && dist <= max(1, len(fold(name))/3)
}
