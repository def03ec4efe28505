package report

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/mercado-lab/mercado/loadtest"
)

// WriteHTML writes the run as one self-contained HTML page: no scripts,
// fonts or stylesheets from elsewhere, so it opens offline and can be
// mailed or projected as it is. Its first screen tells the story: the
// verdict in one sentence, the headline figures of every mode and the
// goodput chart with the fault shaded. Below come the run's settings
// (deadline, rates, faults, each mode's mechanisms, the machine), the
// checks, each mode's validity, the side-by-side tables per class, per
// phase and of the servers' own figures, and inline SVG time charts (p99
// latency against the deadline and goodput per class, pools and
// bulkheads against their capacity, and breaker state for the modes that
// have breakers) with the fault windows shaded.
func WriteHTML(w io.Writer, r loadtest.Results) error {
	return reportPage.Execute(w, newHTMLReport(r))
}

// htmlReport is what the page template reads.
type htmlReport struct {
	loadtest.Results
	Table   comparison
	Invalid []string
	Runs    []htmlRun
	Charts  []chartGroup
	// Story is the first screen: the verdict, the headline figures and
	// the goodput chart with the fault band.
	Story *story
	// Settings are the run's settings in words, and Mechanisms the
	// switches each mode had on.
	Settings   []setting
	Mechanisms mechanismTable
	// Lead, when set, is a lab's own summary above the rest.
	Lead *Lead
	// Verdict is the run's verdict in words (verdictLine).
	Verdict string
}

type htmlRun struct {
	Mode     string
	Valid    bool
	Reason   string
	Duration string
	Lag      string
	Phases   []loadtest.PhaseSpan
}

// chartGroup is one kind of chart: a heading, a line on how to read it,
// and the charts themselves (or why there are none).
type chartGroup struct {
	Title, Note, Empty string
	Figures            []chartFigure
}

type chartFigure struct {
	Title string
	Note  string
	SVG   template.HTML
}

// Pools and breakers take their colours after the modes', so that
// vermillion and blue mean naive and budgeted throughout the page.
const otherSeries = 2

// Limits that keep a chart readable from the back of a room.
const (
	topPools    = 5
	topBreakers = 6
)

func newHTMLReport(r loadtest.Results) htmlReport {
	rep := htmlReport{Results: r, Table: compareModes(r), Verdict: VerdictLine(r)}
	rep.Table.Server.Title = "" // the page's heading says it
	modes := rep.Table.Modes
	for _, m := range modes {
		run := htmlRun{Mode: m.Mode, Valid: m.Valid, Phases: m.Phases, Duration: fmt.Sprintf("%.0f s", runLength(m)), Lag: lagText(m)}
		if !m.Valid {
			run.Reason = invalidReason(m)
			rep.Invalid = append(rep.Invalid, InvalidLine(m))
		}
		rep.Runs = append(rep.Runs, run)
	}

	classes := classNames(modes)
	var extra []string
	for _, m := range modes {
		for _, k := range sortedKeys(m.Series) {
			if !slices.Contains(classes, k) {
				extra = append(extra, k)
			}
		}
	}
	classes = append(classes, sortedUnique(extra)...)
	faults := faultBands(modes...)
	xmax := 0.0
	for _, m := range modes {
		xmax = max(xmax, runLength(m))
	}

	latency := chartGroup{Title: "p99 latency over time",
		Note:  "The 99th percentile of latency from the intended send time, per second of sends; the dashed black line is the clients' deadline. Grey bands are fault windows; a gap means no requests that second.",
		Empty: "No per-second series were recorded."}
	goodput := chartGroup{Title: "Goodput over time",
		Note:  "Answers that succeeded within the client's deadline, per second of sends. The thin grey line is the load offered: the schedule's rate. A second the schedule covers only in part (a short run's last) is left out: its few sends would read as a collapse; they count in the tables.",
		Empty: "No per-second series were recorded."}
	headline := headlineClass(modes)
	var story chartFigure
	for _, class := range classes {
		lat := lineChart{Title: "p99 latency, " + class, XLabel: "time since start of run (s)", YLabel: "p99 latency (ms)", Shade: faults, XMax: xmax}
		if d := classDeadline(r.Settings, class); d > 0 {
			lat.Rules = []chartTick{{At: d, Label: "deadline " + num(d, 0) + " ms"}}
		}
		good := lineChart{Title: "goodput, " + class, XLabel: "time since start of run (s)", YLabel: "good answers per second", Shade: faults, XMax: xmax}
		for i, m := range modes {
			colour, dash := seriesStyle(i)
			var p99, ok []chartPoint
			for _, s := range scheduled(m, m.Series[class]) {
				x := float64(s.T) + 0.5 // the middle of the second
				y := s.P99MS
				if s.Requests == 0 {
					y = math.NaN()
				}
				p99 = append(p99, chartPoint{x, y})
				ok = append(ok, chartPoint{x, float64(s.Good)})
			}
			lat.Series = append(lat.Series, chartSeries{Name: m.Mode, Colour: colour, Dash: dash, Points: p99})
			good.Series = append(good.Series, chartSeries{Name: m.Mode, Colour: colour, Dash: dash, Points: ok})
			if pts := predictedSteps(m, class); pts != nil {
				lat.Series = append(lat.Series, chartSeries{Name: m.Mode + ", predicted from the hops", Colour: colour, Dash: "2 4", Thin: true, Points: pts})
			}
		}
		if len(modes) > 0 {
			good.Series = append(good.Series, chartSeries{Name: "offered (requests/s)", Colour: "#888888", Dash: "3 5", Thin: true,
				Points: offered(r.Settings, modes[0], class)})
		}
		latency.Figures = append(latency.Figures, chartFigure{Title: class, SVG: lat.svg()})
		goodput.Figures = append(goodput.Figures, chartFigure{Title: class, SVG: good.svg()})
		if class == headline {
			// The first screen's copy is shorter, so that it fits under
			// the verdict on a projector.
			good.PlotH = storyPlotH
			story = chartFigure{Title: "Good " + class + "s per second, each mode, with the fault shaded", SVG: good.svg()}
		}
	}
	rep.Charts = append(rep.Charts, latency, goodput, poolCharts(modes, xmax), breakerCharts(modes, xmax))
	rep.Story = newStory(r, modes, story)
	rep.Settings = settingsOf(r.Settings, modes)
	rep.Mechanisms = mechanismsOf(modes)
	return rep
}

