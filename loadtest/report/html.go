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
// mailed or projected as it is. It holds the scenario, each mode's
// validity, the side-by-side table per class and of the servers' own
// figures, and inline SVG time charts (p99 latency and goodput per
// class, pool in flight and breaker state per mode) with the fault
// windows shaded.
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
	// Lead, when set, is a lab's own summary above the rest.
	Lead *Lead
}

type htmlRun struct {
	Mode     string
	Valid    bool
	Reason   string
	Duration string
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
	rep := htmlReport{Results: r, Table: compareModes(r)}
	rep.Table.Server.Title = "" // the page's heading says it
	modes := rep.Table.Modes
	for _, m := range modes {
		run := htmlRun{Mode: m.Mode, Valid: m.Valid, Phases: m.Phases, Duration: fmt.Sprintf("%.0f s", runLength(m))}
		if !m.Valid {
			run.Reason = invalidReason(m)
			rep.Invalid = append(rep.Invalid, m.Mode+": "+run.Reason)
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
		Note:  "The 99th percentile of latency from the intended send time, per second of sends. Grey bands are fault windows; a gap means no requests that second.",
		Empty: "No per-second series were recorded."}
	goodput := chartGroup{Title: "Goodput over time",
		Note:  "Answers that succeeded within the client's deadline, per second of sends. The thin grey line is the load offered.",
		Empty: "No per-second series were recorded."}
	for _, class := range classes {
		lat := lineChart{Title: "p99 latency, " + class, XLabel: "time since start of run (s)", YLabel: "p99 latency (ms)", Shade: faults, XMax: xmax}
		good := lineChart{Title: "goodput, " + class, XLabel: "time since start of run (s)", YLabel: "good answers per second", Shade: faults, XMax: xmax}
		for i, m := range modes {
			colour, dash := seriesStyle(i)
			var p99, ok []chartPoint
			for _, s := range m.Series[class] {
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
		}
		if len(modes) > 0 {
			// The schedule is the same in every mode: one offered line.
			var offered []chartPoint
			for _, s := range modes[0].Series[class] {
				offered = append(offered, chartPoint{float64(s.T) + 0.5, float64(s.Requests)})
			}
			good.Series = append(good.Series, chartSeries{Name: "offered (requests/s)", Colour: "#888888", Dash: "3 5", Thin: true, Points: offered})
		}
		latency.Figures = append(latency.Figures, chartFigure{Title: class, SVG: lat.svg()})
		goodput.Figures = append(goodput.Figures, chartFigure{Title: class, SVG: good.svg()})
	}
	rep.Charts = append(rep.Charts, latency, goodput, poolCharts(modes, xmax), breakerCharts(modes, xmax))
	return rep
}

// poolCharts draws each mode's busiest pools, the same pools in the same
// colours in every mode, on the same scale.
func poolCharts(modes []loadtest.ModeResult, xmax float64) chartGroup {
	g := chartGroup{Title: "Pool in flight over time",
		Note:  "Requests in flight in each pool or bulkhead, each second's highest of five readings; the busiest pools by peak.",
		Empty: "No pool gauges were sampled."}
	peak := map[string]float64{}
	for _, m := range modes {
		for k, v := range m.PoolInFlight {
			for _, x := range v {
				if isFinite(x) {
					peak[k] = max(peak[k], x)
				}
			}
			peak[k] = max(peak[k], 0)
		}
	}
	pools := sortedKeys(peak)
	slices.SortStableFunc(pools, func(a, b string) int { return cmp.Compare(peak[b], peak[a]) })
	note := ""
	if len(pools) > topPools {
		note = fmt.Sprintf("the %d busiest of %d pools", topPools, len(pools))
		pools = pools[:topPools]
	}
	if len(pools) == 0 {
		return g
	}
	ymax, step := niceMax(peak[pools[0]]*1.04, 5)
	for _, m := range modes {
		if !hasAny(m.PoolInFlight, pools) {
			g.Figures = append(g.Figures, chartFigure{Title: m.Mode, Note: "no pool gauges were sampled in this mode"})
			continue
		}
		c := lineChart{Title: "pool in flight, " + m.Mode, XLabel: "time since start of run (s)", YLabel: "in flight (requests)",
			Shade: faultBands(m), XMax: xmax, YMax: ymax, YTicks: numericTicks(0, ymax, step)}
		for i, pool := range pools {
			colour, dash := seriesStyle(i + otherSeries)
			var pts []chartPoint
			for t, v := range m.PoolInFlight[pool] {
				pts = append(pts, chartPoint{float64(t), v}) // sample t is taken t seconds in
			}
			c.Series = append(c.Series, chartSeries{Name: pool, Colour: colour, Dash: dash, Points: pts})
		}
		g.Figures = append(g.Figures, chartFigure{Title: m.Mode, Note: note, SVG: c.svg()})
	}
	return g
}

// breakerCharts draws each mode's breakers as step lines between closed,
// half-open and open. Breakers that ever left closed come first; lines
// are nudged apart so that breakers in the same state stay visible.
func breakerCharts(modes []loadtest.ModeResult, xmax float64) chartGroup {
	g := chartGroup{Title: "Breaker state over time",
		Note:  "Each circuit breaker's state, each second's most open of five readings. Lines are nudged apart slightly so that breakers in the same state do not hide each other.",
		Empty: "No breaker gauges were sampled."}
	tripped := map[string]bool{}
	for _, m := range modes {
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
	for _, m := range modes {
		if !hasAny(m.BreakerState, names) {
			g.Figures = append(g.Figures, chartFigure{Title: m.Mode, Note: "no breaker gauges were sampled in this mode"})
			continue
		}
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
// its longest series.
func runLength(m loadtest.ModeResult) float64 {
	end := 0.0
	for _, p := range m.Phases {
		if isFinite(p.EndS) {
			end = max(end, p.EndS)
		}
	}
	for _, s := range m.Series {
		if len(s) > 0 {
			end = max(end, float64(s[len(s)-1].T+1))
		}
	}
	return end
}

// hasAny reports whether gauges holds a sample for any of keys.
func hasAny(gauges map[string][]float64, keys []string) bool {
	return slices.ContainsFunc(keys, func(k string) bool { return len(gauges[k]) > 0 })
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
body { font: 20px/1.45 system-ui, "Segoe UI", "DejaVu Sans", sans-serif; color: #111; background: #fff; max-width: 1280px; margin: 0 auto; padding: 24px 32px 64px; }
h1 { font-size: 2.1em; margin: 0.2em 0 0.1em; }
h2 { font-size: 1.6em; margin-top: 1.8em; border-bottom: 3px solid #333; }
h3 { font-size: 1.3em; margin: 1.2em 0 0.3em; }
.description { white-space: pre-line; font-size: 1.1em; }
.when { color: #444; }
.note { color: #333; max-width: 60em; }
.invalid { border: 5px solid #D55E00; background: #fde3d0; padding: 0.6em 1em; font-size: 1.25em; font-weight: bold; }
.ok { font-weight: bold; color: #005a8c; }
.bad { font-weight: bold; color: #a33f00; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 0.5em 0; }
th, td { padding: 0.3em 0.9em; border-bottom: 1px solid #ccc; text-align: left; vertical-align: top; }
thead th { border-bottom: 3px solid #333; }
td.n, th.n { text-align: right; }
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
{{with .Description}}<p class="description">{{.}}</p>{{end}}
{{with .StartedAt}}<p class="when">Run started <time datetime="{{.}}">{{.}}</time></p>{{end}}
</header>
{{with .Lead}}<section id="lead">
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
{{end}}{{range .Invalid}}<p class="invalid">INVALID run: {{.}}. Its figures measure the load generator as much as the shop.</p>
{{end}}
{{with .Checks}}<section id="checks">
<h2>Checks</h2>
<p class="note">What the scenario claims, measured on this run.</p>
<table>
<tbody>
{{range .}}<tr><td>{{if .Pass}}<span class="ok">PASS</span>{{else}}<span class="bad">FAIL</span>{{end}}</td><td>{{.Name}}</td><td>{{.Describe}}</td></tr>
{{end}}</tbody>
</table>
</section>{{end}}
<section id="runs">
<h2>Runs</h2>
{{if .Runs}}<table>
<thead><tr><th>mode</th><th>valid</th><th class="n">length</th><th>phases (s from start)</th></tr></thead>
<tbody>
{{range .Runs}}<tr><td>{{.Mode}}</td><td>{{if .Valid}}<span class="ok">valid</span>{{else}}<span class="bad">INVALID: {{.Reason}}</span>{{end}}</td><td class="n">{{.Duration}}</td><td>{{range $i, $p := .Phases}}{{if $i}}<br>{{end}}{{$p.Name}} {{seconds $p.StartS}}–{{seconds $p.EndS}}{{if $p.Faulty}} <strong>(faults)</strong>{{end}}{{end}}</td></tr>
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
<p class="note">Each phase on its own, goodput per second of the phase: the fault's effect apart from the calm before and after it.</p>
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
