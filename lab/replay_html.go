package lab

import (
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/mercado-lab/mercado/internal/serve"
)

// A replay's HTML page draws each run's hop table as the shrinking
// budget: for every hop, the budget left when the call began, the
// timeout the call was given and the time it took, down to what was left
// when the answer came — or how far past the deadline it came.

// budgetPage is one replay's page.
type budgetPage struct {
	Title string
	// Intro are the run's settings in sentences; Notes come after the
	// diagrams.
	Intro, Notes []string
	Runs         []budgetRun
}

// budgetRun is one checkout: a mode, or a way of running it.
type budgetRun struct {
	Title      string
	DeadlineMS int64
	// FloorMS is the least budget a call is started with (0: none, as in
	// naive mode, which never looks at the budget).
	FloorMS int64
	Hops    []budgetHop
	TotalMS int64
	// Verdict is WITHIN or OVER; Answer the HTTP answer in words.
	Verdict, Answer string
	Notes           []string
	SVG             template.HTML
}

// budgetHop is one call of the chain.
type budgetHop struct {
	Name string
	// StartMS is when the call began, from the start of the request;
	// the budget left then is the deadline less it.
	StartMS              int64
	TimeoutMS, TookMS    int64
	Outcome, Note, Label string
	// Reached is false when the request never got to the hop or orders'
	// report of it was lost: nothing is known of it. Called is false for
	// a hop reached but not called (too little budget left): it has no
	// timeout or time taken to draw.
	Reached, Called, Clipped bool
}

