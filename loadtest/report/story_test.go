package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/mercado-lab/mercado/loadtest"
)

// TestStoryTellsTheFaultPhase: the verdict and the headline figures are
// read from the faulty phase, in words computed from the figures, for
// both modes.
func TestStoryTellsTheFaultPhase(t *testing.T) {
	r := phasedResults()
	st := newHTMLReport(r).Story
	if st == nil {
		t.Fatal("no story")
	}
	// Checkout goodput during the fault: 18.0 against 7.0 (2.6×); p99.9
	// 900 ms within the 1,000 ms deadline, naive's 2,950 ms; browsing
	// kept 19.5 of 20 (98%), naive 18 of 20 (90%).
	for _, want := range []string{
		"During “payments slow”, budgeted answered 2.6× more good checkouts than naive (18.0/s against 7.0/s)",
		"kept checkout p99.9 within the 1,000 ms deadline (900 ms; naive 2,950 ms)",
		"kept 98% of its browsing (naive 90%).",
	} {
		if !strings.Contains(st.Verdict, want) {
			t.Errorf("verdict %q lacks %q", st.Verdict, want)
		}
	}
	if len(st.Figures) != 3 {
		t.Fatalf("%d headline figures, want 3: %+v", len(st.Figures), st.Figures)
	}
	want := [][]modeValue{
		{{"naive", "7.0/s"}, {"budgeted", "18.0/s"}},
		{{"naive", "2,950 ms, 3.0× over"}, {"budgeted", "900 ms, within"}},
		{{"naive", "90%"}, {"budgeted", "98%"}},
	}
	for i, f := range st.Figures {
		if !slices.Equal(f.Values, want[i]) {
			t.Errorf("figure %q: values %v, want %v", f.Label, f.Values, want[i])
		}
	}
	if slices.ContainsFunc(st.Figures, func(h headline) bool { return h.Worse }) {
		t.Errorf("figures %+v: none is worse for budgeted", st.Figures)
	}
	if st.Figures[0].Words != "2.6× more" || st.Figures[1].Words != "within the deadline" {
		t.Errorf("words %q, %q", st.Figures[0].Words, st.Figures[1].Words)
	}
	if len(st.Caveats) != 1 || !strings.HasPrefix(st.Caveats[0], "budgeted run INVALID: ") || !strings.Contains(st.Caveats[0], "Close other programs") {
		t.Errorf("caveats %q: want one, naming the invalid run and what to do", st.Caveats)
	}
	if !strings.Contains(string(st.Chart.SVG), `<rect class="fault"`) {
		t.Error("the first screen's goodput chart has no fault band")
	}
}

func TestStoryEdgeCases(t *testing.T) {
	t.Run("naive answered nothing", func(t *testing.T) {
		r := phasedResults()
		r.Modes[0].Phases[1].Classes[0].Goodput = 0
		st := newHTMLReport(r).Story
		if want := "answered 18.0 good checkouts a second where naive answered none"; !strings.Contains(st.Verdict, want) {
			t.Errorf("verdict %q lacks %q", st.Verdict, want)
		}
	})
	t.Run("budgeted did worse", func(t *testing.T) {
		r := phasedResults()
		r.Modes[1].Phases[1].Classes[0].Goodput = 3.5
		r.Modes[1].Phases[1].Classes[0].P999MS = 1500
		st := newHTMLReport(r).Story
		for _, want := range []string{"answered 2.0× fewer good checkouts than naive", "let checkout p99.9 pass the 1,000 ms deadline (1,500 ms"} {
			if !strings.Contains(st.Verdict, want) {
				t.Errorf("verdict %q lacks %q", st.Verdict, want)
			}
		}
		if !st.Figures[0].Worse || !st.Figures[1].Worse || st.Figures[1].Words != "1.5× the deadline" {
			t.Errorf("figures %+v, want the goodput and the tail marked worse", st.Figures[:2])
		}
	})
	t.Run("one mode", func(t *testing.T) {
		r := phasedResults()
		r.Modes = r.Modes[1:]
		st := newHTMLReport(r).Story
		if want := "During “payments slow”, budgeted (the only mode run) answered 18.0 good checkouts a second"; !strings.HasPrefix(st.Verdict, want) {
			t.Errorf("verdict %q does not start %q", st.Verdict, want)
		}
		for _, f := range st.Figures {
			if len(f.Values) != 1 {
				t.Errorf("figure %q has %d values, want the one mode's", f.Label, len(f.Values))
			}
		}
	})
	t.Run("no faults", func(t *testing.T) {
		r := sampleResults()
		for i := range r.Modes {
			for j := range r.Modes[i].Phases {
				r.Modes[i].Phases[j].Faulty = false
			}
		}
		st := newHTMLReport(r).Story
		if !strings.HasPrefix(st.Verdict, "Over the run, budgeted answered 1.6× more good checkouts than naive (19.0/s against 12.0/s)") {
			t.Errorf("verdict %q", st.Verdict)
		}
	})
	t.Run("no modes", func(t *testing.T) {
		if st := newHTMLReport(loadtest.Results{}).Story; st != nil {
			t.Errorf("a story of no run: %+v", st)
		}
	})
}

