package scenario

import (
	"bytes"
	"encoding/xml"
	"regexp"
	"strings"
	"testing"
)

var pointsAttr = regexp.MustCompile(`points="([^"]*)"`)

func TestRateChart(t *testing.T) {
	s := seriesOf(t, 0, 1000, 2000, 500)
	tests := []struct {
		name   string
		series []ChartSeries
		opt    ChartOptions
		// the polyline points of each series, in pixels
		points []string
		has    []string
		hasNot []string
	}{
		{
			name:   "linear",
			series: []ChartSeries{{Name: "a", Samples: s.Samples}},
			opt:    ChartOptions{Title: "rate <&> title", Width: 190, Height: 175},
			// plot 100×100 at (70,30); time 0..5 s (niceCeil(4)=5), rate 0..2000
			points: []string{"90.0,130.0 110.0,80.0 130.0,30.0 150.0,105.0"},
			has:    []string{"rate &lt;&amp;&gt; title", ">2K<", ">0<", ">5s<", "records/s<"},
			hasNot: []string{"<script", "href"},
		},
		{
			name:   "log",
			series: []ChartSeries{{Name: "a", Samples: s.Samples}},
			opt:    ChartOptions{Width: 190, Height: 175, Log: true},
			// from 100 (the decade below 500) to 10^4; rate 0 sits on the
			// axis: y = 30 + 100·(1 - (log10(r)-2)/2)
			points: []string{"90.0,130.0 110.0,80.0 130.0,64.9 150.0,95.1"},
			has:    []string{">10K<", ">100<", "records/s (log)"},
			hasNot: []string{">10<"},
		},
		{
			name:   "log, nothing consumed",
			series: []ChartSeries{{Name: "idle", Samples: seriesOf(t, 0, 0).Samples}},
			opt:    ChartOptions{Width: 190, Height: 175, Log: true},
			points: []string{"120.0,130.0 170.0,130.0"},
			has:    []string{">1<", ">10<"},
		},
		{
			name: "two series with a legend",
			series: []ChartSeries{
				{Name: "java", Samples: s.Samples},
				{Name: "weir", Samples: seriesOf(t, 2000).Samples},
			},
			opt:    ChartOptions{Width: 190, Height: 175},
			points: []string{"90.0,130.0 110.0,80.0 130.0,30.0 150.0,105.0", "90.0,30.0"},
			has:    []string{">java<", ">weir<", seriesColors[0], seriesColors[1]},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svg := RateChart(tc.series, tc.opt)
			if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil {
				t.Fatalf("not well-formed XML: %v\n%s", err, svg)
			}
			var got []string
			for _, m := range pointsAttr.FindAllStringSubmatch(svg, -1) {
				got = append(got, m[1])
			}
			if strings.Join(got, "|") != strings.Join(tc.points, "|") {
				t.Errorf("points\n %q\nwant\n %q", got, tc.points)
			}
			for _, h := range tc.has {
				if !strings.Contains(svg, h) {
					t.Errorf("no %q in\n%s", h, svg)
				}
			}
			for _, h := range tc.hasNot {
				if strings.Contains(svg, h) {
					t.Errorf("%q in the chart", h)
				}
			}
		})
	}
}

func TestNiceNumbers(t *testing.T) {
	for _, tc := range []struct{ in, ceil, step float64 }{
		{1, 1, 0.1},
		{4, 5, 0.5},
		{29000, 50000, 5000},
		{1800, 2000, 200},
		{120, 200, 20},
		{2.2, 2.5, 0.25},
	} {
		if got := niceCeil(tc.in); got != tc.ceil {
			t.Errorf("niceCeil(%v) = %v, want %v", tc.in, got, tc.ceil)
		}
		if got := niceStep(tc.ceil); got != tc.step {
			t.Errorf("niceStep(%v) = %v, want %v", tc.ceil, got, tc.step)
		}
	}
	for _, tc := range []struct {
		v    float64
		want string
	}{{0, "0"}, {500, "500"}, {1500, "1.5K"}, {29000, "29K"}, {2e6, "2M"}, {0.25, "0.25"}} {
		if got := humanCount(tc.v); got != tc.want {
			t.Errorf("humanCount(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestWriteHTML(t *testing.T) {
	s := seriesOf(t, 0, 29000, 28000, 29000, 28500, 29000, 2000, 1990, 2000, 2010, 1990, 400)
	r := Report{
		Title:      "share drain: java <client>",
		Params:     [][2]string{{"max.poll.records", "500"}},
		Partitions: []int64{750, 250},
		Leaders:    []int32{2},
		Summary:    s.Summarize(),
		Samples:    s.Samples,
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{
		"<title>share drain: java &lt;client&gt;</title>",
		"<svg", "records/s, log scale",
		"<td>max.poll.records</td><td>500</td>",
		"<td>0</td><td>750</td><td>75.00</td><td>2</td>",
		"<td>1</td><td>250</td><td>25.00</td><td>?</td>",
		"<td>peak rate (rec/s)</td><td>29000</td>",
		"<td>1990</td>", // a plateau's median or the minimum
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script") {
		t.Error("page has a script")
	}
	if n := strings.Count(page, "<svg"); n != 2 {
		t.Errorf("%d charts, want 2 (linear and log)", n)
	}
}

func TestSummaryText(t *testing.T) {
	sum := seriesOf(t, 0, 29000, 28000, 29000, 28500, 29000, 2000, 1990, 2000, 2010, 1990, 400).Summarize()
	var buf bytes.Buffer
	sum.WriteText(&buf)
	for _, want := range []string{"peak rate:      29000 rec/s", "min after peak: 1990 rec/s", "drain time:     11s", "plateau:        29000 rec/s from 1s to 6s (5.0 s)", "plateau:        2000 rec/s from 6s to 11s (5.0 s)"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, buf.String())
		}
	}
}
