package report

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// lineChart is one time chart of the HTML report, drawn as inline SVG by
// the few lines of Go below rather than by a charting library: axes with
// units, a legend, shaded fault windows and one polyline per series.
type lineChart struct {
	// Title is the chart's accessible name (the SVG <title>).
	Title          string
	XLabel, YLabel string
	Series         []chartSeries
	// Shade are x ranges drawn as grey bands: the fault windows.
	Shade []chartBand
	// XMax is the end of the x axis; the data's end when larger.
	XMax float64
	// YMin and YMax fix the y axis; when both are zero it runs from 0 to a
	// round number above the data.
	YMin, YMax float64
	// YTicks, when set, replace the numeric y ticks (named levels such as
	// a breaker's states).
	YTicks []chartTick
	// Rules are labelled horizontal lines: the deadline on a latency
	// chart. An automatic y axis reaches the highest of them.
	Rules []chartTick
	// PlotH is the plot area's height; chartPlotH when zero.
	PlotH float64
}

// chartSeries is one line. A NaN y leaves a gap (no data that second).
type chartSeries struct {
	Name   string
	Colour string
	// Dash is an SVG stroke-dasharray; "" draws a solid line.
	Dash string
	// Thin draws a light reference line (offered load) rather than a
	// measured series.
	Thin   bool
	Points []chartPoint
}

type chartPoint struct{ X, Y float64 }

type chartBand struct {
	From, To float64
	Label    string
}

type chartTick struct {
	At    float64
	Label string
}

