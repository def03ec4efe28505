package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mercado-lab/mercado/loadtest"
)

// story is the report's first screen: what the run showed in one
// sentence, the two or three figures that sentence rests on, for every
// mode, and the chart they come from. Every word of it is computed from
// the results.
type story struct {
	Verdict string
	// Caveats are the invalid runs, each with what made it invalid and
	// what to do, as the table says them.
	Caveats []string
	Figures []headline
	Chart   chartFigure
}

// headline is one figure of the first screen: what it is, each mode's
// value, and the comparison in words ("35× more").
type headline struct {
	Label  string
	Words  string
	Values []modeValue
	// Worse marks words that say the last mode did worse (drawn in the
	// warning colour; the words say it too).
	Worse bool
}

type modeValue struct{ Mode, Value string }

// window is the stretch of the run the headline figures are read over:
// the faulty phase; all the faulty phases together when the fault is told
// in several (a stall for its first seconds, then the carrier alone: the
// results' FaultClasses); or the whole run when no phase had faults.
type window struct {
	phase string // the faulty phase; "" for all of them, or for the whole run
	fault bool   // all the faulty phases together
	words string // "during “carrier hangs”", "while the fault was on", "over the run"
}

func runWindow(modes []loadtest.ModeResult) window {
	var faulty []string
	for _, m := range modes {
		for _, p := range m.Phases {
			if p.Faulty && !slices.Contains(faulty, p.Name) {
				faulty = append(faulty, p.Name)
			}
		}
	}
	switch {
	case len(faulty) == 1:
		return window{phase: faulty[0], words: "during “" + faulty[0] + "”"}
	case len(faulty) > 1 && slices.ContainsFunc(modes, func(m loadtest.ModeResult) bool { return len(m.FaultClasses) > 0 }):
		return window{fault: true, words: "while the fault was on"}
	case len(faulty) > 1:
		return window{phase: faulty[0], words: "during “" + faulty[0] + "”"}
	}
	return window{words: "over the run"}
}

// summary is m's figures for class over w; nil when m did not send it.
func (w window) summary(m loadtest.ModeResult, class string) *loadtest.Summary {
	switch {
	case w.fault:
		return findSummary(m.FaultClasses, class)
	case w.phase == "":
		return findSummary(m.Classes, class)
	}
	for _, p := range m.Phases {
		if p.Name == w.phase {
			return findSummary(p.Classes, class)
		}
	}
	return nil
}

// calm is m's figures for class in the first phase without faults before
// w's: what the class did before the fault, to measure what it kept.
func (w window) calm(m loadtest.ModeResult, class string) *loadtest.Summary {
	for _, p := range m.Phases {
		if p.Name == w.phase || (w.fault && p.Faulty) {
			return nil
		}
		if !p.Faulty {
			return findSummary(p.Classes, class)
		}
	}
	return nil
}

var nan = math.NaN()

// headlineClass is the class the story is told about: checkouts when the
// run sent any, else the first class.
func headlineClass(modes []loadtest.ModeResult) string {
	classes := classNames(modes)
	if slices.Contains(classes, "checkout") || len(classes) == 0 {
		return "checkout"
	}
	return classes[0]
}

