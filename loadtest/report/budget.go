package report

import (
	"fmt"
	"html/template"
	"io"
	"strings"
)

// BudgetPage is a replay's HTML page: each run's hop table drawn as the
// shrinking budget — for every hop, the budget left when the call began,
// the timeout the call was given and the time it took, down to what was
// left when the answer came, or how far past the deadline it came.
type BudgetPage struct {
	Title string
	// Intro are the run's settings in sentences; Notes come after the
	// diagrams.
	Intro, Notes []string
	Runs         []BudgetRun
}

// BudgetRun is one checkout: a mode, or a way of running it.
type BudgetRun struct {
	Title      string
	DeadlineMS int64
	// FloorMS is the least budget a call is started with (0: none, as in
	// naive mode, which never looks at the budget).
	FloorMS int64
	Hops    []BudgetHop
	TotalMS int64
	// Verdict is WITHIN or OVER; Answer the HTTP answer in words.
	Verdict, Answer string
	Notes           []string
}

// BudgetHop is one call of the chain.
type BudgetHop struct {
	Name string
	// StartMS is when the call began, from the start of the request;
	// the budget left then is the deadline less it.
	StartMS           int64
	TimeoutMS, TookMS int64
	Outcome, Note     string
	// Reached is false when the request never got to the hop or orders'
	// report of it was lost: nothing is known of it. Called is false for
	// a hop reached but not called (too little budget left): it has no
	// timeout or time taken to draw.
	Reached, Called, Clipped bool
}

// LeftMS is the budget left when the call began.
func (h BudgetHop) LeftMS(deadline int64) int64 { return deadline - h.StartMS }

// Geometry of the diagram, in SVG user units (it scales to the page).
const (
	budgetW     = 1200.0
	budgetLabel = 190.0 // the hop names' column
	budgetRight = 30.0
	budgetRowH  = 64.0
	budgetFont  = 20.0
)

