package scenario

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"weir/scenario/spec"
)

// yamlText is the resolved file as YAML, for the report.
func yamlText(f *spec.File) (string, error) {
	b, err := yaml.Marshal(f)
	return string(b), err
}

// ReportStem is the file name (without extension) of a run's reports.
func ReportStem(res *RunResult) string {
	name := res.Name
	if res.Variant != "" {
		name += "-" + res.Variant
	}
	if res.Quick {
		name += "-quick"
	}
	return safeName(name)
}

// writeRunReports writes <stem>.json and <stem>.html into dir ("" writes
// nothing).
func writeRunReports(dir string, res *RunResult) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	stem := filepath.Join(dir, ReportStem(res))
	// Compact: indented, a tick's per-partition figures took a line
	// each (52 MB for 160 s at 10,000 partitions, 13 MB without).
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	if err := os.WriteFile(stem+".json", append(b, '\n'), 0o644); err != nil {
		return err
	}
	return writeFile(stem+".html", func(w io.Writer) error { return WriteRunHTML(w, res) })
}

// line is one series of a time chart: values at times (seconds).
type line struct {
	name   string
	times  []float64
	values []float64
}

// marker is a vertical line on a time chart.
type marker struct {
	t          float64
	kind, text string
}

// Chart geometry: the plot area inside the SVG.
const (
	chartW, chartH = 960, 300
	plotX, plotY   = 70.0, 30.0
	plotW, plotH   = 860.0, 220.0
	maxLegend      = 16
)

var markerColors = map[string]string{"phase": "#999999", "fault": "#d55e00", "leader": "#7b3294"}

var palette = []string{"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#f0e442", "#000000",
	"#7f3b08", "#2d004b", "#1b7837", "#c51b7d", "#4d4d4d", "#8c510a", "#01665e", "#762a83"}