// offered is the load offered to class: the schedule's rate in each
// phase, the same in every mode, as a step line over the phases of m.
// Results that do not record the rates draw what m's generator sent each
// second instead.
func offered(s loadtest.RunSettings, m loadtest.ModeResult, class string) []chartPoint {
	i := slices.IndexFunc(s.Classes, func(c loadtest.ClassSetting) bool { return c.Class == class })
	if i < 0 || len(m.Phases) == 0 {
		var out []chartPoint
		for _, sec := range scheduled(m, m.Series[class]) {
			out = append(out, chartPoint{float64(sec.T) + 0.5, float64(sec.Requests)})
		}
		return out
	}
	var out []chartPoint
	for _, p := range m.Phases {
		rate := s.Classes[i].Rate
		if r, ok := p.Rates[class]; ok {
			rate = r
		}
		out = append(out, chartPoint{p.StartS, rate}, chartPoint{p.EndS, rate})
	}
	return out
}

// storyPlotH is the first screen's goodput chart's plot height.
const storyPlotH = 200.0

// scheduled is a series without the seconds the run's phases cover only
// in part at its end: the last second of a run whose length is no whole
// number of seconds (a --quick run's 5.4 s). Drawn, such a second's
// handful of requests would read as goodput collapsing at the end; they
// count in the tables.
func scheduled(m loadtest.ModeResult, series []loadtest.Second) []loadtest.Second {
	end := 0.0
	for _, p := range m.Phases {
		if isFinite(p.EndS) {
			end = max(end, p.EndS)
		}
	}
	if end <= 0 {
		return series
	}
	return slices.DeleteFunc(slices.Clone(series), func(s loadtest.Second) bool { return float64(s.T+1) > end+1e-9 })
}

// poolCharts draws each mode's busiest pools and bulkheads against their
// capacity: the share of its slots each had in flight. Each mode shows its
// own pools — naive's shared pools, budgeted's bulkheads per route and per
// dependency — so a bulkhead that filled shows full, however small.
func poolCharts(modes []loadtest.ModeResult, xmax float64) chartGroup {
	g := chartGroup{Title: "Pools and bulkheads: in flight against capacity",
		Note:  "Work in flight in each pool or bulkhead as a share of its slots, each second's highest of five readings; each mode's fullest, its slots in the legend. At 100% the next request waits or, behind a bulkhead, is refused at once.",
		Empty: "No pool gauges were sampled."}
	for _, m := range modes {
		if c, note, ok := poolChart(m, xmax); ok {
			g.Figures = append(g.Figures, chartFigure{Title: m.Mode, Note: note, SVG: c.svg()})
		}
	}
	return g
}