// svg draws the run: a row for the deadline, one per hop and one for the
// answer. Each hop's pale bar is the budget left when it began, measured
// from the left edge, so the bars shrink down the page; the outlined box
// is the timeout it was given, the solid bar the time it took. The floor
// is a dashed line: a call with less left than that is not started.
func (r BudgetRun) svg() template.HTML {
	scale := float64(max(r.DeadlineMS, r.TotalMS, 1))
	for _, h := range r.Hops {
		scale = max(scale, float64(h.TimeoutMS), float64(h.TookMS))
	}
	plotW := budgetW - budgetLabel - budgetRight
	x := func(ms int64) float64 { return budgetLabel + float64(max(ms, 0))/scale*plotW }
	rows := len(r.Hops) + 2
	height := 40 + float64(rows)*budgetRowH + 40

	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="budget" viewBox="0 0 %s %s" width="100%%" role="img" font-family="system-ui, sans-serif" font-size="%s">`,
		svgNum(budgetW), svgNum(height), svgNum(budgetFont))
	fmt.Fprintf(&b, `<title>%s: budget left at each hop</title>`, svgText(r.Title))
	top := 40.0
	row := func(i int) float64 { return top + float64(i)*budgetRowH }
	label := func(i int, text string) {
		fmt.Fprintf(&b, `<text x="8" y="%s" font-weight="bold" dominant-baseline="middle">%s</text>`, svgNum(row(i)+budgetRowH/2-6), svgText(text))
	}
	caption := func(i int, at float64, text string) {
		anchor := "start"
		if at > budgetW-380 {
			at, anchor = budgetW-budgetRight, "end"
		}
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="%s" stroke="#ffffff" stroke-width="5" paint-order="stroke">%s</text>`,
			svgNum(at), svgNum(row(i)+budgetRowH-10), anchor, svgText(text))
	}
	bar := func(i int, ms int64, fill string) {
		fmt.Fprintf(&b, `<rect class="left" x="%s" y="%s" width="%s" height="26" fill="%s"/>`,
			svgNum(budgetLabel), svgNum(row(i)+4), svgNum(x(ms)-budgetLabel), fill)
	}

	// The deadline, across every row.
	fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#000000" stroke-width="3"/>`,
		svgNum(x(r.DeadlineMS)), svgNum(top-10), svgNum(x(r.DeadlineMS)), svgNum(row(rows)))
	fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end" font-weight="bold">deadline %s ms</text>`,
		svgNum(x(r.DeadlineMS)-6), svgNum(top-16), svgText(FormatMS(r.DeadlineMS)))
	if r.FloorMS > 0 {
		fmt.Fprintf(&b, `<line class="floor" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#D55E00" stroke-width="3" stroke-dasharray="8 6"/>`,
			svgNum(x(r.FloorMS)), svgNum(top), svgNum(x(r.FloorMS)), svgNum(row(rows)))
		fmt.Fprintf(&b, `<text x="%s" y="%s" fill="#a33f00">floor %s ms</text>`, svgNum(x(r.FloorMS)+6), svgNum(top-16), svgText(FormatMS(r.FloorMS)))
	}

	label(0, "at the edge")
	bar(0, r.DeadlineMS, "#cce3f5")
	caption(0, budgetLabel+6, FormatMS(r.DeadlineMS)+" ms to spend")
	for i, h := range r.Hops {
		n := i + 1
		left := h.LeftMS(r.DeadlineMS)
		label(n, h.Name)
		if h.Reached {
			if left > 0 {
				bar(n, left, "#cce3f5")
			}
			fmt.Fprintf(&b, `<text class="hop-left" x="%s" y="%s" text-anchor="end" font-size="%s" data-left-ms="%d">%s</text>`,
				svgNum(budgetLabel-8), svgNum(row(n)+budgetRowH-10), svgNum(budgetFont*0.9), left, svgText(FormatMS(left)+" left"))
		}
		if h.Called {
			if h.TimeoutMS > 0 {
				fmt.Fprintf(&b, `<rect class="timeout" x="%s" y="%s" width="%s" height="34" fill="none" stroke="#0072B2" stroke-width="3"%s/>`,
					svgNum(budgetLabel), svgNum(row(n)), svgNum(x(h.TimeoutMS)-budgetLabel), map[bool]string{true: ` stroke-dasharray="6 3"`}[h.Clipped])
			}
			colour := "#0072B2"
			if h.Outcome != "ok" {
				colour = "#D55E00"
			}
			fmt.Fprintf(&b, `<rect class="took" x="%s" y="%s" width="%s" height="14" fill="%s"/>`,
				svgNum(budgetLabel), svgNum(row(n)+10), svgNum(max(x(h.TookMS)-budgetLabel, 2)), colour)
		}
		caption(n, budgetLabel+6, h.label(r.DeadlineMS))
	}
	end := len(r.Hops) + 1
	left := r.DeadlineMS - r.TotalMS
	label(end, "answer: "+r.Verdict)
	if left > 0 {
		bar(end, left, "#cce3f5")
		caption(end, budgetLabel+6, fmt.Sprintf("answered after %s ms with %s ms to spare (%s)", FormatMS(r.TotalMS), FormatMS(left), r.Answer))
	} else {
		fmt.Fprintf(&b, `<rect class="over" x="%s" y="%s" width="%s" height="26" fill="#D55E00"/>`,
			svgNum(x(r.DeadlineMS)), svgNum(row(end)+4), svgNum(max(x(r.TotalMS)-x(r.DeadlineMS), 2)))
		caption(end, budgetLabel+6, fmt.Sprintf("answered after %s ms, %s ms past the deadline (%s)", FormatMS(r.TotalMS), FormatMS(-left), r.Answer))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // every outside string went through svgText
}