// timeChart draws lines over time as an SVG with the data attributes
// internal/console/svgcheck reads back: data-plot (x y width height),
// data-ymax, data-t0 and data-span (milliseconds), and per line a path
// of class "series" with its data-values and data-times (ms), so a test
// can check each point sits where its value belongs.
func timeChart(title, unit string, lines []line, markers []marker, span float64) string {
	ymax := 0.0
	for _, l := range lines {
		for _, v := range l.values {
			ymax = max(ymax, v)
		}
	}
	ymax = niceCeil(max(ymax, 1))
	span = max(span, 1)
	spanMs := math.Round(span * 1000)
	x := func(t float64) float64 { return plotX + plotW*(math.Round(t*1000))/spanMs }
	y := func(v float64) float64 { return plotY + plotH*(1-v/ymax) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11" data-title="%s" data-plot="%g %g %g %g" data-ymax="%g" data-t0="0" data-span="%g">`,
		chartW, chartH, chartW, chartH, html.EscapeString(title), plotX, plotY, plotW, plotH, ymax, spanMs)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="white"/>`, chartW, chartH)
	fmt.Fprintf(&b, `<text x="%g" y="18" font-size="13" font-weight="bold">%s</text>`, plotX, html.EscapeString(title))
	step := niceStep(ymax)
	for v := 0.0; v <= ymax*1.0001; v += step {
		fmt.Fprintf(&b, `<line x1="%g" y1="%.3f" x2="%g" y2="%.3f" stroke="#e5e5e5"/><text x="%g" y="%.3f" text-anchor="end">%s</text>`,
			plotX, y(v), plotX+plotW, y(v), plotX-5, y(v)+4, humanCount(v))
	}
	tstep := niceStep(span)
	for t := 0.0; t <= span*1.0001; t += tstep {
		fmt.Fprintf(&b, `<text x="%.3f" y="%g" text-anchor="middle">%s</text>`, x(t), plotY+plotH+15, secondsLabel(t))
	}
	fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#333"/>`, plotX, plotY, plotW, plotH)
	fmt.Fprintf(&b, `<text x="14" y="%g" text-anchor="middle" transform="rotate(-90 14 %g)">%s</text>`, plotY+plotH/2, plotY+plotH/2, html.EscapeString(unit))
	for _, m := range markers {
		c := markerColors[m.kind]
		fmt.Fprintf(&b, `<line class="marker" data-kind="%s" data-t="%.0f" x1="%.3f" y1="%g" x2="%.3f" y2="%g" stroke="%s" stroke-dasharray="4 3"><title>%s</title></line>`,
			m.kind, m.t*1000, x(m.t), plotY, x(m.t), plotY+plotH, c, html.EscapeString(fmt.Sprintf("%.1fs %s", m.t, m.text)))
	}
	for i, l := range lines {
		if len(l.values) == 0 {
			continue
		}
		var d, vals, times strings.Builder
		for j, v := range l.values {
			if j == 0 {
				d.WriteString("M")
			} else {
				d.WriteString(" L")
				vals.WriteByte(' ')
				times.WriteByte(' ')
			}
			fmt.Fprintf(&d, "%.3f %.3f", x(l.times[j]), y(v))
			fmt.Fprintf(&vals, "%g", v)
			fmt.Fprintf(&times, "%.0f", math.Round(l.times[j]*1000))
		}
		color := palette[i%len(palette)]
		fmt.Fprintf(&b, `<path class="series" data-series="%s" data-values="%s" data-times="%s" d="%s" fill="none" stroke="%s" stroke-width="1.5"><title>%s</title></path>`,
			html.EscapeString(l.name), vals.String(), times.String(), d.String(), color, html.EscapeString(l.name))
		if i < maxLegend && len(lines) > 1 {
			lx, ly := plotX+plotW-150, plotY+12+float64(i)*13
			fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="3"/><text x="%g" y="%g">%s</text>`,
				lx, ly-4, lx+16, ly-4, color, lx+20, ly, html.EscapeString(l.name))
		}
	}
	b.WriteString("</svg>")
	return b.String()
}

// runCharts builds the report's charts from the ticks.
func runCharts(res *RunResult) []template.HTML {
	var out []template.HTML
	if len(res.Ticks) == 0 {
		return out
	}
	span := res.Ticks[len(res.Ticks)-1].T
	var ms []marker
	for _, e := range res.Events {
		ms = append(ms, marker{t: e.T, kind: e.Kind, text: e.Text})
	}
	times := make([]float64, len(res.Ticks))
	dts := make([]float64, len(res.Ticks))
	prev := 0.0
	for i, t := range res.Ticks {
		times[i], dts[i], prev = t.T, t.T-prev, t.T
	}
	rate := func(n int64, i int) float64 {
		if dts[i] <= 0 {
			return 0
		}
		return float64(n) / dts[i]
	}
	series := func(name string, f func(i int, t Tick) float64) line {
		l := line{name: name, times: times, values: make([]float64, len(res.Ticks))}
		for i, t := range res.Ticks {
			l.values[i] = max(f(i, t), 0)
		}
		return l
	}
	add := func(svg string) { out = append(out, template.HTML(svg)) } // built by timeChart, which escapes every text
	topics := slices.Sorted(maps.Keys(res.Ticks[0].Produced))
	add(timeChart("Records per second", "records/s", []line{
		series("produced (acknowledged)", func(i int, t Tick) float64 { return rate(sumMap(t.Produced), i) }),
		series("consumed", func(i int, t Tick) float64 { return rate(sumMap(t.Consumed), i) }),
	}, ms, span))
	add(timeChart("Backlog (acknowledged, not yet consumed)", "records", []line{
		series("backlog", func(_ int, t Tick) float64 { return float64(sumMap(t.Backlog)) }),
	}, ms, span))
	for _, topic := range topics {
		n := len(res.Ticks[0].Produced[topic])
		per := func(title string, pick func(Tick) []int64, asRate bool) {
			shown, rest := chartedPartitions(res.Ticks, pick, n)
			value := func(i int, v int64) float64 {
				if asRate {
					return rate(v, i)
				}
				return float64(v)
			}
			var ls []line
			for _, p := range shown {
				ls = append(ls, series(fmt.Sprintf("%s-%d", topic, p), func(i int, t Tick) float64 {
					v := pick(t)
					if p >= len(v) {
						return 0
					}
					return value(i, v[p])
				}))
			}
			if len(rest) > 0 {
				ls = append(ls, series(fmt.Sprintf("the other %d partitions", len(rest)), func(i int, t Tick) float64 {
					v := pick(t)
					var sum int64
					for _, p := range rest {
						if p < len(v) {
							sum += v[p]
						}
					}
					return value(i, sum)
				}))
			}
			unit := "records"
			if asRate {
				unit = "records/s"
			}
			add(timeChart(title, unit, ls, ms, span))
		}
		per("Produced per partition, "+topic, func(t Tick) []int64 { return t.Produced[topic] }, true)
		per("Consumed per partition, "+topic, func(t Tick) []int64 { return t.Consumed[topic] }, true)
		per("Backlog per partition, "+topic, func(t Tick) []int64 { return t.Backlog[topic] }, false)
	}
	add(timeChart("End-to-end latency (record timestamp to consumer)", "ms", []line{
		series("p50", func(_ int, t Tick) float64 { return t.E2EMs.P50 }),
		series("p99", func(_ int, t Tick) float64 { return t.E2EMs.P99 }),
		series("max", func(_ int, t Tick) float64 { return t.E2EMs.Max }),
	}, ms, span))
	add(timeChart("Produce latency (send to acknowledgement)", "ms", []line{
		series("p50", func(_ int, t Tick) float64 { return t.ProduceMs.P50 }),
		series("p99", func(_ int, t Tick) float64 { return t.ProduceMs.P99 }),
		series("max", func(_ int, t Tick) float64 { return t.ProduceMs.Max }),
	}, ms, span))
	var brokers []int32
	for _, t := range res.Ticks {
		for n := range t.BrokerBytes {
			if !slices.Contains(brokers, n) {
				brokers = append(brokers, n)
			}
		}
	}
	slices.Sort(brokers)
	var bl []line
	for _, n := range brokers {
		bl = append(bl, series(fmt.Sprintf("broker %d", n), func(i int, t Tick) float64 { return rate(t.BrokerBytes[n], i) / (1 << 20) }))
	}
	if len(bl) > 0 {
		add(timeChart("Bytes produced to each broker", "MB/s", bl, ms, span))
	}
	return out
}

// chartedPartitions picks the partitions a per-partition chart draws
// one line each: all of them up to maxLegend, else the maxLegend-1 with
// the largest sums over the run (in partition order), the rest summed
// into one line. A run over 100,000 partitions otherwise wrote a
// report of a gigabyte that no browser opens.
func chartedPartitions(ticks []Tick, pick func(Tick) []int64, n int) (shown, rest []int) {
	if n <= maxLegend {
		for p := range n {
			shown = append(shown, p)
		}
		return shown, nil
	}
	totals := make([]int64, n)
	for _, t := range ticks {
		for p, v := range pick(t) {
			if p < n {
				totals[p] += v
			}
		}
	}
	order := make([]int, n)
	for p := range order {
		order[p] = p
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(totals[b], totals[a]) })
	shown = slices.Clone(order[:maxLegend-1])
	slices.Sort(shown)
	rest = slices.Clone(order[maxLegend-1:])
	slices.Sort(rest)
	return shown, rest
}

func sumMap(m map[string][]int64) int64 {
	var n int64
	for _, v := range m {
		n += sum(v)
	}
	return n
}

var runPage = template.Must(template.New("run").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; max-width: 1000px; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 13px; }
td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f3f3f3; } td.l, th.l { text-align: left; }
pre { background: #f7f7f7; padding: 0.6em; font-size: 12px; overflow-x: auto; }
svg.chart { display: block; margin: 0.5em 0 1.5em; }
</style></head><body>
<h1>{{.Title}}</h1>
{{if .R.Seed}}<p>Reproduces: {{.R.Seed}}</p>{{end}}
{{if .R.Description}}<p>{{.R.Description}}</p>{{end}}
<p>Started {{.R.Started.Format "2006-01-02 15:04:05 MST"}} against {{.R.Bootstrap}}{{if .R.Quick}} (quick mode){{end}}.</p>
{{range .R.Errors}}<p style="color:#b00"><b>error:</b> {{.}}</p>{{end}}
<h2>Produce</h2>
<table><tr><th>sent</th><th>acknowledged</th><th>failed</th><th>records/s</th><th>MB/s</th><th>avg ms</th><th>p50</th><th>p95</th><th>p99</th><th>p99.9</th><th>max</th></tr>
<tr><td>{{.R.Producers.Sent}}</td><td>{{.R.Producers.Acked}}</td><td>{{.R.Producers.Errors}}</td><td>{{printf "%.1f" .R.Producers.RecordsSec}}</td><td>{{printf "%.2f" .R.Producers.MBSec}}</td>
{{with .R.Producers.LatencyMs}}<td>{{printf "%.2f" .Mean}}</td><td>{{printf "%.0f" .P50}}</td><td>{{printf "%.0f" .P95}}</td><td>{{printf "%.0f" .P99}}</td><td>{{printf "%.0f" .P999}}</td><td>{{printf "%.0f" .Max}}</td>{{end}}</tr></table>
{{if .Brokers}}<table><tr><th class="l">broker</th><th>bytes produced to it</th><th>share</th></tr>
{{range .Brokers}}<tr><td class="l">{{.ID}}</td><td>{{.Bytes}}</td><td>{{printf "%.1f%%" .Share}}</td></tr>{{end}}</table>{{end}}
<h2>Consume</h2>
<table><tr><th>records consumed</th><th>e2e p50 ms</th><th>p99</th><th>p99.9</th><th>max</th></tr>
{{with .R.Consumers}}<tr><td>{{.Received}}</td><td>{{printf "%.0f" .E2EMs.P50}}</td><td>{{printf "%.0f" .E2EMs.P99}}</td><td>{{printf "%.0f" .E2EMs.P999}}</td><td>{{printf "%.0f" .E2EMs.Max}}</td></tr>{{end}}</table>
<h2>Phases</h2>
<table><tr><th class="l">phase</th><th class="l">kind</th><th>from s</th><th>to s</th><th>acked</th><th>consumed</th><th>produce p99 ms</th><th>e2e p99 ms</th><th>peak rec/s</th><th>lowest while behind</th><th>drained in s</th></tr>
{{range .R.Phases}}<tr><td class="l">{{.Name}}</td><td class="l">{{.Kind}}</td><td>{{printf "%.1f" .Start}}</td><td>{{printf "%.1f" .End}}</td><td>{{.Acked}}</td><td>{{.Received}}</td><td>{{printf "%.0f" .ProduceMs.P99}}</td><td>{{printf "%.0f" .E2EMs.P99}}</td>
<td>{{if eq .Kind "drain"}}{{printf "%.0f" .PeakRate}}{{end}}</td><td>{{if eq .Kind "drain"}}{{printf "%.0f" .MinWhileBehind}}{{end}}</td><td>{{if eq .Kind "drain"}}{{if .Drained}}{{printf "%.1f" .DrainSeconds}}{{else}}not drained{{end}}{{end}}</td></tr>{{end}}</table>
{{with .R.Explore}}<h2>Explore</h2><p>Highest rate with p99 end-to-end latency under {{printf "%.0f" .TargetP99Ms}} ms: <b>{{printf "%.0f" .Best}} records/s</b>.</p>
<table><tr><th>rate</th><th>p99 ms</th><th class="l">result</th></tr>{{range .Steps}}<tr><td>{{printf "%.0f" .Rate}}</td><td>{{printf "%.0f" .P99Ms}}</td><td class="l">{{if .Passed}}passed{{else}}missed{{end}}</td></tr>{{end}}</table>{{end}}
<h2>Over time</h2>
<p>Dashed lines: grey a phase starts, orange a fault, purple a leadership change (hover for details).</p>
{{range .Charts}}{{.}}
{{end}}
<h2>Events</h2>
<table><tr><th>s</th><th class="l">kind</th><th class="l">what</th></tr>
{{range .R.Events}}<tr><td>{{printf "%.1f" .T}}</td><td class="l">{{.Kind}}</td><td class="l">{{.Text}}</td></tr>{{end}}</table>
<h2>Topics</h2>
<table><tr><th class="l">topic</th><th>partitions</th><th class="l">replicas (partition 0 first)</th></tr>
{{range .R.Topics}}<tr><td class="l">{{.Name}}</td><td>{{.Partitions}}</td><td class="l">{{.Replicas}}</td></tr>{{end}}</table>
<h2>Scenario as run</h2>
<pre>{{.R.Spec}}</pre>
</body></html>
`))

// WriteRunHTML writes a run's self-contained report: tables, SVG charts,
// no scripts and nothing loaded from elsewhere.
func WriteRunHTML(w io.Writer, res *RunResult) error {
	type broker struct {
		ID    int32
		Bytes int64
		Share float64
	}
	var bs []broker
	for _, n := range slices.Sorted(maps.Keys(res.BrokerBytes)) {
		bs = append(bs, broker{n, res.BrokerBytes[n], 100 * res.BrokerShare[n]})
	}
	title := res.Name
	if res.Variant != "" {
		title += " / " + res.Variant
	}
	return runPage.Execute(w, map[string]any{"Title": title, "R": res, "Brokers": bs, "Charts": runCharts(res)})
}
