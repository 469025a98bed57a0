// Package svgcheck reads back the console's SVG charts and checks that
// what is drawn is what the chart says it draws: each line's points are
// its values at its times, placed on the plot by the chart's scale, and
// each bar's width is its value on the chart's scale. Tests use it on
// charts rendered in Go and on charts read out of a browser's page.
package svgcheck

import (
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Series is one checked line: its name and the values it draws.
type Series struct {
	Name   string
	Values []float64
	Times  []int64 // ms since the epoch
}

// Bar is one checked bar.
type Bar struct {
	Label string
	Value float64
	Width float64
}

type node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []node     `xml:",any"`
}

func (n node) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n node) walk(f func(node)) {
	f(n)
	for _, c := range n.Nodes {
		c.walk(f)
	}
}

func parse(svg string) (node, error) {
	var root node
	if err := xml.Unmarshal([]byte(svg), &root); err != nil {
		return node{}, fmt.Errorf("svgcheck: not SVG: %w", err)
	}
	if root.XMLName.Local != "svg" {
		return node{}, fmt.Errorf("svgcheck: root is <%s>, not <svg>", root.XMLName.Local)
	}
	return root, nil
}

func floats(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Fields(s) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, fmt.Errorf("svgcheck: %q is not a number", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// tolerance is how far a coordinate may be from where its value puts it
// (the charts print three decimals).
const tolerance = 0.01

// LineChart checks every line of a line chart and returns them.
func LineChart(svg string) ([]Series, error) {
	root, err := parse(svg)
	if err != nil {
		return nil, err
	}
	plot, err := floats(root.attr("data-plot"))
	if err != nil || len(plot) != 4 {
		return nil, fmt.Errorf("svgcheck: data-plot %q is not x y width height", root.attr("data-plot"))
	}
	scale, err := floats(root.attr("data-ymax") + " " + root.attr("data-t0") + " " + root.attr("data-span"))
	if err != nil || len(scale) != 3 || scale[0] <= 0 || scale[2] <= 0 {
		return nil, fmt.Errorf("svgcheck: bad scale (data-ymax, data-t0, data-span)")
	}
	ymax, t0, span := scale[0], scale[1], scale[2]
	var out []Series
	var ferr error
	root.walk(func(n node) {
		if ferr != nil || n.XMLName.Local != "path" || !strings.Contains(n.attr("class"), "series") {
			return
		}
		s := Series{Name: n.attr("data-series")}
		vals, err := floats(n.attr("data-values"))
		if err != nil {
			ferr = err
			return
		}
		times, err := floats(n.attr("data-times"))
		if err != nil {
			ferr = err
			return
		}
		d := strings.NewReplacer("M", " ", "L", " ").Replace(n.attr("d"))
		coords, err := floats(d)
		if err != nil {
			ferr = err
			return
		}
		if len(vals) != len(times) || len(coords) != 2*len(vals) {
			ferr = fmt.Errorf("svgcheck: line %q draws %d points for %d values at %d times", s.Name, len(coords)/2, len(vals), len(times))
			return
		}
		for i, v := range vals {
			wantX := plot[0] + plot[2]*(times[i]-t0)/span
			wantY := plot[1] + plot[3]*(1-v/ymax)
			if math.Abs(coords[2*i]-wantX) > tolerance || math.Abs(coords[2*i+1]-wantY) > tolerance {
				ferr = fmt.Errorf("svgcheck: line %q point %d is at (%g, %g); value %g at %d belongs at (%g, %g)", s.Name, i, coords[2*i], coords[2*i+1], v, int64(times[i]), wantX, wantY)
				return
			}
			if v < 0 || v > ymax+tolerance {
				ferr = fmt.Errorf("svgcheck: line %q value %g is off the axis (0 to %g)", s.Name, v, ymax)
				return
			}
			s.Times = append(s.Times, int64(times[i]))
		}
		s.Values = vals
		out = append(out, s)
	})
	return out, ferr
}

// BarChart checks every bar of a bar chart and returns them.
func BarChart(svg string) ([]Bar, error) {
	root, err := parse(svg)
	if err != nil {
		return nil, err
	}
	plot, err := floats(root.attr("data-plot"))
	if err != nil || len(plot) != 4 {
		return nil, fmt.Errorf("svgcheck: data-plot %q is not x y width height", root.attr("data-plot"))
	}
	maxV, err := strconv.ParseFloat(root.attr("data-max"), 64)
	if err != nil {
		return nil, fmt.Errorf("svgcheck: data-max %q", root.attr("data-max"))
	}
	var out []Bar
	var ferr error
	root.walk(func(n node) {
		if ferr != nil || n.XMLName.Local != "rect" || n.attr("class") != "bar" {
			return
		}
		v, err1 := strconv.ParseFloat(n.attr("data-value"), 64)
		w, err2 := strconv.ParseFloat(n.attr("width"), 64)
		x, err3 := strconv.ParseFloat(n.attr("x"), 64)
		if err1 != nil || err2 != nil || err3 != nil {
			ferr = fmt.Errorf("svgcheck: bar %q has bad numbers", n.attr("data-label"))
			return
		}
		want := 0.0
		if maxV > 0 && v > 0 {
			want = plot[2] * v / maxV
		}
		if math.Abs(w-want) > tolerance || math.Abs(x-plot[0]) > tolerance {
			ferr = fmt.Errorf("svgcheck: bar %q of %g is %g wide at x=%g; on a scale to %g it is %g wide at x=%g", n.attr("data-label"), v, w, x, maxV, want, plot[0])
			return
		}
		out = append(out, Bar{Label: n.attr("data-label"), Value: v, Width: w})
	})
	return out, ferr
}