// poolChart is one mode's fullest pools; ok is false when it sampled none.
func poolChart(m loadtest.ModeResult, xmax float64) (c lineChart, note string, ok bool) {
	peak := map[string]float64{}
	for k, v := range m.PoolInFlight {
		peak[k] = 0
		for _, x := range v {
			if isFinite(x) {
				peak[k] = max(peak[k], x/slots(m, k))
			}
		}
	}
	pools := sortedKeys(peak)
	if len(pools) == 0 {
		return c, "", false
	}
	slices.SortStableFunc(pools, func(a, b string) int { return cmp.Compare(peak[b], peak[a]) })
	if len(pools) > topPools {
		note = fmt.Sprintf("the %d fullest of %d pools", topPools, len(pools))
		pools = pools[:topPools]
	}
	share := !slices.ContainsFunc(pools, func(p string) bool { return m.PoolCapacity[p] <= 0 })
	c = lineChart{Title: "pools in flight, " + m.Mode, XLabel: "time since start of run (s)", YLabel: "in flight (% of slots)",
		Shade: faultBands(m), XMax: xmax, YMax: 100, YTicks: numericTicks(0, 100, 20), Rules: []chartTick{{At: 100, Label: "capacity"}}}
	if !share {
		// Results without capacities: the counts alone.
		c.YLabel, c.YMax, c.YTicks, c.Rules = "in flight (requests)", 0, nil, nil
	}
	for i, pool := range pools {
		colour, dash := seriesStyle(i + otherSeries)
		name := pool
		if share {
			name = fmt.Sprintf("%s (%s slots)", pool, num(m.PoolCapacity[pool], 0))
		}
		var pts []chartPoint
		for t, v := range m.PoolInFlight[pool] {
			if share {
				v = 100 * v / m.PoolCapacity[pool]
			}
			pts = append(pts, chartPoint{float64(t), v}) // sample t is taken t seconds in
		}
		c.Series = append(c.Series, chartSeries{Name: name, Colour: colour, Dash: dash, Points: pts})
	}
	return c, note, true
}

// slots is pool's capacity in m, or 1 when the results do not say (its
// peak is then its count).
func slots(m loadtest.ModeResult, pool string) float64 {
	if c := m.PoolCapacity[pool]; c > 0 {
		return c
	}
	return 1
}

// breakerCharts draws each mode's breakers as step lines between closed,
// half-open and open; a mode without breakers gets no chart, only a line
// saying so. Breakers that ever left closed come first; lines are nudged
// apart so that breakers in the same state stay visible.
func breakerCharts(modes []loadtest.ModeResult, xmax float64) chartGroup {
	g := chartGroup{Title: "Breaker state over time",
		Note:  "Each circuit breaker's state, each second's most open of five readings. Lines are nudged apart slightly so that breakers in the same state do not hide each other.",
		Empty: "No breaker gauges were sampled."}
	var without []string
	var with []loadtest.ModeResult
	for _, m := range modes {
		if (m.Mechanisms != nil && !m.Mechanisms.Breakers) || len(m.BreakerState) == 0 {
			without = append(without, m.Mode)
			continue
		}
		with = append(with, m)
	}
	if len(without) > 0 && len(with) > 0 {
		g.Note += " " + strings.Join(without, ", ") + " ran without breakers: no chart."
	}
	tripped := map[string]bool{}
	for _, m := range with {
		for k, v := range m.BreakerState {
			tripped[k] = tripped[k] || slices.ContainsFunc(v, func(x float64) bool { return x > 0 })
		}
	}
	var names, calm []string
	for _, k := range sortedKeys(tripped) {
		if tripped[k] {
			names = append(names, k)
		} else {
			calm = append(calm, k)
		}
	}
	names = append(names, calm...)
	note := ""
	if len(names) > topBreakers {
		note = fmt.Sprintf("%d of %d breakers: those that left closed first", topBreakers, len(names))
		names = names[:topBreakers]
	}
	if len(names) == 0 {
		return g
	}
	states := []chartTick{{0, "closed"}, {1, "half-open"}, {2, "open"}}
	for _, m := range with {
		c := lineChart{Title: "breaker state, " + m.Mode, XLabel: "time since start of run (s)", YLabel: "state",
			Shade: faultBands(m), XMax: xmax, YMin: -0.4, YMax: 2.4, YTicks: states}
		for i, name := range names {
			colour, dash := seriesStyle(i + otherSeries)
			nudge := (float64(i) - float64(len(names)-1)/2) * 0.06
			var pts []chartPoint
			for t, v := range m.BreakerState[name] {
				// The state sampled at t holds until the next sample.
				pts = append(pts, chartPoint{float64(t), v + nudge}, chartPoint{float64(t + 1), v + nudge})
			}
			c.Series = append(c.Series, chartSeries{Name: name, Colour: colour, Dash: dash, Points: pts})
		}
		g.Figures = append(g.Figures, chartFigure{Title: m.Mode, Note: note, SVG: c.svg()})
	}
	return g
}