// newStory tells the run's story: the last mode (budgeted) against the
// first (naive, the baseline), or one mode's figures alone when only one
// ran.
func newStory(r loadtest.Results, modes []loadtest.ModeResult, goodput chartFigure) *story {
	if len(modes) == 0 {
		return nil
	}
	st := &story{Chart: goodput}
	for _, m := range modes {
		if !m.Valid {
			st.Caveats = append(st.Caveats, InvalidLine(m))
		}
	}

	w := runWindow(modes)
	class := headlineClass(modes)
	base, test := modes[0], modes[len(modes)-1]
	single := len(modes) == 1
	deadline := classDeadline(r.Settings, class)

	var clauses []string
	add := func(h headline, clause string) {
		st.Figures = append(st.Figures, h)
		clauses = append(clauses, clause)
	}
	value := func(m loadtest.ModeResult, f func(loadtest.Summary) float64) float64 {
		if s := w.summary(m, class); s != nil {
			return f(*s)
		}
		return nan
	}

	// 1. Goodput of the headline class.
	good := func(m loadtest.ModeResult) float64 {
		return value(m, func(s loadtest.Summary) float64 { return s.Goodput })
	}
	h := headline{Label: fmt.Sprintf("good %ss per second %s", class, w.words)}
	for _, m := range modes {
		h.Values = append(h.Values, modeValue{m.Mode, perSecondText(good(m))})
	}
	gb, gt := good(base), good(test)
	var clause string
	switch {
	case single:
		h.Words = perSecondText(gt)
		clause = fmt.Sprintf("answered %s good %ss a second", num(gt, 1), class)
	case !isFinite(gb) || !isFinite(gt):
		h.Words = "not measured in both modes"
		clause = fmt.Sprintf("sent %ss in only one mode", class)
	case gb == 0 && gt == 0:
		h.Words = "none in either mode"
		clause = fmt.Sprintf("answered no good %ss, nor did %s", class, base.Mode)
	case gb == 0:
		h.Words = perSecondText(gt) + ", " + base.Mode + " none"
		clause = fmt.Sprintf("answered %s good %ss a second where %s answered none", num(gt, 1), class, base.Mode)
	default:
		h.Words = moreOrFewer(gt/gb, "more", "fewer")
		h.Worse = gt < gb
		clause = fmt.Sprintf("answered %s good %ss than %s (%s/s against %s/s)", h.Words, class, base.Mode, num(gt, 1), num(gb, 1))
		if h.Words == "as many" {
			clause = fmt.Sprintf("answered as many good %ss as %s (%s/s against %s/s)", class, base.Mode, num(gt, 1), num(gb, 1))
		}
	}
	add(h, clause)

	// 2. The tail against the deadline.
	p999 := func(m loadtest.ModeResult) float64 {
		return value(m, func(s loadtest.Summary) float64 { return s.P999MS })
	}
	h = headline{Label: fmt.Sprintf("%s p99.9 %s", class, w.words)}
	if deadline > 0 {
		h.Label += ", deadline " + num(deadline, 0) + " ms"
	}
	for _, m := range modes {
		h.Values = append(h.Values, modeValue{m.Mode, againstDeadline(p999(m), deadline)})
	}
	pt, pb := p999(test), p999(base)
	switch {
	case !isFinite(pt):
		h.Words = "not measured"
		clause = ""
	case deadline <= 0:
		h.Words = num(pt, 0) + " ms"
		clause = fmt.Sprintf("had a %s p99.9 of %s ms", class, num(pt, 0))
	case pt <= deadline:
		h.Words = "within the deadline"
		clause = fmt.Sprintf("kept %s p99.9 within the %s ms deadline (%s ms", class, num(deadline, 0), num(pt, 0))
	default:
		h.Words = times(pt/deadline) + " the deadline"
		h.Worse = true
		clause = fmt.Sprintf("let %s p99.9 pass the %s ms deadline (%s ms", class, num(deadline, 0), num(pt, 0))
	}
	if clause != "" && deadline > 0 {
		if !single && isFinite(pb) {
			clause += fmt.Sprintf("; %s %s ms", base.Mode, num(pb, 0))
		}
		clause += ")"
	}
	if h.Words != "not measured" {
		add(h, clause)
	}

	// 3. One more: browsing kept through the fault, else duplicate
	// charges, else late work.
	if h, clause, ok := browseKept(w, modes, single); ok {
		add(h, clause)
	} else if h, clause, ok := serverHeadline(modes, single, "duplicate charges", "", 0, func(s loadtest.ServerFigures) float64 { return s.DuplicateCharges }); ok {
		add(h, clause)
	} else if h, clause, ok := serverHeadline(modes, single, "late work (seconds of work past the deadline)", " s", 1, func(s loadtest.ServerFigures) float64 { return s.LateWorkSeconds }); ok {
		add(h, clause)
	}

	when := strings.ToUpper(w.words[:1]) + w.words[1:]
	who := test.Mode
	if single {
		who += " (the only mode run)"
	}
	st.Verdict = fmt.Sprintf("%s, %s %s.", when, who, joinClauses(clauses))
	return st
}

