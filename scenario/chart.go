package scenario

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// ChartSeries is one line of a rate chart.
type ChartSeries struct {
	Name    string
	Samples []Sample
}

// ChartOptions shape a rate chart. Log plots the rate on a log10 axis, which
// is how a collapse from tens of thousands to hundreds of records per
// second stays readable.
type ChartOptions struct {
	Title         string
	Width, Height int // pixels; 0 means 900×360
	Log           bool
}

// chart margins in pixels: left holds the rate labels, bottom the time.
const (
	marginLeft   = 70
	marginRight  = 20
	marginTop    = 30
	marginBottom = 45
)

// seriesColors is a palette readable on white and by most colour-blind
// readers (Okabe–Ito).
var seriesColors = []string{"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9"}

// RateChart draws the records-per-second rate of each series over time as a
// standalone SVG element (no scripts, no external resources), one polyline
// per series, with a legend when there is more than one.
func RateChart(series []ChartSeries, opt ChartOptions) string {
	w, h := opt.Width, opt.Height
	if w <= 0 {
		w = 900
	}
	if h <= 0 {
		h = 360
	}
	plotW := float64(w - marginLeft - marginRight)
	plotH := float64(h - marginTop - marginBottom)

	var maxT, maxR float64
	minR := math.Inf(1) // the lowest rate above zero
	for _, s := range series {
		sr := Series{Samples: s.Samples}
		for i, r := range sr.Rates() {
			maxT = max(maxT, s.Samples[i].At.Seconds())
			maxR = max(maxR, r)
			if r > 0 {
				minR = min(minR, r)
			}
		}
	}
	maxT = niceCeil(max(maxT, 1))
	var yTicks []float64
	var y func(float64) float64
	if opt.Log {
		// From the decade below the lowest rate to the decade above the
		// highest: a collapse to hundreds of records per second shows
		// without wasting the bottom of the chart on rates nobody had.
		top := math.Pow(10, math.Ceil(math.Log10(max(maxR, 10))))
		bottom := 1.0
		if !math.IsInf(minR, 1) {
			bottom = max(1, math.Pow(10, math.Floor(math.Log10(minR))))
		}
		if bottom >= top {
			bottom = top / 10
		}
		for v := bottom; v <= top*1.001; v *= 10 {
			yTicks = append(yTicks, v)
		}
		lo, span := math.Log10(bottom), math.Log10(top)-math.Log10(bottom)
		y = func(r float64) float64 {
			r = max(r, bottom) // zero sits on the axis
			return float64(marginTop) + plotH*(1-(math.Log10(r)-lo)/span)
		}
	} else {
		top := niceCeil(max(maxR, 1))
		step := niceStep(top)
		for v := 0.0; v <= top+step/2; v += step {
			yTicks = append(yTicks, v)
		}
		y = func(r float64) float64 { return float64(marginTop) + plotH*(1-r/top) }
	}
	x := func(t float64) float64 { return float64(marginLeft) + plotW*t/maxT }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="white"/>`+"\n", w, h)
	if opt.Title != "" {
		fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14" font-weight="bold">%s</text>`+"\n", marginLeft, html.EscapeString(opt.Title))
	}
	for _, v := range yTicks {
		yy := y(v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`, marginLeft, yy, float64(marginLeft)+plotW, yy)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", marginLeft-6, yy+4, humanCount(v))
	}
	xStep := niceStep(maxT)
	for t := 0.0; t <= maxT+xStep/2; t += xStep {
		xx := x(t)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#eee"/>`, xx, marginTop, xx, float64(marginTop)+plotH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", xx, float64(marginTop)+plotH+16, secondsLabel(t))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%.1f" fill="none" stroke="#333"/>`+"\n", marginLeft, marginTop, plotW, plotH)
	axis := "records/s"
	if opt.Log {
		axis += " (log)"
	}
	fmt.Fprintf(&b, `<text x="14" y="%.1f" text-anchor="middle" transform="rotate(-90 14 %.1f)">%s</text>`+"\n", float64(marginTop)+plotH/2, float64(marginTop)+plotH/2, axis)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">time since the consumer started</text>`+"\n", float64(marginLeft)+plotW/2, h-6)

	for i, s := range series {
		color := seriesColors[i%len(seriesColors)]
		sr := Series{Samples: s.Samples}
		var pts []string
		for j, r := range sr.Rates() {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s.Samples[j].At.Seconds()), y(r)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"><title>%s</title></polyline>`+"\n", color, strings.Join(pts, " "), html.EscapeString(s.Name))
		if len(series) > 1 {
			ly := marginTop + 14 + 16*i
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="3"/>`, float64(marginLeft)+plotW-190, ly-4, float64(marginLeft)+plotW-170, ly-4, color)
			fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", float64(marginLeft)+plotW-165, ly, html.EscapeString(s.Name))
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// secondsLabel prints a time axis label: 90 as 90s, 600 as 10m.
func secondsLabel(t float64) string {
	if t >= 120 && math.Mod(t, 60) == 0 {
		return fmt.Sprintf("%gm", t/60)
	}
	return fmt.Sprintf("%gs", t)
}

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// niceStep picks a grid step giving 4 to 10 lines up to top.
func niceStep(top float64) float64 {
	step := niceCeil(top / 10)
	if top/step < 4 {
		step /= 2
	}
	return step
}

// humanCount prints 1500 as 1.5K and 2000000 as 2M.
func humanCount(v float64) string {
	switch {
	case v >= 1e6:
		return trimZeros(fmt.Sprintf("%.2f", v/1e6)) + "M"
	case v >= 1e3:
		return trimZeros(fmt.Sprintf("%.2f", v/1e3)) + "K"
	default:
		return trimZeros(fmt.Sprintf("%.2f", v))
	}
}

func trimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