// faultBands are the faulty phases of the given runs. The same phase in
// several runs is one band, from its earliest start to its latest end.
func faultBands(modes ...loadtest.ModeResult) []chartBand {
	var out []chartBand
	seen := map[string]int{}
	for _, m := range modes {
		for i, p := range m.Phases {
			if !p.Faulty {
				continue
			}
			key := fmt.Sprintf("%d/%s", i, p.Name)
			if j, ok := seen[key]; ok {
				out[j].From, out[j].To = min(out[j].From, p.StartS), max(out[j].To, p.EndS)
				continue
			}
			seen[key] = len(out)
			out = append(out, chartBand{From: p.StartS, To: p.EndS, Label: bandLabel(p)})
		}
	}
	return out
}

// runLength is how long a mode ran, in seconds: its last phase's end, or
// its longest series when it has no phases.
func runLength(m loadtest.ModeResult) float64 {
	end := 0.0
	for _, p := range m.Phases {
		if isFinite(p.EndS) {
			end = max(end, p.EndS)
		}
	}
	if end > 0 {
		return end
	}
	for _, s := range m.Series {
		if len(s) > 0 {
			end = max(end, float64(s[len(s)-1].T+1))
		}
	}
	return end
}

var reportPage = template.Must(template.New("report").Funcs(template.FuncMap{
	"seconds": func(v float64) string { return fmt.Sprintf("%.1f", v) },
}).Parse(reportTemplate))