// browseKept is the share of its calm goodput browsing kept during the
// fault, per mode.
func browseKept(w window, modes []loadtest.ModeResult, single bool) (headline, string, bool) {
	if w.phase == "" && !w.fault {
		return headline{}, "", false
	}
	kept := func(m loadtest.ModeResult) float64 {
		during, before := w.summary(m, "browse"), w.calm(m, "browse")
		if during == nil || before == nil || before.Goodput <= 0 {
			return nan
		}
		return 100 * during.Goodput / before.Goodput
	}
	base, test := modes[0], modes[len(modes)-1]
	kt, kb := kept(test), kept(base)
	if !isFinite(kt) {
		return headline{}, "", false
	}
	h := headline{Label: "browsing kept " + w.words + ", of its goodput before the fault", Words: num(kt, 0) + "%", Worse: kt < kb}
	for _, m := range modes {
		h.Values = append(h.Values, modeValue{m.Mode, num(kept(m), 0) + "%"})
	}
	clause := fmt.Sprintf("kept %s%% of its browsing", num(kt, 0))
	if !single && isFinite(kb) {
		clause += fmt.Sprintf(" (%s %s%%)", base.Mode, num(kb, 0))
	}
	return h, clause, true
}

// serverHeadline is one of the servers' figures, when any mode counted
// some.
func serverHeadline(modes []loadtest.ModeResult, single bool, label, unit string, decimals int, f func(loadtest.ServerFigures) float64) (headline, string, bool) {
	if !slices.ContainsFunc(modes, func(m loadtest.ModeResult) bool { return f(m.Server) > 0 }) {
		return headline{}, "", false
	}
	base, test := modes[0], modes[len(modes)-1]
	h := headline{Label: label}
	for _, m := range modes {
		h.Values = append(h.Values, modeValue{m.Mode, num(f(m.Server), decimals) + unit})
	}
	b, t := f(base.Server), f(test.Server)
	name := strings.SplitN(label, " (", 2)[0]
	switch {
	case single:
		h.Words = num(t, decimals) + unit
		return h, fmt.Sprintf("had %s%s of %s", num(t, decimals), unit, name), true
	case t == 0:
		h.Words = "none"
		return h, fmt.Sprintf("had no %s (%s %s%s)", name, base.Mode, num(b, decimals), unit), true
	case b == 0:
		h.Words = "none for " + base.Mode
		h.Worse = true
		return h, fmt.Sprintf("had %s%s of %s where %s had none", num(t, decimals), unit, name, base.Mode), true
	}
	h.Words = moreOrFewer(t/b, "more", "less")
	h.Worse = t > b
	if h.Words == "as many" {
		return h, fmt.Sprintf("had about as much %s as %s (%s%s against %s%s)", name, base.Mode, num(t, decimals), unit, num(b, decimals), unit), true
	}
	return h, fmt.Sprintf("had %s %s than %s (%s%s against %s%s)", h.Words, name, base.Mode, num(t, decimals), unit, num(b, decimals), unit), true
}

// moreOrFewer says a ratio as words: "35× more", "2.0× fewer", "as many"
// within 5%.
func moreOrFewer(q float64, more, fewer string) string {
	switch {
	case q >= 1.05:
		return times(q) + " " + more
	case q <= 1/1.05 && q > 0:
		return times(1/q) + " " + fewer
	case q == 0:
		return "no"
	}
	return "as many"
}

func perSecondText(v float64) string {
	if !isFinite(v) {
		return "-"
	}
	return num(v, 1) + "/s"
}

// againstDeadline prints a latency and how it stands to the deadline.
func againstDeadline(v, deadline float64) string {
	switch {
	case !isFinite(v):
		return "-"
	case deadline <= 0:
		return num(v, 0) + " ms"
	case v <= deadline:
		return num(v, 0) + " ms, within"
	}
	return num(v, 0) + " ms, " + times(v/deadline) + " over"
}

// classDeadline is class's clients' deadline in ms, 0 when the results
// do not say.
func classDeadline(s loadtest.RunSettings, class string) float64 {
	for _, c := range s.Classes {
		if c.Class == class && c.DeadlineMS > 0 {
			return c.DeadlineMS
		}
	}
	return s.DeadlineMS
}

// joinClauses joins "a", "b" and "c" as "a, b and c".
func joinClauses(c []string) string {
	c = slices.DeleteFunc(slices.Clone(c), func(s string) bool { return s == "" })
	switch len(c) {
	case 0:
		return "ran"
	case 1:
		return c[0]
	}
	return strings.Join(c[:len(c)-1], ", ") + " and " + c[len(c)-1]
}