// label is a hop's line of the diagram, in words.
func (h BudgetHop) label(deadline int64) string {
	if !h.Called {
		return h.Note
	}
	if h.TimeoutMS == 0 {
		return fmt.Sprintf("its own work, no call: took %s ms", FormatMS(h.TookMS))
	}
	s := fmt.Sprintf("timeout %s ms, took %s ms (%s)", FormatMS(h.TimeoutMS), FormatMS(h.TookMS), h.Outcome)
	if h.Clipped {
		s += " — clipped by the budget"
	}
	switch left := h.LeftMS(deadline); {
	case left <= 0:
		s += " — the client had already given up"
	case h.TookMS > left:
		s += " — past the deadline"
	}
	return s
}

// FormatMS prints milliseconds with thousands separators: "1,200", "−154".
func FormatMS(ms int64) string {
	if ms < 0 {
		return "−" + num(float64(-ms), 0)
	}
	return num(float64(ms), 0)
}

// WriteBudgetPage writes p as one self-contained HTML page, like the
// scenario report: no scripts, fonts or stylesheets from elsewhere.
func WriteBudgetPage(w io.Writer, p BudgetPage) error {
	return budgetTemplate.Execute(w, p)
}

// SVG is the run's diagram, for the page's template.
func (r BudgetRun) SVG() template.HTML { return r.svg() }

var budgetTemplate = template.Must(template.New("budget").Funcs(template.FuncMap{"ms": FormatMS}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Mercado: {{.Title}}</title>
<style>
body { font: 20px/1.45 system-ui, "Segoe UI", "DejaVu Sans", sans-serif; color: #111; background: #fff; max-width: 1280px; margin: 0 auto; padding: 12px 32px 64px; }
h1 { font-size: 1.6em; margin: 0 0 0.2em; }
h2 { font-size: 1.3em; margin-top: 1.2em; border-bottom: 3px solid #333; }
.intro { max-width: 60em; }
.key { color: #333; }
.verdict { font-weight: bold; }
.over { color: #a33f00; }
.within { color: #005a8c; }
svg.budget { display: block; max-width: 100%; height: auto; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 0.5em 0; }
th, td { padding: 0.25em 0.8em; border-bottom: 1px solid #ccc; text-align: left; }
thead th { border-bottom: 3px solid #333; }
td.n, th.n { text-align: right; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{range .Intro}}<p class="intro">{{.}}</p>
{{end}}<p class="key">Each row is a hop, in the order orders called them. The pale bar is the budget left when the call began (the deadline less what came before); the outlined box is the timeout the call was given (dashed when the budget, not the hop's own cap, set it); the solid bar is the time the call took, blue when it answered, orange when it did not. The dashed orange line is the floor: with less than that left, a budgeted hop is not called at all.</p>
{{range .Runs}}<section class="run">
<h2>{{.Title}}</h2>
<p class="verdict {{if eq .Verdict "OVER"}}over{{else}}within{{end}}">{{.Verdict}}: answered after {{ms .TotalMS}} ms against a {{ms .DeadlineMS}} ms deadline ({{.Answer}}).</p>
{{.SVG}}
<table>
<thead><tr><th>hop</th><th class="n">starts at (ms)</th><th class="n">left then (ms)</th><th class="n">timeout (ms)</th><th class="n">took (ms)</th><th>outcome</th></tr></thead>
<tbody>
{{$d := .DeadlineMS}}{{range .Hops}}<tr><td>{{.Name}}</td><td class="n">{{if .Reached}}{{ms .StartMS}}{{else}}-{{end}}</td><td class="n">{{if .Reached}}{{ms (.LeftMS $d)}}{{else}}-{{end}}</td><td class="n">{{if and .Called .TimeoutMS}}{{ms .TimeoutMS}}{{else}}-{{end}}</td><td class="n">{{if .Called}}{{ms .TookMS}}{{else}}-{{end}}</td><td>{{if .Called}}{{.Outcome}}{{if .Clipped}}, clipped by the budget{{end}}{{else}}{{.Note}}{{end}}</td></tr>
{{end}}</tbody>
</table>
{{range .Notes}}<p>{{.}}</p>
{{end}}</section>
{{end}}{{range .Notes}}<p>{{.}}</p>
{{end}}</body>
</html>
`))