// TestChartsShowWhatEachModeHas: latency charts draw the deadline; pool
// charts are each mode's own, against capacity, so a full bulkhead reads
// 100% however few its slots; no breaker chart for a mode without
// breakers, even when its switched-off breakers report closed.
func TestChartsShowWhatEachModeHas(t *testing.T) {
	r := sampleResults()
	rep := newHTMLReport(r)
	latency := rep.Charts[0]
	for _, f := range latency.Figures {
		if !strings.Contains(string(f.SVG), `class="rule"`) || !strings.Contains(string(f.SVG), "deadline 1,000 ms") {
			t.Errorf("latency chart %q has no deadline line", f.Title)
		}
	}

	c, _, ok := poolChart(r.Modes[1], 10)
	if !ok {
		t.Fatal("no pool chart for budgeted")
	}
	peak := map[string]float64{}
	for _, s := range c.Series {
		for _, p := range s.Points {
			peak[s.Name] = max(peak[s.Name], p.Y)
		}
	}
	if got := peak["payments/charges (8 slots)"]; got != 100 {
		t.Errorf("budgeted's 8-slot bulkhead with 8 in flight peaks at %v%%, want 100%%: %v", got, peak)
	}
	if got := peak["gateway/http (64 slots)"]; got != 100*14.0/64 {
		t.Errorf("gateway/http peaks at %v%%, want %v%%", got, 100*14.0/64)
	}

	breakers := breakerCharts(rep.Table.Modes, 10)
	if len(breakers.Figures) != 1 || breakers.Figures[0].Title != "budgeted" {
		t.Errorf("breaker charts for %v, want budgeted's alone", breakers.Figures)
	}
}

// TestPartialSecondsAreNotDrawn: a second the schedule covers only in
// part is left out of the time charts, not drawn as a collapse.
func TestPartialSecondsAreNotDrawn(t *testing.T) {
	m := loadtest.ModeResult{Phases: []loadtest.PhaseSpan{{StartS: 0.02, EndS: 1.02}, {StartS: 1.03, EndS: 5.43}}}
	var series []loadtest.Second
	for t := range 6 {
		series = append(series, loadtest.Second{T: t, Requests: 100, Good: 100})
	}
	series[5].Requests, series[5].Good = 40, 40 // the run's last 0.4 s
	got := scheduled(m, series)
	if len(got) != 5 || got[len(got)-1].T != 4 {
		t.Errorf("kept seconds %v, want 0 to 4", got)
	}
	if len(series) != 6 {
		t.Error("scheduled changed its argument")
	}
}

func TestFormatRatio(t *testing.T) {
	for _, tc := range []struct {
		q    float64
		want string
	}{
		{0, "0×"}, {0.00098, "1/1,020"}, {0.0033, "1/303"}, {0.05, "1/20"}, {0.33, "0.33×"},
		{1, "1.00×"}, {1.58, "1.58×"}, {35.2, "35×"}, {1020.4, "1,020×"}, {-1, "-"},
	} {
		if got := formatRatio(tc.q); got != tc.want {
			t.Errorf("formatRatio(%v) = %q, want %q", tc.q, got, tc.want)
		}
	}
}

// TestOfferedIsTheSchedule: the offered line is the schedule's rate in
// each phase, not what one mode's generator managed to send.
func TestOfferedIsTheSchedule(t *testing.T) {
	r := sampleResults()
	m := r.Modes[0]
	m.Phases = slices.Clone(m.Phases)
	m.Phases[1].Rates = map[string]float64{"checkout": 40}
	got := offered(r.Settings, m, "checkout")
	want := []chartPoint{{0, 20}, {4, 20}, {4, 40}, {10, 40}}
	if !slices.Equal(got, want) {
		t.Errorf("offered %v, want %v", got, want)
	}
	// Without the rates recorded, what was sent each second.
	if got := offered(loadtest.RunSettings{}, m, "checkout"); len(got) != 10 || got[0] != (chartPoint{0.5, 20}) {
		t.Errorf("offered without settings %v, want the ten seconds sent", got)
	}
}

// TestStoryTakesAFaultToldInTwoPhasesWhole: when the fault is told in two
// phases (a stall for its first seconds, then the carrier alone), the
// headline is read over both together (the results' FaultClasses), not
// over the first phase alone, which may be the few seconds every mode
// fails.
func TestStoryTakesAFaultToldInTwoPhasesWhole(t *testing.T) {
	r := phasedResults()
	for i := range r.Modes {
		m := &r.Modes[i]
		stall := loadtest.PhaseSpan{Name: "stalled", StartS: 4, EndS: 5, Faulty: true,
			Classes: []loadtest.Summary{{Class: "checkout", Goodput: 0, P999MS: 3000}, {Class: "browse", Goodput: 0}}}
		m.Phases = []loadtest.PhaseSpan{m.Phases[0], stall, m.Phases[1]}
		m.FaultClasses = []loadtest.Summary{{Class: "checkout", Goodput: 6, P999MS: 2950}, {Class: "browse", Goodput: 16}}
	}
	r.Modes[1].FaultClasses = []loadtest.Summary{{Class: "checkout", Goodput: 15, P999MS: 950}, {Class: "browse", Goodput: 19}}
	st := newHTMLReport(r).Story
	if st == nil {
		t.Fatal("no story")
	}
	for _, want := range []string{
		"While the fault was on, budgeted answered 2.5× more good checkouts than naive (15.0/s against 6.0/s)",
		"(950 ms; naive 2,950 ms)",
		"kept 95% of its browsing (naive 80%).",
	} {
		if !strings.Contains(st.Verdict, want) {
			t.Errorf("verdict %q lacks %q", st.Verdict, want)
		}
	}
}
