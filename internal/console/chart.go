package console

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"
)

// The charts are SVG drawn here, not in the browser: the geometry is a
// pure function of the numbers, tested as such, and a page works
// without scripts. Every chart tells its numbers twice, as geometry and
// as text (a legend with the last value, a value beside each bar), and
// tells series apart by dash pattern as well as colour, so it reads in
// grey. The data-* attributes carry the numbers drawn so that a test can
// check the geometry against them.

// Line is one series of a line chart.
type Line struct {
	Name   string
	Points []Point
}

// chartPalette is Okabe–Ito (readable by most colour-blind readers);
// chartDashes tell series apart without colour.
var (
	chartPalette = []string{"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000"}
	chartDashes  = []string{"", "6 3", "2 2", "8 3 2 3", "1 4", "10 4", "4 2 1 2"}
)

// Line chart geometry, in SVG user units.
const (
	lcWidth, lcHeight = 700, 220
	lcLeft, lcRight   = 64, 200 // the right margin holds the legend
	lcTop, lcBottom   = 24, 28
)

// lineChart draws lines over the span ending at now, y from 0 to a round
// number above the largest value. unit labels the y axis ("records/s").
func lineChart(title, unit string, lines []Line, now time.Time, span time.Duration, format func(float64) string) template.HTML {
	plotW := float64(lcWidth - lcLeft - lcRight)
	plotH := float64(lcHeight - lcTop - lcBottom)
	t0 := now.Add(-span)
	maxV := 0.0
	for _, l := range lines {
		for _, p := range l.Points {
			if !p.At.Before(t0) && !math.IsNaN(p.V) && !math.IsInf(p.V, 0) {
				maxV = max(maxV, p.V)
			}
		}
	}
	top := niceCeil(max(maxV, 1))
	x := func(t time.Time) float64 { return lcLeft + plotW*float64(t.Sub(t0))/float64(span) }
	y := func(v float64) float64 { return lcTop + plotH*(1-v/top) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart line-chart" role="img" viewBox="0 0 %d %d" width="%d" height="%d" data-ymax="%s" data-t0="%d" data-span="%d" data-plot="%d %d %s %s" aria-label="%s">`,
		lcWidth, lcHeight, lcWidth, lcHeight, num(top), t0.UnixMilli(), span.Milliseconds(), lcLeft, lcTop, num(plotW), num(plotH), attr(title))
	fmt.Fprintf(&b, `<title>%s</title>`, html.EscapeString(title))
	fmt.Fprintf(&b, `<text x="%d" y="15" class="chart-title">%s</text>`, lcLeft, html.EscapeString(title))
	step := niceStep(top)
	for v := 0.0; v <= top+step/2; v += step {
		fmt.Fprintf(&b, `<line class="grid" x1="%d" y1="%s" x2="%s" y2="%s"/>`, lcLeft, num(y(v)), num(lcLeft+plotW), num(y(v)))
		fmt.Fprintf(&b, `<text x="%d" y="%s" text-anchor="end" class="tick">%s</text>`, lcLeft-4, num(y(v)+4), html.EscapeString(format(v)))
	}
	fmt.Fprintf(&b, `<rect class="frame" x="%d" y="%d" width="%s" height="%s"/>`, lcLeft, lcTop, num(plotW), num(plotH))
	fmt.Fprintf(&b, `<text x="%d" y="%d" class="tick">-%s</text><text x="%s" y="%d" text-anchor="end" class="tick">now</text>`,
		lcLeft, lcHeight-8, span, num(lcLeft+plotW), lcHeight-8)
	fmt.Fprintf(&b, `<text x="12" y="%s" class="tick" transform="rotate(-90 12 %s)" text-anchor="middle">%s</text>`, num(lcTop+plotH/2), num(lcTop+plotH/2), html.EscapeString(unit))
	if len(lines) == 0 {
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle" class="empty">no data yet</text>`, num(lcLeft+plotW/2), num(lcTop+plotH/2))
	}
	for i, l := range lines {
		color, dash := chartPalette[i%len(chartPalette)], chartDashes[i%len(chartDashes)]
		var d, vals, times strings.Builder
		last := math.NaN()
		for _, p := range l.Points {
			if p.At.Before(t0) || p.At.After(now) || math.IsNaN(p.V) || math.IsInf(p.V, 0) {
				continue
			}
			if d.Len() == 0 {
				d.WriteString("M")
			} else {
				d.WriteString(" L")
				vals.WriteByte(' ')
				times.WriteByte(' ')
			}
			d.WriteString(num(x(p.At)) + " " + num(y(p.V)))
			vals.WriteString(num(p.V))
			times.WriteString(strconv.FormatInt(p.At.UnixMilli(), 10))
			last = p.V
		}
		fmt.Fprintf(&b, `<path class="series" d="%s" stroke="%s" stroke-dasharray="%s" data-series="%s" data-values="%s" data-times="%s"><title>%s</title></path>`,
			d.String(), color, dash, attr(l.Name), vals.String(), times.String(), html.EscapeString(l.Name))
		ly := lcTop + 12 + 16*i
		if ly > lcHeight-lcBottom {
			continue // more series than the legend holds; each keeps its title
		}
		lastText := "–"
		if !math.IsNaN(last) {
			lastText = format(last)
		}
		lx := float64(lcWidth - lcRight + 8)
		fmt.Fprintf(&b, `<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="%s" stroke-dasharray="%s" class="legend-line"/>`, num(lx), ly-4, num(lx+22), ly-4, color, dash)
		fmt.Fprintf(&b, `<text x="%s" y="%d" class="legend">%s %s</text>`, num(lx+26), ly, html.EscapeString(l.Name), html.EscapeString(lastText))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// Bar is one bar of a bar chart.
type Bar struct {
	Label string
	Value float64
}

// Bar chart geometry: one row per bar.
const (
	bcWidth       = 640
	bcLabel       = 110 // the left column holds the labels
	bcValue       = 110 // the right column the values
	bcRow, bcTop  = 20, 24
	bcBarHeight   = 14
	bcBottomSpace = 6
)

// barChart draws horizontal bars, the largest spanning the plot: skew
// reads as the ragged right edge (bytes per broker, backlog per
// partition).
func barChart(title string, bars []Bar, format func(float64) string) template.HTML {
	plotW := float64(bcWidth - bcLabel - bcValue)
	h := bcTop + bcRow*max(len(bars), 1) + bcBottomSpace
	maxV := 0.0
	for _, br := range bars {
		maxV = max(maxV, br.Value)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart bar-chart" role="img" viewBox="0 0 %d %d" width="%d" height="%d" data-max="%s" data-plot="%d %d %s %d" aria-label="%s">`,
		bcWidth, h, bcWidth, h, num(maxV), bcLabel, bcTop, num(plotW), bcRow*len(bars), attr(title))
	fmt.Fprintf(&b, `<title>%s</title><text x="0" y="15" class="chart-title">%s</text>`, html.EscapeString(title), html.EscapeString(title))
	if len(bars) == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="empty">no data yet</text>`, bcLabel, bcTop+14)
	}
	for i, br := range bars {
		y := bcTop + bcRow*i
		w := 0.0
		if maxV > 0 && br.Value > 0 {
			w = plotW * br.Value / maxV
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" class="tick">%s</text>`, bcLabel-6, y+11, html.EscapeString(br.Label))
		fmt.Fprintf(&b, `<rect class="bar" x="%d" y="%d" width="%s" height="%d" data-label="%s" data-value="%s"><title>%s: %s</title></rect>`,
			bcLabel, y, num(w), bcBarHeight, attr(br.Label), num(br.Value), html.EscapeString(br.Label), html.EscapeString(format(br.Value)))
		fmt.Fprintf(&b, `<text x="%s" y="%d" class="value">%s</text>`, num(float64(bcLabel)+w+6), y+11, html.EscapeString(format(br.Value)))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// num prints a coordinate or value with at most 3 decimals and no
// exponent, so a test can parse it back.
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "0"
	}
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

func attr(s string) string { return html.EscapeString(s) }

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// niceStep picks a grid step giving 2 to 5 lines up to top.
func niceStep(top float64) float64 {
	step := niceCeil(top / 4)
	if top/step < 2 {
		step /= 2
	}
	return step
}

// humanBytes prints 1536 as "1.5 KiB".
func humanBytes(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	i := 0
	for math.Abs(v) >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64) + " B"
	}
	return strconv.FormatFloat(v, 'f', precision(v), 64) + " " + units[i]
}

// humanCount prints 1500 as "1.5K".
func humanCount(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e9:
		return strconv.FormatFloat(v/1e9, 'f', precision(v/1e9), 64) + "G"
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', precision(v/1e6), 64) + "M"
	case a >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', precision(v/1e3), 64) + "K"
	case a == math.Trunc(a):
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', precision(v), 64)
}

func precision(v float64) int {
	switch a := math.Abs(v); {
	case a >= 100:
		return 0
	case a >= 10:
		return 1
	}
	return 2
}

func rateBytes(v float64) string { return humanBytes(v) + "/s" }
func rateCount(v float64) string { return humanCount(v) + "/s" }
