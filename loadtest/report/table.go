package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mercado-lab/mercado/loadtest"
)

// WriteTable prints the run as a terminal table: per class, then the
// servers' own figures, one column per mode and the ratio of the
// budgeted mode to the naive one, then the checks and the verdict. A
// mode whose run is invalid is marked INVALID, with its reason and what
// to do, above the table and in its column's heading: its figures
// measure the generator as much as the shop.
func WriteTable(w io.Writer, r loadtest.Results) {
	c := compareModes(r)
	fmt.Fprintf(w, "Scenario: %s\n", oneLine(r.Scenario))
	if d := strings.TrimSpace(r.Description); d != "" {
		for l := range strings.Lines(d) {
			fmt.Fprintf(w, "  %s\n", strings.TrimRight(l, "\r\n"))
		}
	}
	if r.StartedAt != "" {
		fmt.Fprintf(w, "Started:  %s\n", oneLine(r.StartedAt))
	}
	fmt.Fprintln(w)
	if len(c.Modes) == 0 {
		fmt.Fprintln(w, "no modes ran")
		return
	}
	for _, m := range c.Modes {
		fmt.Fprintf(w, "Schedule lag, %s: %s\n", oneLine(m.Mode), lagText(m))
	}
	fmt.Fprintln(w)
	invalid := false
	for _, m := range c.Modes {
		if !m.Valid {
			invalid = true
			fmt.Fprintf(w, "!!! %s\n", InvalidLine(m))
		}
	}
	if invalid {
		fmt.Fprintln(w)
	}

	head := []string{""}
	for _, m := range c.Modes {
		h := oneLine(m.Mode)
		if !m.Valid {
			h += " (INVALID)"
		}
		head = append(head, h)
	}
	if c.RatioHead != "" {
		head = append(head, c.RatioHead)
	}
	lines := [][]string{head}
	sections := slices.Concat(c.Classes, c.Phases, []tableSection{c.Server})
	starts := map[int]bool{} // lines that open a section
	for _, s := range sections {
		starts[len(lines)] = true
		lines = append(lines, []string{oneLine(s.Title)})
		for _, row := range s.Rows {
			if !row.Brief {
				continue
			}
			l := append([]string{"  " + row.Label}, row.Cells...)
			if c.RatioHead != "" {
				l = append(l, row.Ratio)
			}
			lines = append(lines, l)
		}
	}

	widths := make([]int, len(head))
	for i, l := range lines {
		if starts[i] {
			continue
		}
		for j, cell := range l {
			widths[j] = max(widths[j], utf8.RuneCountInString(cell))
		}
	}
	for i, l := range lines {
		if starts[i] {
			fmt.Fprintln(w, l[0])
			continue
		}
		var b strings.Builder
		for j, cell := range l {
			pad := strings.Repeat(" ", widths[j]-utf8.RuneCountInString(cell))
			if j == 0 {
				b.WriteString(cell + pad)
			} else {
				b.WriteString("   " + pad + cell)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	writeChecks(w, r.Checks)
	if v := VerdictLine(r); v != "" {
		fmt.Fprintf(w, "\nVerdict: %s\n", v)
	}
}

// writeChecks prints the scenario's claims, PASS or FAIL each.
func writeChecks(w io.Writer, checks []loadtest.CheckResult) {
	if len(checks) > 0 {
		WriteClaims(w, "Checks", Claims(checks))
	}
}

// Claim is one check as a lab prints it: the claim in words, whether it
// held, and what was measured.
type Claim struct {
	Name string `json:"name"`
	Pass bool   `json:"pass"`
	Got  string `json:"got"`
}

// Claims are measured checks as a lab prints them.
func Claims(checks []loadtest.CheckResult) []Claim {
	out := make([]Claim, len(checks))
	for i, c := range checks {
		out[i] = Claim{Name: oneLine(c.Name), Pass: c.Pass, Got: c.Describe()}
	}
	return out
}

// WriteClaims prints claims under title, PASS or FAIL each: every lab's
// checks read alike.
func WriteClaims(w io.Writer, title string, claims []Claim) {
	fmt.Fprintln(w, "\n"+title)
	for _, c := range claims {
		fmt.Fprintf(w, "  %s\n", c)
	}
}

// String is the claim's line: "PASS  name: what was measured", or FAIL.
func (c Claim) String() string {
	verdict := "PASS"
	if !c.Pass {
		verdict = "FAIL"
	}
	return verdict + "  " + c.Name + ": " + c.Got
}

// classSection is one class's figures across the modes (nil where a
// mode did not send the class).
func (c comparison) classSection(class string, sums []*loadtest.Summary) tableSection {
	s := tableSection{Title: class, Cols: c.cols()}
	add := func(label string, brief bool, dir int, format string, f func(loadtest.Summary) float64) {
		s.Rows = append(s.Rows, c.row(label, brief, dir, format, summaryValues(sums, f)))
	}
	add("requests", true, dirNeutral, "%.0f", func(s loadtest.Summary) float64 { return float64(s.Requests) })
	add("success (good/requests)", true, dirHigher, "%.1f%%", func(s loadtest.Summary) float64 { return 100 * s.SuccessRatio })
	add("goodput (good/s)", true, dirHigher, "%.1f", func(s loadtest.Summary) float64 { return s.Goodput })
	add("p50 (ms)", true, dirLower, "%.1f", func(s loadtest.Summary) float64 { return s.P50MS })
	add("p90 (ms)", false, dirLower, "%.1f", func(s loadtest.Summary) float64 { return s.P90MS })
	add("p99 (ms)", true, dirLower, "%.1f", func(s loadtest.Summary) float64 { return s.P99MS })
	add("p99.9 (ms)", false, dirLower, "%.1f", func(s loadtest.Summary) float64 { return s.P999MS })
	add("max (ms)", true, dirLower, "%.1f", func(s loadtest.Summary) float64 { return s.MaxMS })
	var kinds []string
	for _, sum := range sums {
		if sum != nil {
			kinds = append(kinds, sortedKeys(sum.Failures)...)
		}
	}
	for _, k := range sortedUnique(kinds) {
		add("failed: "+k, false, dirLower, "%.0f", func(s loadtest.Summary) float64 { return float64(s.Failures[k]) })
	}
	if slices.ContainsFunc(sums, func(s *loadtest.Summary) bool { return s != nil && s.Degraded > 0 }) {
		add("good but degraded", true, dirNeutral, "%.0f", func(s loadtest.Summary) float64 { return float64(s.Degraded) })
	}
	if slices.ContainsFunc(sums, func(s *loadtest.Summary) bool { return s != nil && s.Accepted > 0 }) {
		// A 202 processing is no final answer: good only once its order
		// is confirmed, so the two are shown apart.
		add("202 processing", true, dirNeutral, "%.0f", func(s loadtest.Summary) float64 { return float64(s.Accepted) })
		add("202 confirmed later", true, dirHigher, "%.0f", func(s loadtest.Summary) float64 { return float64(s.Confirmed) })
	}
	if slices.ContainsFunc(sums, func(s *loadtest.Summary) bool { return s != nil && s.ClientRetries > 0 }) {
		add("client retries", true, dirLower, "%.0f", func(s loadtest.Summary) float64 { return float64(s.ClientRetries) })
	}
	return s
}

// summaryValues reads one figure from each summary; NaN where there is none.
func summaryValues(sums []*loadtest.Summary, f func(loadtest.Summary) float64) []float64 {
	out := make([]float64, len(sums))
	for i, s := range sums {
		out[i] = math.NaN()
		if s != nil {
			out[i] = f(*s)
		}
	}
	return out
}

func findSummary(sums []loadtest.Summary, class string) *loadtest.Summary {
	for i := range sums {
		if sums[i].Class == class {
			return &sums[i]
		}
	}
	return nil
}

// comparison is the side-by-side table both writers print: one column
// per mode, naive first, and the ratio of the second mode to the first
// when exactly two ran.
type comparison struct {
	Modes []loadtest.ModeResult
	// RatioHead heads the ratio column ("budgeted/naive"); "" when there
	// is no ratio column.
	RatioHead string
	Classes   []tableSection
	// Phases compare the modes phase by phase: what the shop did while
	// the fault was on, apart from the calm before and after.
	Phases []tableSection
	Server tableSection
}

type tableSection struct {
	Title string
	// Cols is the table's width in columns: label, modes, ratio.
	Cols int
	Rows []tableRow
}

type tableRow struct {
	Label string
	Cells []string
	// Ratio is the second mode's value over the first's, "-" when that
	// is undefined, and "" when the table has no ratio column.
	Ratio string
	// Verdict is "better" or "worse" for the second mode against the
	// first, by which way is good for this row; "" when neither is.
	Verdict string
	// Brief rows are the ones the terminal table prints too.
	Brief bool
}

// Which way a figure should move for the budgeted mode to have helped.
const (
	dirNeutral = 0
	dirHigher  = 1
	dirLower   = -1
)

// compareModes builds the comparison: classes in the order the runs listed
// them, map keys sorted, so the output is the same every time.
func compareModes(r loadtest.Results) comparison {
	modes := slices.Clone(r.Modes)
	// The naive run is the baseline every ratio divides by.
	slices.SortStableFunc(modes, func(a, b loadtest.ModeResult) int {
		return cmp.Compare(baselineRank(a.Mode), baselineRank(b.Mode))
	})
	c := comparison{Modes: modes}
	if len(modes) == 2 {
		c.RatioHead = oneLine(modes[1].Mode) + "/" + oneLine(modes[0].Mode)
	}

	for _, class := range classNames(modes) {
		sums := make([]*loadtest.Summary, len(modes))
		for i, m := range modes {
			sums[i] = findSummary(m.Classes, class)
		}
		c.Classes = append(c.Classes, c.classSection(class, sums))
	}
	for _, phase := range phaseNames(modes) {
		s := tableSection{Title: "phase: " + phase, Cols: c.cols()}
		faulty, arrivals := false, ""
		for _, class := range classNames(modes) {
			sums := make([]*loadtest.Summary, len(modes))
			servers := make([]loadtest.ServerFigures, len(modes))
			for i, m := range modes {
				if j := slices.IndexFunc(m.Phases, func(p loadtest.PhaseSpan) bool { return p.Name == phase }); j >= 0 {
					sums[i], servers[i] = findSummary(m.Phases[j].Classes, class), m.Phases[j].Server
					faulty = faulty || m.Phases[j].Faulty
					arrivals = m.Phases[j].Arrivals.String()
				}
			}
			if !slices.ContainsFunc(sums, func(s *loadtest.Summary) bool { return s != nil }) {
				continue
			}
			add := func(label string, dir int, format string, f func(loadtest.Summary) float64) {
				s.Rows = append(s.Rows, c.row(class+" "+label, true, dir, format, summaryValues(sums, f)))
			}
			add("goodput (good/s)", dirHigher, "%.1f", func(s loadtest.Summary) float64 { return s.Goodput })
			add("p99.9 (ms)", dirLower, "%.1f", func(s loadtest.Summary) float64 { return s.P999MS })
			if slices.ContainsFunc(sums, func(s *loadtest.Summary) bool { return s != nil && s.Predicted != nil }) {
				add("p99 (ms)", dirLower, "%.1f", func(s loadtest.Summary) float64 { return s.P99MS })
				add("p99 predicted from the hops (ms)", dirNeutral, "%.1f", func(s loadtest.Summary) float64 {
					if s.Predicted == nil {
						return math.NaN()
					}
					return s.Predicted.P99MS
				})
				parted := tableRow{Label: class + " p99 against the prediction", Brief: true}
				for i, sum := range sums {
					cell := "-"
					if sum != nil && sum.Parted(servers[i]) != "" {
						cell = sum.Parted(servers[i])
					}
					parted.Cells = append(parted.Cells, cell)
				}
				if c.RatioHead != "" {
					parted.Ratio = "-"
				}
				s.Rows = append(s.Rows, parted)
			}
		}
		switch {
		case faulty && arrivals != loadtest.ArrivalsConstant:
			s.Title += " (faults, " + arrivals + " arrivals)"
		case faulty:
			s.Title += " (faults)"
		case arrivals != loadtest.ArrivalsConstant:
			s.Title += " (" + arrivals + " arrivals)"
		}
		if len(s.Rows) > 0 {
			c.Phases = append(c.Phases, s)
		}
	}

	c.Server = tableSection{Title: "server figures", Cols: c.cols()}
	server := func(label string, dir int, format string, f func(loadtest.ServerFigures) float64) {
		v := make([]float64, len(modes))
		for i, m := range modes {
			v[i] = f(m.Server)
		}
		c.Server.Rows = append(c.Server.Rows, c.row(label, true, dir, format, v))
	}
	server("late completions", dirLower, "%.0f", func(s loadtest.ServerFigures) float64 { return s.LateCompletions })
	server("late work (s)", dirLower, "%.2f", func(s loadtest.ServerFigures) float64 { return s.LateWorkSeconds })
	var reasons, services []string
	cpu, locks := false, false
	for _, m := range modes {
		locks = locks || m.Server.LockWaits > 0
		reasons = append(reasons, sortedKeys(m.Server.Skipped)...)
		services = append(services, sortedKeys(m.Server.Amplification)...)
		cpu = cpu || m.Server.CPUSecondsPerGoodCheckout != 0
	}
	for _, k := range sortedUnique(reasons) {
		// Skipping work nobody will wait for is the point of a budget,
		// so more is not worse.
		server("skipped: "+k, dirNeutral, "%.0f", func(s loadtest.ServerFigures) float64 { return s.Skipped[k] })
	}
	if locks {
		server("stock lock wait p99 (ms)", dirLower, "%.0f", func(s loadtest.ServerFigures) float64 { return s.LockWaitP99MS })
	}
	server("breaker opens", dirNeutral, "%.0f", func(s loadtest.ServerFigures) float64 { return s.BreakerOpens })
	server("pool rejections", dirNeutral, "%.0f", func(s loadtest.ServerFigures) float64 { return s.PoolRejections })
	for _, k := range sortedUnique(services) {
		server("amplification: "+k+" (calls/request)", dirLower, "%.2f", func(s loadtest.ServerFigures) float64 { return s.Amplification[k] })
	}
	server("retries", dirLower, "%.0f", func(s loadtest.ServerFigures) float64 { return s.Retries })
	server("duplicate charges", dirLower, "%.0f", func(s loadtest.ServerFigures) float64 { return s.DuplicateCharges })
	if cpu {
		server("CPU s per good checkout", dirLower, "%.4f", func(s loadtest.ServerFigures) float64 { return s.CPUSecondsPerGoodCheckout })
	}
	return c
}

func (c comparison) cols() int {
	if c.RatioHead != "" {
		return len(c.Modes) + 2
	}
	return len(c.Modes) + 1
}

// row formats one figure across the modes; NaN means the mode has no
// such figure and prints as "-".
func (c comparison) row(label string, brief bool, dir int, format string, v []float64) tableRow {
	row := tableRow{Label: label, Brief: brief}
	for _, x := range v {
		cell := "-"
		if isFinite(x) {
			cell = english.Sprintf(format, x)
		}
		row.Cells = append(row.Cells, cell)
	}
	if c.RatioHead == "" || len(v) != 2 {
		return row
	}
	row.Ratio = "-"
	base, x := v[0], v[1]
	if !isFinite(base) || !isFinite(x) {
		return row
	}
	if base != 0 {
		row.Ratio = formatRatio(x / base)
	}
	// Within 1% is a tie, not a verdict.
	if d := x - base; dir != dirNeutral && math.Abs(d) > 0.01*max(math.Abs(base), math.Abs(x)) {
		if (d > 0) == (dir == dirHigher) {
			row.Verdict = "better"
		} else {
			row.Verdict = "worse"
		}
	}
	return row
}

// phaseNames lists the phases of every mode, in the order they ran.
func phaseNames(modes []loadtest.ModeResult) []string {
	var out []string
	for _, m := range modes {
		for _, p := range m.Phases {
			if !slices.Contains(out, p.Name) {
				out = append(out, p.Name)
			}
		}
	}
	return out
}

// classNames lists the classes of every mode, in the order the runs
// listed them.
func classNames(modes []loadtest.ModeResult) []string {
	var out []string
	for _, m := range modes {
		for _, s := range m.Classes {
			if !slices.Contains(out, s.Class) {
				out = append(out, s.Class)
			}
		}
	}
	return out
}

func invalidReason(m loadtest.ModeResult) string {
	if r := strings.TrimSpace(m.Invalid); r != "" {
		return oneLine(r)
	}
	return "no reason recorded"
}

// oneLine keeps a name from breaking the terminal table's layout.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sortedUnique(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

func baselineRank(mode string) int {
	if mode == "naive" {
		return 0
	}
	return 1
}

// lagText is a run's schedule lag and longest stall as the table and the
// report show them.
func lagText(m loadtest.ModeResult) string {
	l := m.ScheduleLag
	return fmt.Sprintf("p50 %.1f ms, p99 %.1f ms, max %.1f ms; longest stall %.0f ms", l.P50MS, l.P99MS, l.MaxMS, m.LongestStallMS)
}
