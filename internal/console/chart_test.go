package console

import (
	"strings"
	"testing"
	"time"

	"weir/internal/console/svgcheck"
)

func TestLineChartDrawsItsValues(t *testing.T) {
	now := time.UnixMilli(1_700_000_300_000)
	at := func(sec int) time.Time { return now.Add(time.Duration(sec) * time.Second) }
	lines := []Line{
		{Name: "p0", Points: []Point{{at(-400), 999}, {at(-240), 10}, {at(-120), 40}, {at(0), 25}}}, // the first is out of the span
		{Name: "p1", Points: []Point{{at(-60), 0}, {at(-30), 3.5}}},
		{Name: "empty"},
	}
	svg := string(lineChart("t", "records/s", lines, now, 5*time.Minute, rateCount))
	got, err := svgcheck.LineChart(svg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]float64{"p0": {10, 40, 25}, "p1": {0, 3.5}, "empty": nil}
	if len(got) != len(want) {
		t.Fatalf("%d lines drawn, want %d", len(got), len(want))
	}
	for _, s := range got {
		if !floatsEqual(s.Values, want[s.Name]) {
			t.Errorf("line %s draws %v, want %v", s.Name, s.Values, want[s.Name])
		}
	}
	// The axis tops at a round number above the largest value in the span
	// (40, not the 999 before it).
	if !strings.Contains(svg, `data-ymax="50"`) {
		t.Errorf("y axis: want 50 in %s", svg[:200])
	}
	// Readable in grey: series differ by dash, and the legend writes the
	// last value out.
	if !strings.Contains(svg, `stroke-dasharray="6 3"`) || !strings.Contains(svg, "p0 25/s") || !strings.Contains(svg, "p1 3.50/s") {
		t.Errorf("legend or dashes missing:\n%s", svg)
	}
}

func TestLineChartCatchesAMisdrawnPoint(t *testing.T) {
	now := time.UnixMilli(1_700_000_300_000)
	svg := string(lineChart("t", "u", []Line{{Name: "a", Points: []Point{{now.Add(-time.Minute), 10}, {now, 20}}}}, now, 5*time.Minute, humanCount))
	if _, err := svgcheck.LineChart(svg); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(svg, `data-values="10 20"`, `data-values="10 30"`, 1)
	if _, err := svgcheck.LineChart(bad); err == nil {
		t.Fatal("a value the path does not draw passed the check")
	}
}

func TestBarChartWidthsAreProportional(t *testing.T) {
	svg := string(barChart("b", []Bar{{"broker 1", 300}, {"broker 2", 100}, {"broker 3", 0}}, humanBytes))
	bars, err := svgcheck.BarChart(svg)
	if err != nil {
		t.Fatal(err)
	}
	if len(bars) != 3 || bars[0].Width != float64(bcWidth-bcLabel-bcValue) || bars[1].Width*3 != bars[0].Width || bars[2].Width != 0 {
		t.Fatalf("bars %+v", bars)
	}
	if !strings.Contains(svg, ">300 B<") {
		t.Errorf("values are not written beside the bars: %s", svg)
	}
	bad := strings.Replace(svg, `data-value="100"`, `data-value="150"`, 1)
	if _, err := svgcheck.BarChart(bad); err == nil {
		t.Fatal("a bar wider than its value passed the check")
	}
}

func TestHumanNumbers(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{humanBytes(0), "0 B"}, {humanBytes(1023), "1023 B"}, {humanBytes(1536), "1.50 KiB"}, {humanBytes(5 << 30), "5.00 GiB"},
		{humanCount(0), "0"}, {humanCount(7), "7"}, {humanCount(2.5), "2.50"}, {humanCount(1500), "1.50K"}, {humanCount(123456789), "123M"},
		{num(1.23456), "1.235"}, {num(-0.0001), "-0"}, {num(1e21), "1000000000000000000000"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	for v, want := range map[float64]float64{0: 1, 1: 1, 3: 5, 11: 20, 24: 25, 2600: 5000} {
		if got := niceCeil(v); got != want {
			t.Errorf("niceCeil(%g) = %g, want %g", v, got, want)
		}
	}
}

func floatsEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
