package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/mercado-lab/mercado/internal/mode"
	"github.com/mercado-lab/mercado/loadtest"
)

// sampleResults is a hand-built run: two modes, two classes, ten seconds,
// a quiet phase and then a faulty one, with gauges, the modes' mechanisms
// and the run's settings. The budgeted run is marked invalid so the
// marker shows.
func sampleResults() loadtest.Results {
	naiveMechanisms, budgetedMechanisms := mode.Naive.Mechanisms(), mode.Budgeted.Mechanisms()
	series := func(p99 func(t int) float64, good func(t int) int) []loadtest.Second {
		var out []loadtest.Second
		for t := range 10 {
			out = append(out, loadtest.Second{T: t, Requests: 20, Good: good(t), P50MS: p99(t) / 4, P99MS: p99(t)})
		}
		return out
	}
	faulty := func(t int) bool { return t >= 4 }
	phases := []loadtest.PhaseSpan{
		{Name: "steady", StartS: 0, EndS: 4},
		{Name: "payments slow", StartS: 4, EndS: 10, Faulty: true},
	}
	naive := loadtest.ModeResult{
		Mode:       "naive",
		Valid:      true,
		Phases:     phases,
		Mechanisms: &naiveMechanisms,
		Classes: []loadtest.Summary{
			{Class: "checkout", Requests: 200, OK: 150, Good: 120, SuccessRatio: 0.6, Goodput: 12, P50MS: 180, P90MS: 1900, P99MS: 2400, P999MS: 2950, MaxMS: 3000,
				Failures: map[string]int{loadtest.FailDeadline: 70, loadtest.FailTransport: 10}},
			{Class: "browse", Requests: 200, OK: 200, Good: 190, SuccessRatio: 0.95, Goodput: 19, P50MS: 20, P90MS: 60, P99MS: 300, P999MS: 450, MaxMS: 500,
				Failures: map[string]int{}},
		},
		Series: map[string][]loadtest.Second{
			"checkout": series(func(t int) float64 {
				if faulty(t) {
					return 2400
				}
				return 150
			}, func(t int) int {
				if faulty(t) {
					return 7
				}
				return 20
			}),
			"browse": series(func(t int) float64 { return 250 }, func(t int) int { return 19 }),
		},
		Server: loadtest.ServerFigures{
			LateCompletions: 90, LateWorkSeconds: 75.5,
			Skipped:       map[string]float64{},
			Amplification: map[string]float64{"payments": 3.2, "orders": 1},
			Retries:       310, DuplicateCharges: 4,
		},
		PoolInFlight: map[string][]float64{
			"gateway/http":     {5, 5, 6, 5, 30, 60, 64, 64, 64, 63},
			"payments/charges": {2, 2, 2, 2, 20, 32, 32, 32, 32, 32},
		},
		PoolCapacity: map[string]float64{"gateway/http": 64, "payments/charges": 64},
		// Naive's breakers exist but are switched off: they report
		// closed throughout, and the report draws no chart for them.
		BreakerState: map[string][]float64{"orders/payments": make([]float64, 10)},
	}
	budgeted := loadtest.ModeResult{
		Mode:           "budgeted",
		Valid:          false,
		Invalid:        "generator fell behind: schedule lag p99 14ms",
		ScheduleLag:    loadtest.Lag{P50MS: 1.2, P99MS: 14, MaxMS: 31.5},
		LongestStallMS: 27,
		Phases:         phases,
		Mechanisms:     &budgetedMechanisms,
		Classes: []loadtest.Summary{
			{Class: "checkout", Requests: 200, OK: 190, Good: 190, SuccessRatio: 0.95, Goodput: 19, P50MS: 60, P90MS: 400, P99MS: 800, P999MS: 900, MaxMS: 950,
				Failures: map[string]int{loadtest.FailBreaker: 6, loadtest.FailBudget: 4}},
			{Class: "browse", Requests: 200, OK: 200, Good: 200, SuccessRatio: 1, Goodput: 20, P50MS: 18, P90MS: 40, P99MS: 90, P999MS: 110, MaxMS: 120,
				Failures: map[string]int{}},
		},
		Series: map[string][]loadtest.Second{
			"checkout": series(func(t int) float64 {
				if faulty(t) {
					return 800
				}
				return 140
			}, func(t int) int {
				if faulty(t) {
					return 18
				}
				return 20
			}),
			"browse": series(func(t int) float64 { return 90 }, func(t int) int { return 20 }),
		},
		Server: loadtest.ServerFigures{
			LateCompletions: 3, LateWorkSeconds: 0.25,
			Skipped:      map[string]float64{"budget_floor": 4, "expired": 12},
			BreakerOpens: 1, PoolRejections: 6,
			Amplification: map[string]float64{"payments": 1.1, "orders": 1},
			Retries:       14,
		},
		PoolInFlight: map[string][]float64{
			"gateway/http":     {5, 5, 5, 5, 12, 14, 14, 13, 14, 14},
			"payments/charges": {2, 2, 2, 2, 8, 8, 8, 8, 8, 8},
		},
		PoolCapacity: map[string]float64{"gateway/http": 64, "payments/charges": 8},
		BreakerState: map[string][]float64{
			"orders/payments":   {0, 0, 0, 0, 0, 2, 2, 1, 2, 2},
			"gateway/inventory": {0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		},
	}
	return loadtest.Results{
		Scenario:    "slow-payments",
		Description: "Payments answer in 2 s for six seconds.\nCheckout waits on payments; browse does not.",
		StartedAt:   "2026-03-01T09:30:00Z",
		Modes:       []loadtest.ModeResult{naive, budgeted},
		Settings: loadtest.RunSettings{DeadlineMS: 1000, PatienceMS: 4000,
			Classes: []loadtest.ClassSetting{{Class: "browse", Rate: 20, DeadlineMS: 1000}, {Class: "checkout", Rate: 20, DeadlineMS: 1000}},
			Workers: 64, CPUs: 2, GOMAXPROCS: 2, GoVersion: "go1.26.0"},
	}
}

// phasedResults is sampleResults with per-phase summaries: a calm phase
// and a faulty one.
func phasedResults() loadtest.Results {
	r := sampleResults()
	for i := range r.Modes {
		m := &r.Modes[i]
		m.Phases = []loadtest.PhaseSpan{
			{Name: "steady", StartS: 0, EndS: 4, Classes: []loadtest.Summary{{Class: "checkout", Goodput: 20, P999MS: 200}, {Class: "browse", Goodput: 20}}},
			{Name: "payments slow", StartS: 4, EndS: 10, Faulty: true, Classes: []loadtest.Summary{{Class: "checkout", Goodput: 7, P999MS: 2950}, {Class: "browse", Goodput: 18}}},
			{Name: "rush", StartS: 10, EndS: 12, Arrivals: loadtest.Arrivals{Kind: loadtest.ArrivalsPoisson}, Classes: []loadtest.Summary{{Class: "checkout", Goodput: 20, P999MS: 300}}},
		}
	}
	b := &r.Modes[1]
	b.Phases[1].Classes = []loadtest.Summary{{Class: "checkout", Goodput: 18, P999MS: 900}, {Class: "browse", Goodput: 19.5}}
	return r
}

func ptr(v float64) *float64 { return &v }

func TestTableShowsPhasesAndChecks(t *testing.T) {
	r := phasedResults()
	r.Checks = loadtest.Evaluate([]loadtest.Check{
		{Name: "budgeted checkouts in time", Mode: "budgeted", Phase: "payments slow", Class: "checkout", Figure: "p999_ms", AtMost: ptr(1010)},
		{Name: "3x naive goodput", Mode: "budgeted", Phase: "payments slow", Class: "checkout", Figure: "goodput", AtLeast: ptr(3), Of: &loadtest.CheckOf{Mode: "naive"}},
	}, r)
	var b strings.Builder
	WriteTable(&b, r)
	out := b.String()
	lines := strings.Split(out, "\n")
	for _, want := range []string{
		"phase: steady\n",
		"phase: payments slow (faults)\n",
		"phase: rush (poisson arrivals)\n",
		"  PASS  budgeted checkouts in time: 900 ≤ 1010\n",
		"  FAIL  3x naive goodput: 18.0 ≥ 3 × naive (= 21.0)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if !hasRow(lines, []string{"checkout goodput (good/s)", "7.0", "18.0", "2.57×"}) {
		t.Errorf("no per-phase goodput row for the faulty phase:\n%s", out)
	}
	page := renderHTML(t, r)
	for _, want := range []string{`id="checks"`, `id="phases"`, "3x naive goodput", "phase: payments slow (faults)", "rush 10.0–12.0 (poisson arrivals)", "10.0–12.0 s: poisson arrivals"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func renderHTML(t *testing.T, r loadtest.Results) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatalf("WriteHTML: %v", err)
	}
	return b.String()
}

func TestWriteHTML(t *testing.T) {
	page := renderHTML(t, sampleResults())
	if path := os.Getenv("MERCADO_SAMPLE_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("parses as HTML with balanced tags", func(t *testing.T) {
		assertBalanced(t, page)
		if _, err := html.Parse(strings.NewReader(page)); err != nil {
			t.Fatalf("html.Parse: %v", err)
		}
	})

	t.Run("self-contained", func(t *testing.T) {
		doc, err := html.Parse(strings.NewReader(page))
		if err != nil {
			t.Fatal(err)
		}
		for n := range doc.Descendants() {
			if n.Type != html.ElementNode {
				continue
			}
			switch n.Data {
			case "script", "link", "iframe", "img", "object", "embed":
				t.Errorf("page has a <%s> element", n.Data)
			}
			for _, a := range n.Attr {
				if a.Key == "src" || a.Key == "href" || a.Key == "xlink:href" {
					t.Errorf("<%s %s=%q>: the page must load nothing", n.Data, a.Key, a.Val)
				}
			}
		}
		for _, s := range []string{"http://", "https://", "@import", "url("} {
			if strings.Contains(page, s) {
				t.Errorf("page contains %q", s)
			}
		}
	})

	t.Run("one well-formed svg per chart", func(t *testing.T) {
		svgs := svgFragments(page)
		// The first screen's goodput chart, p99 and goodput for 2
		// classes, pools for 2 modes, and breakers for the one mode that
		// has them.
		if len(svgs) != 8 {
			t.Fatalf("got %d <svg> elements, want 8", len(svgs))
		}
		for i, s := range svgs {
			if err := wellFormed(s); err != nil {
				t.Errorf("svg %d is not well-formed XML: %v", i, err)
			}
			if strings.Contains(s, "NaN") || strings.Contains(s, "Inf") {
				t.Errorf("svg %d has a NaN or Inf coordinate", i)
			}
			if !strings.Contains(s, `<rect class="fault"`) {
				t.Errorf("svg %d has no shaded fault window", i)
			}
		}
	})

	t.Run("the checks' verdict is coloured by the verdict", func(t *testing.T) {
		for v, class := range map[loadtest.Verdict]string{loadtest.VerdictPass: "ok", loadtest.VerdictFail: "bad", loadtest.VerdictInvalid: "bad"} {
			r := sampleResults()
			r.Checks = []loadtest.CheckResult{{Check: loadtest.Check{Name: "budgeted succeeds", AtLeast: new(0.8)}, Pass: v == loadtest.VerdictPass, Value: 0.9, Bound: 0.8}}
			r.Verdict = v
			if want := `<p id="checks-verdict" class="` + class + `">`; !strings.Contains(renderHTML(t, r), want) {
				t.Errorf("verdict %s: page lacks %q", v, want)
			}
		}
	})

	t.Run("content", func(t *testing.T) {
		for _, want := range []string{
			"slow-payments", "Payments answer in 2 s", "2026-03-01T09:30:00Z",
			"naive", "budgeted", "checkout", "browse",
			"budgeted run INVALID: generator fell behind: schedule lag p99 14ms: the load generator fell behind its schedule on a busy machine. Close other programs",
			"schedule lag", "p50 1.2 ms, p99 14.0 ms, max 31.5 ms",
			"fault: payments slow",
			"budgeted/naive", ">0.33×<", ">1.58×<", ">1/302<", // p99 and success of checkout, late work
			"late work (s)", "skipped: expired", "amplification: payments (calls/request)", "duplicate charges",
			"failed: deadline", "failed: breaker",
			"gateway/http (64 slots)", "payments/charges (8 slots)", "orders/payments", "half-open", "naive ran without breakers: no chart.",
			"p99 latency (ms)", "good answers per second", "in flight (% of slots)", "time since start of run (s)",
			"deadline 1,000 ms", "checkout 20/s", "2 CPU cores, GOMAXPROCS 2, go1.26.0", "bulkheads",
		} {
			if !strings.Contains(page, want) {
				t.Errorf("page lacks %q", want)
			}
		}
	})
}