// chartPalette is Okabe and Ito's colour-blind-safe set, less its yellow, which
// vanishes on white on a projector. Each series also gets its own dash
// pattern, so lines stay apart in greyscale too.
var (
	chartPalette = []string{"#D55E00", "#0072B2", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"}
	chartDashes  = []string{"", "14 7", "4 6", "18 6 4 6"}
)

func seriesStyle(i int) (colour, dash string) {
	return chartPalette[i%len(chartPalette)], chartDashes[i%len(chartDashes)]
}

// Geometry, in SVG user units; the SVG scales to the page's width, so the
// fonts are sized for a 1200-unit-wide chart seen from the back of a room.
const (
	chartW        = 1200.0
	chartPlotH    = 380.0
	chartFont     = 22.0
	chartCharW    = 0.6 * chartFont // a sans-serif character, roughly
	chartRightPad = 40.0
	chartBottom   = 86.0
	legendRowH    = 36.0
	legendSwatch  = 48.0
)

// svg draws the chart. Every string from the results passes through
// svgText, so the result is safe to place in the page as it is.
func (c lineChart) svg() template.HTML {
	xmax := c.XMax
	ymin, ymax := c.YMin, c.YMax
	auto := ymin == 0 && ymax == 0
	for _, s := range c.Series {
		for _, p := range s.Points {
			if isFinite(p.X) {
				xmax = max(xmax, p.X)
			}
			if auto && isFinite(p.Y) {
				ymax = max(ymax, p.Y)
			}
		}
	}
	for _, b := range c.Shade {
		if isFinite(b.To) {
			xmax = max(xmax, b.To)
		}
	}
	for _, r := range c.Rules {
		if auto && isFinite(r.At) {
			ymax = max(ymax, r.At)
		}
	}
	plotH := c.PlotH
	if plotH <= 0 {
		plotH = chartPlotH
	}
	if !(xmax > 0) {
		xmax = 1
	}
	yticks := c.YTicks
	if auto {
		// A little headroom, so a line at the peak does not run along
		// the frame.
		var step float64
		ymax, step = niceMax(ymax*1.04, 5)
		yticks = numericTicks(0, ymax, step)
	}
	if !(ymax > ymin) {
		ymax = ymin + 1
	}
	xEnd, xStep := niceMax(xmax, 10)

	// The left margin fits the widest y tick label and the rotated axis
	// label; the top margin fits the legend's rows.
	widest := 0
	for _, t := range yticks {
		widest = max(widest, len([]rune(t.Label)))
	}
	left := 2*chartFont + float64(widest)*chartCharW + 20
	legend := c.legendRows(chartW - left - chartRightPad)
	top := 24 + float64(len(legend))*legendRowH + 16
	plotW := chartW - left - chartRightPad
	x := func(v float64) float64 { return left + v/xEnd*plotW }
	labelRow, labelRows := bandLabelRows(c.Shade, x, xEnd)
	top += float64(labelRows) * bandLabelRowH // a strip above the plot for the bands' labels
	height := top + plotH + chartBottom
	y := func(v float64) float64 { return top + (1-(v-ymin)/(ymax-ymin))*plotH }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %s %s" width="100%%" role="img" font-family="system-ui, sans-serif" font-size="%s">`,
		svgNum(chartW), svgNum(height), svgNum(chartFont))
	fmt.Fprintf(&b, `<title>%s</title>`, svgText(c.Title))

	// Fault windows first, under everything else.
	for i, band := range c.Shade {
		from, to := max(band.From, 0), min(band.To, xEnd)
		if !(to > from) {
			continue
		}
		fmt.Fprintf(&b, `<rect class="fault" x="%s" y="%s" width="%s" height="%s" fill="#000000" fill-opacity="0.10"/>`,
			svgNum(x(from)), svgNum(top), svgNum(x(to)-x(from)), svgNum(plotH))
		fmt.Fprintf(&b, `<text class="fault-label" x="%s" y="%s" fill="#333333" font-size="%s" font-style="italic">%s</text>`,
			svgNum(x(from)+4), svgNum(top-8-float64(labelRow[i])*bandLabelRowH), svgNum(bandLabelFont), svgText(band.Label))
	}

	// Grid and y ticks.
	for _, t := range yticks {
		if t.At < ymin || t.At > ymax {
			continue
		}
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#cccccc" stroke-width="1"/>`,
			svgNum(left), svgNum(y(t.At)), svgNum(left+plotW), svgNum(y(t.At)))
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>`,
			svgNum(left-10), svgNum(y(t.At)), svgText(t.Label))
	}
	// Reference lines, labelled at their right end.
	for _, r := range c.Rules {
		if !isFinite(r.At) || r.At < ymin || r.At > ymax {
			continue
		}
		fmt.Fprintf(&b, `<line class="rule" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#000000" stroke-width="3" stroke-dasharray="10 6"/>`,
			svgNum(left), svgNum(y(r.At)), svgNum(left+plotW), svgNum(y(r.At)))
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end" font-weight="bold" stroke="#ffffff" stroke-width="6" paint-order="stroke">%s</text>`,
			svgNum(left+plotW-6), svgNum(y(r.At)-8), svgText(r.Label))
	}
	// X ticks.
	for _, t := range numericTicks(0, xEnd, xStep) {
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333333" stroke-width="2"/>`,
			svgNum(x(t.At)), svgNum(top+plotH), svgNum(x(t.At)), svgNum(top+plotH+8))
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`,
			svgNum(x(t.At)), svgNum(top+plotH+8+chartFont), svgText(t.Label))
	}
	// Axes.
	fmt.Fprintf(&b, `<path d="M%s %sV%sH%s" fill="none" stroke="#333333" stroke-width="2"/>`,
		svgNum(left), svgNum(top), svgNum(top+plotH), svgNum(left+plotW))
	fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`,
		svgNum(left+plotW/2), svgNum(height-14), svgText(c.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(%s %s) rotate(-90)" text-anchor="middle">%s</text>`,
		svgNum(chartFont+4), svgNum(top+plotH/2), svgText(c.YLabel))

	// Series, reference lines under measured ones.
	drawn := false
	for _, thin := range []bool{true, false} {
		for _, s := range c.Series {
			if s.Thin != thin {
				continue
			}
			for _, seg := range segments(s.Points) {
				drawn = true
				if len(seg) == 1 {
					fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="5" fill="%s"/>`, svgNum(x(seg[0].X)), svgNum(y(seg[0].Y)), s.Colour)
					continue
				}
				pts := make([]string, len(seg))
				for i, p := range seg {
					pts[i] = svgNum(x(p.X)) + "," + svgNum(y(p.Y))
				}
				fmt.Fprintf(&b, `<polyline points="%s" fill="none" %s/>`, strings.Join(pts, " "), stroke(s))
			}
		}
	}
	if !drawn {
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle" fill="#555555">no data</text>`,
			svgNum(left+plotW/2), svgNum(top+plotH/2))
	}

	// Legend.
	for row, items := range legend {
		lx := left
		ly := 24 + float64(row)*legendRowH + legendRowH/2
		for _, i := range items {
			s := c.Series[i]
			fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" %s/>`,
				svgNum(lx), svgNum(ly), svgNum(lx+legendSwatch), svgNum(ly), stroke(s))
			fmt.Fprintf(&b, `<text x="%s" y="%s" dominant-baseline="middle">%s</text>`,
				svgNum(lx+legendSwatch+8), svgNum(ly), svgText(s.Name))
			lx += legendItemW(s.Name)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // every outside string went through svgText
}

// legendRows lays the legend's items (indexes into Series) into rows no
// wider than width.
func (c lineChart) legendRows(width float64) [][]int {
	var rows [][]int
	used := 0.0
	for i, s := range c.Series {
		w := legendItemW(s.Name)
		if len(rows) == 0 || used > 0 && used+w > width {
			rows = append(rows, nil)
			used = 0
		}
		rows[len(rows)-1] = append(rows[len(rows)-1], i)
		used += w
	}
	return rows
}

func legendItemW(name string) float64 {
	return legendSwatch + 8 + float64(len([]rune(name)))*chartCharW + 32
}

func stroke(s chartSeries) string {
	width := "4"
	if s.Thin {
		width = "2"
	}
	out := `stroke="` + s.Colour + `" stroke-width="` + width + `" stroke-linejoin="round"`
	if s.Dash != "" {
		out += ` stroke-dasharray="` + s.Dash + `"`
	}
	return out
}

// segments splits points at NaN or infinite values.
func segments(pts []chartPoint) [][]chartPoint {
	var out [][]chartPoint
	var cur []chartPoint
	for _, p := range pts {
		if !isFinite(p.X) || !isFinite(p.Y) {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, p)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// niceMax rounds v up to a multiple of a round step (1, 2 or 5 times a
// power of ten) that cuts [0, v] into about n parts.
func niceMax(v float64, n int) (top, step float64) {
	if !(v > 0) || !isFinite(v) {
		return 1, 1.0 / float64(n)
	}
	raw := v / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step = 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	return math.Ceil(v/step-1e-9) * step, step
}

func numericTicks(from, to, step float64) []chartTick {
	if !(step > 0) {
		return nil
	}
	decimals := 0
	if step < 1 {
		decimals = int(math.Ceil(-math.Log10(step) - 1e-9))
	}
	var out []chartTick
	for i := 0; ; i++ {
		v := from + float64(i)*step
		if v > to+step/1e6 {
			break
		}
		out = append(out, chartTick{At: v, Label: strconv.FormatFloat(v, 'f', decimals, 64)})
	}
	return out
}

// svgNum prints a coordinate: two decimals at most, so output is stable and
// small.
func svgNum(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

func svgText(s string) string { return template.HTMLEscapeString(s) }

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// A fault band's label is written above the plot, from the band's left
// edge, in a row of its own height.
const (
	bandLabelFont = chartFont * 0.9
	bandLabelRowH = chartFont + 8
)

// bandLabelRows gives each band's label a row above the plot, so that no
// two labels overlap: a label takes the lowest row whose last label ends
// before it begins. Labels run left to right along the x axis, so one
// whose band starts just after another's, as the phases of one fault do,
// goes a row up. It returns each band's row (0 is the one nearest the
// plot) and how many rows there are.
func bandLabelRows(bands []chartBand, x func(float64) float64, xEnd float64) (row []int, rows int) {
	row = make([]int, len(bands))
	var ends []float64 // each row's rightmost label end, in SVG units
	for i, band := range bands {
		from, to := max(band.From, 0), min(band.To, xEnd)
		if !(to > from) {
			continue
		}
		start := x(from) + 4
		end := start + float64(len([]rune(band.Label)))*bandLabelFont*0.6 + 12
		r := 0
		for r < len(ends) && ends[r] > start {
			r++
		}
		if r == len(ends) {
			ends = append(ends, 0)
		}
		row[i], ends[r] = r, end
	}
	return row, len(ends)
}