// LeftMS is the budget left when the call began.
func (h budgetHop) LeftMS(deadline int64) int64 { return deadline - h.StartMS }

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
func (r budgetRun) svg() template.HTML {
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
	fmt.Fprintf(&b, `<title>%s: budget left at each hop</title>`, esc(r.Title))
	top := 40.0
	row := func(i int) float64 { return top + float64(i)*budgetRowH }
	label := func(i int, text string) {
		fmt.Fprintf(&b, `<text x="8" y="%s" font-weight="bold" dominant-baseline="middle">%s</text>`, svgNum(row(i)+budgetRowH/2-6), esc(text))
	}
	caption := func(i int, at float64, text string) {
		anchor := "start"
		if at > budgetW-380 {
			at, anchor = budgetW-budgetRight, "end"
		}
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="%s" stroke="#ffffff" stroke-width="5" paint-order="stroke">%s</text>`,
			svgNum(at), svgNum(row(i)+budgetRowH-10), anchor, esc(text))
	}
	bar := func(i int, ms int64, fill string) {
		fmt.Fprintf(&b, `<rect class="left" x="%s" y="%s" width="%s" height="26" fill="%s"/>`,
			svgNum(budgetLabel), svgNum(row(i)+4), svgNum(x(ms)-budgetLabel), fill)
	}

	// The deadline, across every row.
	fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#000000" stroke-width="3"/>`,
		svgNum(x(r.DeadlineMS)), svgNum(top-10), svgNum(x(r.DeadlineMS)), svgNum(row(rows)))
	fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end" font-weight="bold">deadline %s ms</text>`,
		svgNum(x(r.DeadlineMS)-6), svgNum(top-16), esc(msText(r.DeadlineMS)))
	if r.FloorMS > 0 {
		fmt.Fprintf(&b, `<line class="floor" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#D55E00" stroke-width="3" stroke-dasharray="8 6"/>`,
			svgNum(x(r.FloorMS)), svgNum(top), svgNum(x(r.FloorMS)), svgNum(row(rows)))
		fmt.Fprintf(&b, `<text x="%s" y="%s" fill="#a33f00">floor %s ms</text>`, svgNum(x(r.FloorMS)+6), svgNum(top-16), esc(msText(r.FloorMS)))
	}

	label(0, "at the edge")
	bar(0, r.DeadlineMS, "#cce3f5")
	caption(0, budgetLabel+6, msText(r.DeadlineMS)+" ms to spend")
	for i, h := range r.Hops {
		n := i + 1
		left := h.LeftMS(r.DeadlineMS)
		label(n, h.Name)
		if h.Reached {
			if left > 0 {
				bar(n, left, "#cce3f5")
			}
			fmt.Fprintf(&b, `<text class="hop-left" x="%s" y="%s" text-anchor="end" font-size="%s" data-left-ms="%d">%s</text>`,
				svgNum(budgetLabel-8), svgNum(row(n)+budgetRowH-10), svgNum(budgetFont*0.9), left, esc(msText(left)+" left"))
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
		caption(n, budgetLabel+6, h.Label)
	}
	end := len(r.Hops) + 1
	left := r.DeadlineMS - r.TotalMS
	label(end, "answer: "+r.Verdict)
	if left > 0 {
		bar(end, left, "#cce3f5")
		caption(end, budgetLabel+6, fmt.Sprintf("answered after %s ms with %s ms to spare (%s)", msText(r.TotalMS), msText(left), r.Answer))
	} else {
		fmt.Fprintf(&b, `<rect class="over" x="%s" y="%s" width="%s" height="26" fill="#D55E00"/>`,
			svgNum(x(r.DeadlineMS)), svgNum(row(end)+4), svgNum(max(x(r.TotalMS)-x(r.DeadlineMS), 2)))
		caption(end, budgetLabel+6, fmt.Sprintf("answered after %s ms, %s ms past the deadline (%s)", msText(r.TotalMS), msText(-left), r.Answer))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // every outside string went through esc
}

// hopLabel is a hop's line of the diagram, in words.
func hopLabel(h budgetHop, deadline int64) string {
	if !h.Called {
		return h.Note
	}
	if h.TimeoutMS == 0 {
		return fmt.Sprintf("its own work, no call: took %s ms", msText(h.TookMS))
	}
	s := fmt.Sprintf("timeout %s ms, took %s ms (%s)", msText(h.TimeoutMS), msText(h.TookMS), h.Outcome)
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

func msText(ms int64) string {
	neg := ms < 0
	if neg {
		ms = -ms
	}
	s := strconv.FormatInt(ms, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "−" + s
	}
	return s
}

func svgNum(v float64) string { return strconv.FormatFloat(float64(int64(v*100+0.5))/100, 'f', -1, 64) }

func esc(s string) string { return template.HTMLEscapeString(s) }

// write renders the page, drawing each run's diagram first.
func (p budgetPage) write(w io.Writer) error {
	for i := range p.Runs {
		p.Runs[i].SVG = p.Runs[i].svg()
	}
	return budgetTemplate.Execute(w, p)
}

var budgetTemplate = template.Must(template.New("budget").Funcs(template.FuncMap{"ms": msText}).Parse(`<!DOCTYPE html>
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

// answerText is an HTTP answer in words: "HTTP 201".
func answerText(status int) string { return "HTTP " + strconv.Itoa(status) }

// WriteHTML writes lesson 7's page: each mode's chain as the shrinking
// budget.
func (r Lesson7Result) WriteHTML(w io.Writer, cfg Lesson7Config) error {
	ms := func(d time.Duration) string { return msText(d.Milliseconds()) }
	p := budgetPage{
		Title: "Lesson 7: the same chain, naive and budgeted",
		Intro: []string{
			fmt.Sprintf("The client gives the checkout %s ms. Catalog (own cap %s ms) takes %s ms, payments (cap %s ms) %s ms, and shipping (cap %s ms) is degraded: its carrier takes %s ms. The caps add up to %s ms, more than the deadline.",
				ms(cfg.Deadline), ms(cfg.CatalogCap), ms(cfg.CatalogLatency), ms(cfg.PaymentsCap), ms(cfg.PaymentsLatency),
				ms(cfg.ShippingCap), ms(cfg.ShippingLatency), ms(cfg.CatalogCap+cfg.PaymentsCap+cfg.ShippingCap)),
		},
		Notes: []string{"Every figure on this page was measured on real services over loopback gRPC and HTTP (mercado lab lesson7).", FraudLeftOut},
	}
	p.Runs = append(p.Runs,
		lesson7Run("naive: every hop uses its own cap, blind to the deadline", r.Naive, 0),
		lesson7Run(fmt.Sprintf("budgeted: each hop gets min(cap, budget left − %s ms margin), and none starts below the %s ms floor", ms(cfg.Margin), ms(cfg.Floor)),
			r.Budgeted, cfg.Floor.Milliseconds()))
	return p.write(w)
}

func lesson7Run(title string, m ModeResult, floor int64) budgetRun {
	run := budgetRun{Title: title, DeadlineMS: m.DeadlineMS, FloorMS: floor, TotalMS: m.TotalMS, Verdict: m.Verdict, Answer: answerText(m.HTTPStatus)}
	for _, h := range m.Hops {
		bh := budgetHop{Name: h.Name, StartMS: h.ElapsedMS - h.TookMS, TimeoutMS: h.TimeoutMS, TookMS: h.TookMS, Outcome: h.Outcome, Note: h.Note,
			Reached: h.Outcome != "unknown" && h.Note != SkipEarlierHopFailed, Called: h.Outcome != "skipped" && h.Outcome != "unknown", Clipped: h.ClippedByBudget}
		if h.Outcome == "skipped" {
			bh.Note = "not called: " + h.Note
		}
		bh.Label = hopLabel(bh, m.DeadlineMS)
		run.Hops = append(run.Hops, bh)
	}
	run.Notes = measuredAgain(m.MeasuredAgain, m.Disturbed)
	return run
}

// measuredAgain says why tries were measured again (see stalls.go).
func measuredAgain(again []string, disturbed string) []string {
	var out []string
	for i, why := range again {
		out = append(out, fmt.Sprintf("Try %d was measured again: %s.", i+1, why))
	}
	if disturbed != "" {
		out = append(out, fmt.Sprintf("All %d tries ended so; this one: %s.", maxTries, disturbed))
	}
	return out
}

// WriteHTML writes the exercise's page: the three ways, each as the
// shrinking budget. Catalog and fraud start together in the parallel
// way, so their rows start with the same budget left.
func (r FanoutResult) WriteHTML(w io.Writer, cfg FanoutConfig) error {
	ms := func(d time.Duration) string { return msText(d.Milliseconds()) }
	p := budgetPage{
		Title: "Lesson 7, exercise 2: in series or in parallel",
		Intro: []string{fmt.Sprintf("The client gives the checkout %s ms. Catalog takes %s ms and the fraud screen %s ms, and neither needs the other; payments takes %s ms and needs both; shipping takes %s ms.",
			ms(cfg.Deadline), ms(cfg.CatalogLatency), ms(cfg.FraudLatency), ms(cfg.PaymentsLatency), ms(cfg.ShippingLatency))},
		Notes: []string{"Each hop starts at orders, counted from the request's arrival there. Every figure on this page was measured on real services over loopback gRPC and HTTP (mercado lab fanout)."},
	}
	for _, way := range []struct {
		title    string
		run      FanoutRun
		budgeted bool
	}{
		{"naive, in series: each call with its own cap", r.NaiveSequential, false},
		{fmt.Sprintf("budgeted, in series: each call gets min(cap, budget left − %s ms)", ms(cfg.Margin)), r.BudgetedSequential, true},
		{"budgeted, in parallel: catalog and fraud at once, sharing one budget", r.BudgetedParallel, true},
	} {
		run := budgetRun{Title: way.title, DeadlineMS: way.run.DeadlineMS, TotalMS: way.run.TotalMS, Verdict: way.run.Verdict, Answer: answerText(way.run.Status)}
		if way.budgeted {
			run.FloorMS = cfg.Floor.Milliseconds()
		}
		for _, h := range way.run.Hops {
			bh := budgetHop{Name: h.Name, StartMS: h.StartMS, TimeoutMS: h.TimeoutMS, TookMS: h.TookMS, Outcome: h.Outcome,
				Reached: h.Outcome != "unknown" && (h.Outcome != "skipped" || h.StartMS > 0), Called: h.Outcome != "skipped" && h.Outcome != "unknown",
				Clipped: way.budgeted && h.TimeoutMS > 0 && time.Duration(h.TimeoutMS)*time.Millisecond < cfg.hopCap(h.Name)}
			switch h.Outcome {
			case "skipped":
				bh.Note = "not called"
			case "unknown":
				bh.Note = NotReported
			}
			bh.Label = hopLabel(bh, run.DeadlineMS)
			run.Hops = append(run.Hops, bh)
		}
		run.Notes = measuredAgain(way.run.MeasuredAgain, way.run.Disturbed)
		p.Runs = append(p.Runs, run)
	}
	return p.write(w)
}

// WriteHTML writes the waterfall's page: the create-order's steps as the
// shrinking budget, and what became of the order.
func (r WaterfallResult) WriteHTML(w io.Writer, cfg WaterfallConfig) error {
	var table strings.Builder
	r.WriteTable(&table, cfg)
	run := budgetRun{Title: fmt.Sprintf("budgeted: orders gives each call min(own cap, budget left − %d ms reserve)", cfg.Reserve.Milliseconds()),
		DeadlineMS: r.BudgetMS, FloorMS: serve.DefaultFloor.Milliseconds(), TotalMS: r.TotalMS, Verdict: "WITHIN", Answer: answerText(r.HTTPStatus)}
	if r.Status != "" {
		run.Answer += " " + r.Status
	}
	if r.TotalMS > r.BudgetMS {
		run.Verdict = "OVER"
	}
	for _, st := range r.Steps {
		called := st.Outcome == "ok" || st.Outcome == "timeout" || st.Outcome == "error"
		bh := budgetHop{Name: st.Name, StartMS: st.StartsAtMS, TimeoutMS: st.TimeoutMS, TookMS: st.TookMS, Outcome: st.Outcome,
			Reached: called || st.Outcome == "skipped", Called: called}
		switch {
		case st.Outcome == "skipped":
			bh.Note = "not called: too little budget"
		case !called:
			bh.Note = st.Outcome
		}
		bh.Clipped = bh.Called && st.TimeoutMS < st.CapMS
		bh.Label = hopLabel(bh, r.BudgetMS)
		if st.CapMS > 0 && bh.Called {
			bh.Label = fmt.Sprintf("own cap %s ms; ", msText(st.CapMS)) + bh.Label
		}
		run.Hops = append(run.Hops, bh)
	}
	run.Notes = measuredAgain(r.MeasuredAgain, r.Disturbed)
	p := budgetPage{
		Title: fmt.Sprintf("The %s ms create-order waterfall", msText(r.BudgetMS)),
		Intro: []string{fmt.Sprintf("The gateway works %s ms first; orders keeps the last %s ms of the budget for its answer and calls inventory (catalog, cap %s ms, takes %s ms), then payment (cap %s ms, takes %s ms).",
			msText(cfg.GatewayWork.Milliseconds()), msText(cfg.Reserve.Milliseconds()), msText(cfg.CatalogCap.Milliseconds()),
			msText(cfg.CatalogLatency.Milliseconds()), msText(cfg.PaymentsCap.Milliseconds()), msText(cfg.PaymentsLatency.Milliseconds()))},
		Runs: []budgetRun{run},
	}
	// What became of the order: the table's closing sentences, measured.
	_, after, _ := strings.Cut(table.String(), FraudLeftOut)
	p.Notes = append(p.Notes, strings.Join(strings.Fields(after), " "))
	p.Notes = append(p.Notes, FraudLeftOut, "Every figure on this page was measured on real services over loopback gRPC and HTTP (mercado lab waterfall).")
	return p.write(w)
}