func TestWriteHTMLEscapes(t *testing.T) {
	r := sampleResults()
	r.Scenario = `<script>alert("x")</script>`
	r.Description = `</p><img src=x onerror=alert(1)>`
	r.Modes[0].Classes[0].Class = `<b>checkout</b>`
	r.Modes[0].Series[`<b>checkout</b>`] = r.Modes[0].Series["checkout"]
	r.Modes[1].PoolInFlight[`"><script>`] = []float64{100}
	r.Modes[1].Invalid = `<i>lag</i>`
	page := renderHTML(t, r)

	if strings.Contains(strings.ToLower(page), "<script") || strings.Contains(page, "<img") || strings.Contains(page, "<b>") || strings.Contains(page, "<i>") {
		t.Error("a name from the results reached the page unescaped")
	}
	for _, want := range []string{"&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;", "&lt;b&gt;checkout&lt;/b&gt;", "&lt;i&gt;lag&lt;/i&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks escaped %q", want)
		}
	}
	assertBalanced(t, page)
	for i, s := range svgFragments(page) {
		if err := wellFormed(s); err != nil {
			t.Errorf("svg %d: %v", i, err)
		}
	}
}

func TestWriteTable(t *testing.T) {
	var b strings.Builder
	WriteTable(&b, sampleResults())
	out := b.String()
	lines := strings.Split(out, "\n")
	for _, want := range []string{
		"Scenario: slow-payments",
		"!!! budgeted run INVALID: generator fell behind: schedule lag p99 14ms: the load generator fell behind its schedule on a busy machine. Close other programs",
		"Schedule lag, budgeted: p50 1.2 ms, p99 14.0 ms, max 31.5 ms; longest stall 27 ms",
		"budgeted (INVALID)",
		"budgeted/naive",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// Rows: label, naive, budgeted, ratio, in the checkout section.
	for _, want := range [][]string{
		{"requests", "200", "200", "1.00×"},
		{"success (good/requests)", "60.0%", "95.0%", "1.58×"},
		{"goodput (good/s)", "12.0", "19.0", "1.58×"},
		{"p50 (ms)", "180.0", "60.0", "0.33×"},
		{"p99 (ms)", "2,400.0", "800.0", "0.33×"},
		{"max (ms)", "3,000.0", "950.0", "0.32×"},
		{"late completions", "90", "3", "1/30"},
		{"late work (s)", "75.50", "0.25", "1/302"},
		{"skipped: expired", "0", "12", "-"},
		{"breaker opens", "0", "1", "-"},
		{"amplification: payments (calls/request)", "3.20", "1.10", "0.34×"},
		{"retries", "310", "14", "1/22"},
		{"duplicate charges", "4", "0", "0×"},
	} {
		if !hasRow(lines, want) {
			t.Errorf("table has no row %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "p99.9") || strings.Contains(out, "failed:") {
		t.Error("the terminal table should keep to the brief rows")
	}
	if i, j := strings.Index(out, "\ncheckout\n"), strings.Index(out, "\nbrowse\n"); i < 0 || j < 0 || i > j {
		t.Errorf("want the checkout section before browse:\n%s", out)
	}
}

func TestReportsAreDeterministic(t *testing.T) {
	r := sampleResults()
	first := renderHTML(t, r)
	var table strings.Builder
	WriteTable(&table, r)
	for range 5 {
		if renderHTML(t, r) != first {
			t.Fatal("two HTML renders of the same results differ")
		}
		var again strings.Builder
		WriteTable(&again, r)
		if again.String() != table.String() {
			t.Fatal("two table renders of the same results differ")
		}
	}
}

func TestReportsOfEmptyOrZeroRuns(t *testing.T) {
	zeroSeries := make([]loadtest.Second, 10)
	for i := range zeroSeries {
		zeroSeries[i].T = i
	}
	for name, r := range map[string]loadtest.Results{
		"no modes":   {},
		"empty mode": {Modes: []loadtest.ModeResult{{Mode: "naive", Valid: true}}},
		"all zero": {Modes: []loadtest.ModeResult{
			{Mode: "naive", Valid: true, Classes: []loadtest.Summary{{Class: "checkout"}},
				Series:       map[string][]loadtest.Second{"checkout": zeroSeries},
				PoolInFlight: map[string][]float64{"gateway/http": make([]float64, 10)},
				BreakerState: map[string][]float64{"orders/payments": make([]float64, 10)},
				Phases:       []loadtest.PhaseSpan{{Name: "instant", StartS: 3, EndS: 3, Faulty: true}}},
			{Mode: "budgeted", Valid: true, Classes: []loadtest.Summary{{Class: "checkout"}},
				Series:       map[string][]loadtest.Second{"checkout": {}},
				PoolInFlight: map[string][]float64{"gateway/http": {}}},
		}},
		"not finite": {Modes: []loadtest.ModeResult{{Mode: "naive", Valid: true,
			Classes:      []loadtest.Summary{{Class: "checkout", P99MS: math.NaN(), Goodput: math.Inf(1)}},
			Series:       map[string][]loadtest.Second{"checkout": {{T: 0, Requests: 1, P99MS: math.NaN()}, {T: 1, Requests: 1, P99MS: math.Inf(1)}}},
			PoolInFlight: map[string][]float64{"gateway/http": {math.NaN(), 3}},
			Phases:       []loadtest.PhaseSpan{{Name: "odd", StartS: math.NaN(), EndS: math.Inf(1), Faulty: true}}}}},
	} {
		t.Run(name, func(t *testing.T) {
			page := renderHTML(t, r)
			assertBalanced(t, page)
			for i, s := range svgFragments(page) {
				if err := wellFormed(s); err != nil {
					t.Errorf("svg %d: %v", i, err)
				}
				if strings.Contains(s, "NaN") || strings.Contains(s, "Inf") {
					t.Errorf("svg %d has a NaN or Inf coordinate:\n%s", i, s)
				}
			}
			var b strings.Builder
			WriteTable(&b, r)
		})
	}

	t.Run("bare chart", func(t *testing.T) {
		for _, c := range []lineChart{
			{},
			{Series: []chartSeries{{Name: "flat", Points: []chartPoint{{0, 0}, {1, 0}}}}},
			{Series: []chartSeries{{Name: "one point", Points: []chartPoint{{0, 5}}}}, YMin: 3, YMax: 3},
			{Series: []chartSeries{{Name: "gaps", Points: []chartPoint{{math.NaN(), 1}, {2, math.NaN()}}}}},
		} {
			s := string(c.svg())
			if err := wellFormed(s); err != nil {
				t.Errorf("%+v: %v", c, err)
			}
			if strings.Contains(s, "NaN") || strings.Contains(s, "Inf") {
				t.Errorf("%+v: NaN or Inf in %s", c, s)
			}
		}
	})
}

func TestNiceMax(t *testing.T) {
	for _, tc := range []struct{ v, top, step float64 }{
		{0, 1, 0.2},
		{1, 1, 0.2},
		{7, 8, 2},
		{64, 80, 20},
		{2400, 2500, 500},
		{0.03, 0.03, 0.01},
	} {
		top, step := niceMax(tc.v, 5)
		if math.Abs(top-tc.top) > 1e-9 || math.Abs(step-tc.step) > 1e-9 {
			t.Errorf("niceMax(%v) = %v, %v; want %v, %v", tc.v, top, step, tc.top, tc.step)
		}
	}
}

func ExampleWriteTable() {
	WriteTable(os.Stdout, loadtest.Results{
		Scenario: "demo",
		Modes: []loadtest.ModeResult{
			{Mode: "budgeted", Valid: true, Classes: []loadtest.Summary{{Class: "checkout", Requests: 100, SuccessRatio: 0.9, Goodput: 9, P50MS: 40, P99MS: 300, MaxMS: 400}},
				Server: loadtest.ServerFigures{LateCompletions: 1, Retries: 5}, ScheduleLag: loadtest.Lag{P50MS: 0.2, P99MS: 1.4, MaxMS: 3.1}, LongestStallMS: 4},
			{Mode: "naive", Valid: false, Invalid: "sent 90 of 100 checkout requests", Classes: []loadtest.Summary{{Class: "checkout", Requests: 90, SuccessRatio: 0.5, Goodput: 4.5, P50MS: 80, P99MS: 2000, MaxMS: 2500}},
				Server: loadtest.ServerFigures{LateCompletions: 40}, ScheduleLag: loadtest.Lag{P50MS: 0.3, P99MS: 2.6, MaxMS: 8.8}, LongestStallMS: 12},
		},
		Checks:  []loadtest.CheckResult{{Check: loadtest.Check{Name: "budgeted succeeds", AtLeast: new(0.8)}, Pass: true, Value: 0.9, Bound: 0.8}},
		Verdict: loadtest.VerdictInvalid,
	})
	// Output:
	// Scenario: demo
	//
	// Schedule lag, naive: p50 0.3 ms, p99 2.6 ms, max 8.8 ms; longest stall 12 ms
	// Schedule lag, budgeted: p50 0.2 ms, p99 1.4 ms, max 3.1 ms; longest stall 4 ms
	//
	// !!! naive run INVALID: sent 90 of 100 checkout requests: the load generator fell behind its schedule on a busy machine. Close other programs and run it again, or lower the rates (or run a shorter scenario)
	//
	//                             naive (INVALID)   budgeted   budgeted/naive
	// checkout
	//   requests                               90        100            1.11×
	//   success (good/requests)             50.0%      90.0%            1.80×
	//   goodput (good/s)                      4.5        9.0            2.00×
	//   p50 (ms)                             80.0       40.0            0.50×
	//   p99 (ms)                          2,000.0      300.0            0.15×
	//   max (ms)                          2,500.0      400.0            0.16×
	// server figures
	//   late completions                       40          1             1/40
	//   late work (s)                        0.00       0.00                -
	//   breaker opens                           0          0                -
	//   pool rejections                         0          0                -
	//   retries                                 0          5                -
	//   duplicate charges                       0          0                -
	//
	// Checks
	//   PASS  budgeted succeeds: 0.9 ≥ 0.8
	//
	// Verdict: INVALID: the load generator fell behind its schedule, so the checks are not a measurement (see the INVALID run above)
}

// hasRow reports whether some line holds exactly these cells, separated
// by runs of spaces.
func hasRow(lines []string, cells []string) bool {
	var quoted []string
	for _, c := range cells {
		quoted = append(quoted, regexp.QuoteMeta(c))
	}
	re := regexp.MustCompile(`^\s*` + strings.Join(quoted, `\s{2,}`) + `\s*$`)
	for _, l := range lines {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}

// svgFragments cuts every <svg>…</svg> out of the page.
func svgFragments(page string) []string {
	var out []string
	for {
		i := strings.Index(page, "<svg")
		if i < 0 {
			return out
		}
		j := strings.Index(page[i:], "</svg>")
		if j < 0 {
			return append(out, page[i:])
		}
		out = append(out, page[i:i+j+len("</svg>")])
		page = page[i+j+len("</svg>"):]
	}
}

// wellFormed checks a fragment with a strict XML decoder.
func wellFormed(fragment string) error {
	d := xml.NewDecoder(strings.NewReader(fragment))
	d.Strict = true
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// assertBalanced checks that every element the page opens it also
// closes, in order: html.Parse would quietly repair a page that does not.
func assertBalanced(t *testing.T, page string) {
	t.Helper()
	void := map[string]bool{"meta": true, "br": true, "link": true, "img": true, "hr": true, "input": true}
	z := html.NewTokenizer(strings.NewReader(page))
	var open []string
	for {
		switch z.Next() {
		case html.ErrorToken:
			if !errors.Is(z.Err(), io.EOF) {
				t.Fatalf("tokenizer: %v", z.Err())
			}
			if len(open) > 0 {
				t.Fatalf("unclosed elements at the end: %v", open)
			}
			return
		case html.StartTagToken:
			name, _ := z.TagName()
			if !void[string(name)] {
				open = append(open, string(name))
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			if len(open) == 0 || open[len(open)-1] != string(name) {
				t.Fatalf("</%s> closes %v", name, open)
			}
			open = open[:len(open)-1]
		}
	}
}

// 202 processing answers are shown apart, in the table and the HTML
// report: how many came, and how many of their orders were confirmed.
func TestReportsShowProcessingApart(t *testing.T) {
	r := sampleResults()
	for i, accepted := range []int{0, 40} {
		r.Modes[i].Classes[0].Accepted, r.Modes[i].Classes[0].Confirmed = accepted, accepted*3/4
	}
	var b strings.Builder
	WriteTable(&b, r)
	lines := strings.Split(b.String(), "\n")
	for _, want := range [][]string{
		{"202 processing", "0", "40", "-"},
		{"202 confirmed later", "0", "30", "-"},
	} {
		if !hasRow(lines, want) {
			t.Errorf("table has no row %q:\n%s", want, b.String())
		}
	}
	page := renderHTML(t, r)
	for _, want := range []string{"202 processing", "202 confirmed later"} {
		if !strings.Contains(page, want) {
			t.Errorf("HTML report lacks %q", want)
		}
	}
	// Where no mode had one, the rows are left out.
	b.Reset()
	WriteTable(&b, sampleResults())
	if strings.Contains(b.String(), "202 processing") || strings.Contains(b.String(), "confirmed later") {
		t.Errorf("a run without 202s shows 202 rows:\n%s", b.String())
	}
}

// A phase whose checkout has a prediction shows the measured p99 beside
// it, and whether the run agrees or which assumption it broke; the
// latency chart draws it per mode.
func TestTableShowsPredictedBesideMeasured(t *testing.T) {
	r := phasedResults()
	naive, budgeted := &r.Modes[0], &r.Modes[1]
	naive.Phases[0].Classes[0].P99MS, naive.Phases[0].Classes[0].Predicted = 104, &loadtest.Predicted{P99MS: 100}
	budgeted.Phases[0].Classes[0].P99MS, budgeted.Phases[0].Classes[0].Predicted = 9, &loadtest.Predicted{P99MS: 3}
	naive.Phases[1].Classes[0].P99MS, naive.Phases[1].Classes[0].Predicted = 2900, &loadtest.Predicted{P99MS: 300}
	naive.Phases[1].Server.Retries = 40
	budgeted.Phases[1].Classes[0].P99MS, budgeted.Phases[1].Classes[0].Predicted = 800, &loadtest.Predicted{P99MS: 300}
	var b strings.Builder
	WriteTable(&b, r)
	lines := strings.Split(b.String(), "\n")
	for _, row := range [][]string{
		{"checkout p99 predicted from the hops (ms)", "100.0", "3.0", "1/33"},
		// Within 10 ms agrees, however small the prediction.
		{"checkout p99 against the prediction", "agrees", "agrees", "-"},
		{"checkout p99 against the prediction", "slower: retries", "slower: queueing", "-"},
	} {
		if !hasRow(lines, row) {
			t.Errorf("no row %q:\n%s", row, b.String())
		}
	}
	page := renderHTML(t, r)
	for _, want := range []string{"naive, predicted from the hops", "budgeted, predicted from the hops", "which of the prediction's assumptions it broke"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
