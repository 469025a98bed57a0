package scenario

import (
	"encoding/csv"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"time"
)

// WriteCSV writes one line per sample: the time since the consumer started
// in seconds, the records consumed in that interval and the cumulative
// count, under the header time_s,records,cumulative.
func WriteCSV(w io.Writer, samples []Sample) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"time_s", "records", "cumulative"}); err != nil {
		return err
	}
	for _, s := range samples {
		rec := []string{
			strconv.FormatFloat(s.At.Seconds(), 'f', 3, 64),
			strconv.FormatInt(s.Count, 10),
			strconv.FormatInt(s.Cumulative, 10),
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ReadCSV reads what WriteCSV wrote.
func ReadCSV(r io.Reader) ([]Sample, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 || strings.Join(rows[0], ",") != "time_s,records,cumulative" {
		return nil, fmt.Errorf("scenario: not a drain CSV (want the header time_s,records,cumulative)")
	}
	var s Series
	for i, row := range rows[1:] {
		t, err1 := strconv.ParseFloat(row[0], 64)
		cum, err2 := strconv.ParseInt(row[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("scenario: CSV line %d: %q", i+2, strings.Join(row, ","))
		}
		if err := s.Observe(time.Duration(t*float64(time.Second)), cum); err != nil {
			return nil, fmt.Errorf("scenario: CSV line %d: %w", i+2, err)
		}
	}
	return s.Samples, nil
}

// Report is everything the HTML page of one drain shows.
type Report struct {
	Title      string
	Params     [][2]string // name, value, in order
	Partitions []int64     // records loaded per partition
	Leaders    []int32     // each partition's leader, if known
	Summary    Summary
	Samples    []Sample
}

// WriteText prints the summary a terminal reader wants: peak, minimum after
// the peak, plateaus and drain time.
func (s Summary) WriteText(w io.Writer) {
	fmt.Fprintf(w, "consumed:       %d records\n", s.Total)
	fmt.Fprintf(w, "peak rate:      %.0f rec/s (sample ending at %s)\n", s.Peak, s.PeakAt.Round(time.Millisecond))
	fmt.Fprintf(w, "min after peak: %.0f rec/s\n", s.MinAfter)
	fmt.Fprintf(w, "drain time:     %s (first record at %s, last at %s)\n",
		s.Drain().Round(time.Millisecond), s.FirstRecord.Round(time.Millisecond), s.LastRecord.Round(time.Millisecond))
	if len(s.Plateaus) == 0 {
		fmt.Fprintf(w, "plateaus:       no run of %d samples or more within a factor %.1f\n", PlateauMinSamples, PlateauBand)
	}
	for _, p := range s.Plateaus {
		fmt.Fprintf(w, "plateau:        %.0f rec/s from %s to %s (%.1f s)\n", p.Median, p.From.Round(time.Millisecond), p.To.Round(time.Millisecond), p.Seconds())
	}
}

var reportPage = template.Must(template.New("report").Funcs(template.FuncMap{
	"rate": func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) },
	"dur":  func(d time.Duration) string { return d.Round(time.Millisecond).String() },
	"leader": func(i int, leaders []int32) string {
		if i >= len(leaders) || leaders[i] < 0 {
			return "?"
		}
		return strconv.Itoa(int(leaders[i]))
	},
	"pct": func(n int64, parts []int64) string {
		var t int64
		for _, p := range parts {
			t += p
		}
		if t == 0 {
			return "0"
		}
		return strconv.FormatFloat(100*float64(n)/float64(t), 'f', 2, 64)
	},
}).Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{{.R.Title}}</title>
<style>body{font-family:sans-serif;max-width:960px;margin:1em auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}th{background:#f4f4f4}td:first-child{text-align:left}</style>
</head><body>
<h1>{{.R.Title}}</h1>
<h2>Summary</h2>
<table>
<tr><td>records consumed</td><td>{{.R.Summary.Total}}</td></tr>
<tr><td>peak rate (rec/s)</td><td>{{rate .R.Summary.Peak}}</td></tr>
<tr><td>min rate after the peak (rec/s)</td><td>{{rate .R.Summary.MinAfter}}</td></tr>
<tr><td>drain time (first to last record)</td><td>{{dur .R.Summary.Drain}}</td></tr>
<tr><td>first record after</td><td>{{dur .R.Summary.FirstRecord}}</td></tr>
</table>
<h2>Rate plateaus</h2>
{{if .R.Summary.Plateaus}}<table><tr><th>from</th><th>to</th><th>median rec/s</th></tr>
{{range .R.Summary.Plateaus}}<tr><td>{{dur .From}}</td><td>{{dur .To}}</td><td>{{rate .Median}}</td></tr>
{{end}}</table>{{else}}<p>No run of {{.MinSamples}} samples or more stayed within a factor {{.Band}}.</p>{{end}}
<h2>Drain rate</h2>
{{.Linear}}
{{.Log}}
<h2>Parameters</h2>
<table>{{range .R.Params}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td></tr>
{{end}}</table>
<h2>Backlog per partition</h2>
<table><tr><th>partition</th><th>records</th><th>%</th><th>leader</th></tr>
{{range $i, $n := .R.Partitions}}<tr><td>{{$i}}</td><td>{{$n}}</td><td>{{pct $n $.R.Partitions}}</td><td>{{leader $i $.R.Leaders}}</td></tr>
{{end}}</table>
<p>The CSV next to this page holds the per-second samples (time_s, records, cumulative).</p>
</body></html>
`))

// WriteHTML writes a self-contained page: the summary, the rate over time
// on a linear and on a log axis (inline SVG), the parameters and the
// backlog per partition.
func WriteHTML(w io.Writer, r Report) error {
	series := []ChartSeries{{Name: r.Title, Samples: r.Samples}}
	return reportPage.Execute(w, map[string]any{
		"R":          r,
		"MinSamples": PlateauMinSamples,
		"Band":       PlateauBand,
		//nolint:gosec // the SVG is built by RateChart, which escapes every text it takes
		"Linear": template.HTML(RateChart(series, ChartOptions{Title: "records/s"})),
		"Log":    template.HTML(RateChart(series, ChartOptions{Title: "records/s, log scale", Log: true})),
	})
}