// The page's only style is inline: it must open with no network.
const reportTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Mercado: {{.Scenario}}</title>
<style>
body { font: 20px/1.4 system-ui, "Segoe UI", "DejaVu Sans", sans-serif; color: #111; background: #fff; max-width: 1280px; margin: 0 auto; padding: 12px 32px 64px; }
h1 { font-size: 1.6em; margin: 0 0 0.1em; }
header { display: flex; align-items: baseline; gap: 1.2em; flex-wrap: wrap; }
header p { margin: 0; }
.verdict { font-size: 1.25em; line-height: 1.3; font-weight: bold; margin: 0.2em 0 0.4em; }
.caveat { border-left: 6px solid #D55E00; background: #fde3d0; padding: 0.2em 0.6em; font-weight: bold; margin: 0.3em 0; }
.headlines { display: flex; gap: 16px; margin: 0.4em 0; }
.headline { flex: 1; border: 2px solid #333; border-radius: 6px; padding: 0.3em 0.7em; }
.headline .label { font-size: 0.85em; color: #333; }
.headline .words { font-size: 1.5em; font-weight: bold; color: #005a8c; }
.headline .words.worse { color: #a33f00; }
.headline .values { font-size: 0.9em; font-variant-numeric: tabular-nums; }
#story-chart { margin: 0.4em 0 0; }
#story-chart figcaption { font-size: 1em; }
h2 { font-size: 1.6em; margin-top: 1.8em; border-bottom: 3px solid #333; }
h3 { font-size: 1.3em; margin: 1.2em 0 0.3em; }
.description { white-space: pre-line; font-size: 1.1em; }
.when { color: #444; }
.note { color: #333; max-width: 60em; }
.invalid { border: 5px solid #D55E00; background: #fde3d0; padding: 0.6em 1em; font-size: 1.25em; font-weight: bold; }
.ok { font-weight: bold; color: #005a8c; }
.bad { font-weight: bold; color: #a33f00; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 0.5em 0; }
th, td { padding: 0.3em 0.5em; border-bottom: 1px solid #ccc; text-align: left; vertical-align: top; }
thead th { border-bottom: 3px solid #333; }
td.n, th.n { text-align: right; }
td.n { white-space: nowrap; }
#lead table { font-size: 0.85em; }
tbody th.section { background: #e8e8e8; font-size: 1.1em; padding-top: 0.5em; }
td.better { background: #cce3f5; font-weight: bold; }
td.worse { background: #fde3d0; font-weight: bold; }
.key span { padding: 0.1em 0.5em; font-weight: bold; }
figure { margin: 1em 0 2em; }
figcaption { font-size: 1.2em; font-weight: bold; }
svg.chart { display: block; max-width: 100%; height: auto; }
ul.lines { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.85em; white-space: pre-wrap; }
</style>
</head>
<body>
<header>
<h1>{{.Scenario}}</h1>
{{with .StartedAt}}<p class="when">Run started <time datetime="{{.}}">{{.}}</time></p>{{end}}
</header>
{{with .Story}}<section id="story">
<p class="verdict" id="verdict">{{.Verdict}}</p>
{{range .Caveats}}<p class="caveat">{{.}}</p>
{{end}}<div class="headlines" id="headlines">
{{range .Figures}}<div class="headline">
<div class="label">{{.Label}}</div>
<div class="words{{if .Worse}} worse{{end}}">{{.Words}}</div>
<div class="values">{{range $i, $v := .Values}}{{if $i}} · {{end}}<span class="mode-value"><strong>{{$v.Mode}}</strong> {{$v.Value}}</span>{{end}}</div>
</div>
{{end}}</div>
{{with .Chart.SVG}}<figure id="story-chart">
<figcaption>{{$.Story.Chart.Title}}</figcaption>
{{.}}
</figure>{{end}}
</section>
{{end}}{{with .Lead}}<section id="lead">
<h2>{{.Title}}</h2>
{{if .Rows}}<table>
<thead><tr>{{range $i, $h := .Head}}<th{{if $i}} class="n"{{end}}>{{$h}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr>{{range $i, $c := .}}<td{{if $i}} class="n"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</tbody>
</table>{{end}}
{{range .Notes}}<p class="note">{{.}}</p>
{{end}}{{range .Lists}}<h3>{{.Title}}</h3>
<ul class="lines">
{{range .Items}}<li>{{.}}</li>
{{end}}</ul>
{{end}}</section>
{{end}}<section id="settings">
<h2>What ran</h2>
{{with .Description}}<p class="description">{{.}}</p>{{end}}
{{if .Settings}}<table>
<tbody>
{{range .Settings}}<tr><th>{{.Name}}</th><td>{{.Value}}</td></tr>
{{end}}</tbody>
</table>{{end}}
{{with .Mechanisms}}{{if .Rows}}<h3>Mechanisms per mode</h3>
<table>
<thead><tr><th>mechanism</th>{{range .Modes}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{range .Rows}}<tr><td>{{.Name}}</td>{{range .Values}}<td>{{.}}</td>{{end}}</tr>
{{end}}</tbody>
</table>{{end}}{{end}}
</section>
{{range .Invalid}}<p class="invalid">{{.}}.</p>
{{end}}
{{with .Checks}}<section id="checks">
<h2>Checks</h2>
<p class="note">What the scenario claims, measured on this run.</p>
<table>
<tbody>
{{range .}}<tr><td>{{if .Pass}}<span class="ok">PASS</span>{{else}}<span class="bad">FAIL</span>{{end}}</td><td>{{.Name}}</td><td>{{.Describe}}</td></tr>
{{end}}</tbody>
</table>
{{with $.Verdict}}<p id="checks-verdict" class="{{if eq $.Results.Verdict "PASS"}}ok{{else}}bad{{end}}"><strong>Verdict:</strong> {{.}}</p>{{end}}
</section>{{end}}
<section id="runs">
<h2>Runs</h2>
{{if .Runs}}<table>
<thead><tr><th>mode</th><th>valid</th><th class="n">length</th><th>schedule lag; longest stall</th><th>phases (s from start)</th></tr></thead>
<tbody>
{{range .Runs}}<tr><td>{{.Mode}}</td><td>{{if .Valid}}<span class="ok">valid</span>{{else}}<span class="bad">INVALID: {{.Reason}}</span>{{end}}</td><td class="n">{{.Duration}}</td><td>{{.Lag}}</td><td>{{range $i, $p := .Phases}}{{if $i}}<br>{{end}}{{$p.Name}} {{seconds $p.StartS}}–{{seconds $p.EndS}}{{if $p.Faulty}} <strong>(faults)</strong>{{end}}{{with $p.Arrivals.Kind}}{{if ne . "constant"}} ({{$p.Arrivals}} arrivals){{end}}{{end}}{{end}}</td></tr>
{{end}}</tbody>
</table>{{else}}<p>No modes ran.</p>{{end}}
</section>
{{with .Table}}{{if .Modes}}
<section id="classes">
<h2>Per class</h2>
{{template "key" .}}
<table>
{{template "head" .}}
{{range .Classes}}{{template "section" .}}{{end}}
</table>
</section>
{{if .Phases}}<section id="phases">
<h2>Phase by phase</h2>
<p class="note">Each phase on its own, goodput per second of the phase: the fault's effect apart from the calm before and after it. The checkout's p99 predicted from the hops is what <code>mercado budget predict</code> composes from the histograms of the calls orders made in the phase (docs/budgets.md); the row under it says whether the run agrees (from 0.8 to 1.25 times it, or within 10 ms: the services' own work, which it leaves out) or which of the prediction's assumptions it broke: retries, queueing outside the calls, or the histograms' wide buckets.</p>
<table>
{{template "head" .}}
{{range .Phases}}{{template "section" .}}{{end}}
</table>
</section>{{end}}
<section id="server">
<h2>Server figures</h2>
<p class="note">What the services counted themselves over the run. Amplification is calls each service received per user request.</p>
<table>
{{template "head" .}}
{{template "section" .Server}}
</table>
</section>
{{end}}{{end}}
<section id="charts">
{{range .Charts}}<h2>{{.Title}}</h2>
<p class="note">{{.Note}}</p>
{{range .Figures}}<figure>
<figcaption>{{.Title}}{{with .Note}} <span class="note">({{.}})</span>{{end}}</figcaption>
{{with .SVG}}{{.}}
{{end}}</figure>
{{else}}<p>{{.Empty}}</p>
{{end}}{{end}}
</section>
</body>
</html>
{{define "key"}}{{if .RatioHead}}<p class="note key">Ratio is {{.RatioHead}}. <span style="background:#cce3f5">blue</span> where {{(index .Modes 1).Mode}} did better, <span style="background:#fde3d0">orange</span> where it did worse; "-" where the ratio is undefined.</p>{{end}}{{end}}
{{define "head"}}<thead><tr><th></th>{{range .Modes}}<th class="n">{{.Mode}}{{if not .Valid}} (INVALID){{end}}</th>{{end}}{{with .RatioHead}}<th class="n">{{.}}</th>{{end}}</tr></thead>{{end}}
{{define "section"}}<tbody>
{{with .Title}}<tr><th class="section" colspan="{{$.Cols}}">{{.}}</th></tr>{{end}}
{{range .Rows}}<tr><td>{{.Label}}</td>{{range .Cells}}<td class="n">{{.}}</td>{{end}}{{if ne .Ratio ""}}<td class="n{{with .Verdict}} {{.}}{{end}}">{{.Ratio}}</td>{{end}}</tr>
{{end}}</tbody>
{{end}}`

// predictedSteps is the class's p99 predicted from the hops in each phase
// of m, as a step across the phase (a gap where there is none); nil when
// no phase has one.
func predictedSteps(m loadtest.ModeResult, class string) []chartPoint {
	var pts []chartPoint
	found := false
	for _, p := range m.Phases {
		y := math.NaN()
		if s := findSummary(p.Classes, class); s != nil && s.Predicted != nil {
			y, found = s.Predicted.P99MS, true
		}
		pts = append(pts, chartPoint{p.StartS, y}, chartPoint{p.EndS, y}, chartPoint{p.EndS, math.NaN()})
	}
	if !found {
		return nil
	}
	return pts
}

// bandLabel names a faulty phase's band: its simulated faults as
// "fault", its network faults as "network fault", with the links'
// specs, so that a reader tells the wire from the vendor.
func bandLabel(p loadtest.PhaseSpan) string {
	if len(p.Network) == 0 {
		return "fault: " + p.Name
	}
	var links []string
	for _, l := range slices.Sorted(maps.Keys(p.Network)) {
		links = append(links, l+" "+p.Network[l])
	}
	label := "network fault: " + p.Name + " (" + strings.Join(links, ", ") + ")"
	if len(p.Faults) > 0 {
		label = "fault + " + label
	}
	return label
}
