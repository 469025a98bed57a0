package scenario

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"weir/internal/console/svgcheck"
	"weir/scenario/spec"
)

func TestProcessingTime(t *testing.T) {
	ones := func() float64 { return 10 }
	cases := []struct {
		p    spec.Processing
		n    int
		want time.Duration
	}{
		{spec.Processing{MinMs: 10, MaxMs: 10, Parallelism: 1}, 5, 50 * time.Millisecond},  // one after another
		{spec.Processing{MinMs: 10, MaxMs: 10, Parallelism: -1}, 5, 10 * time.Millisecond}, // all at once
		{spec.Processing{MinMs: 10, MaxMs: 10, Parallelism: 2}, 5, 30 * time.Millisecond},  // 3 rounds of 2 lanes
		{spec.Processing{MinMs: 10, MaxMs: 10, Parallelism: 8}, 5, 10 * time.Millisecond},  // more lanes than records
		{spec.Processing{MinMs: 10, MaxMs: 10, Parallelism: 1}, 0, 0},
	}
	for i, tc := range cases {
		if got := processingTime(tc.p, tc.n, ones); got != tc.want {
			t.Errorf("case %d: %v, want %v", i, got, tc.want)
		}
	}
	// Uneven draws: each record goes to the lane that frees first.
	draws := []float64{30, 10, 10, 10}
	i := 0
	got := processingTime(spec.Processing{Parallelism: 2}, 4, func() float64 { i++; return draws[i-1] })
	if got != 30*time.Millisecond {
		t.Errorf("uneven: %v, want 30ms (lane 1: 30; lane 2: 10+10+10)", got)
	}
}

// The meter counts per partition, the backlog counts distinct records
// (a redelivery does not drain it twice), and take starts a new
// interval.
func TestMeter(t *testing.T) {
	m := newMeter(map[string]int{"a": 2})
	m.setPhase("p")
	for range 3 {
		m.acked("a", 0, 5*time.Millisecond, nil)
	}
	m.acked("a", 1, 5*time.Millisecond, nil)
	m.acked("a", 1, 0, errTest)
	m.consumed("a", []delivery{{0, 0, time.Second}, {0, 0, time.Second}, {1, 0, time.Second}})
	if b := m.backlog(); b != 2 {
		t.Fatalf("backlog %d, want 2 (3+1 acked, 2 distinct consumed)", b)
	}
	iv := m.take()
	ti := iv.topics["a"]
	if ti.acked[0] != 3 || ti.acked[1] != 1 || ti.consumed[0] != 2 || ti.backlog[0] != 2 || ti.backlog[1] != 0 || iv.sendErrors != 1 {
		t.Fatalf("interval %+v errors %d", ti, iv.sendErrors)
	}
	if iv.produceLat.Count() != 4 || iv.e2eLat.Count() != 3 {
		t.Fatalf("latencies: %d produce, %d e2e", iv.produceLat.Count(), iv.e2eLat.Count())
	}
	if again := m.take(); again.topics["a"].acked[0] != 0 || again.produceLat.Count() != 0 || again.topics["a"].ackedTotal != 4 {
		t.Fatalf("second interval %+v", again.topics["a"])
	}
	if m.phaseProduce["p"].Count() != 4 || m.phaseE2E["p"].Count() != 3 {
		t.Fatal("the phase's histograms missed records")
	}
}

var errTest = bytes.ErrTooLarge

func tickAt(t float64, consumed, backlog int64) Tick {
	return Tick{T: t, Consumed: map[string][]int64{"a": {consumed}}, Backlog: map[string][]int64{"a": {backlog}}}
}

// A drain that collapses: the peak, the lowest rate while records
// remained (the partial last tick left out) and the drain time.
func TestDrainFigures(t *testing.T) {
	ticks := []Tick{
		tickAt(10, 0, 0), // before the phase
		tickAt(11, 1000, 5000),
		tickAt(12, 4000, 1000),
		tickAt(13, 100, 900),
		tickAt(14, 800, 100),
		tickAt(14.3, 100, 0), // partial
		tickAt(15, 0, 0),
	}
	peak, low, drain := drainFigures(ticks, 10, 15, 1)
	if peak != 4000 || low != 100 || math.Abs(drain-4.3) > 1e-9 {
		t.Fatalf("peak %v low %v drain %v, want 4000, 100, 4.3", peak, low, drain)
	}
}

// Every chart of a report draws each tick's value where it belongs
// (svgcheck reads the SVG back), and the page has no script and loads
// nothing.
func TestRunReportChartsDrawTheTicks(t *testing.T) {
	res := sampleResult()
	var b bytes.Buffer
	if err := WriteRunHTML(&b, res); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{"<script", "http://", "https://", "src="} {
		if strings.Contains(strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, ""), bad) {
			t.Errorf("the report contains %q", bad)
		}
	}
	charts := ChartsOf(page)
	if len(charts) < 8 {
		t.Fatalf("%d charts, want the rates, backlog, per-partition, latency and broker charts", len(charts))
	}
	checked := CheckCharts(t, charts, res)
	for _, want := range []string{"Records per second/consumed", "Produced per partition, a/a-1", "End-to-end latency (record timestamp to consumer)/p99", "Bytes produced to each broker/broker 2"} {
		if !checked[want] {
			t.Errorf("no chart line %q checked (have %v)", want, checked)
		}
	}
	if n := strings.Count(page, `class="marker"`); n != len(res.Events)*len(charts) {
		t.Errorf("%d markers, want each of %d events on each of %d charts", n, len(res.Events), len(charts))
	}
}

var svgRE = regexp.MustCompile(`(?s)<svg .*?</svg>`)

// ChartsOf returns the SVG charts of a report page (as written, or as a
// browser serialises it).
func ChartsOf(page string) []string { return svgRE.FindAllString(page, -1) }

// CheckCharts checks each chart's lines with svgcheck and their values
// against the run's ticks; it returns the "title/line" names checked.
func CheckCharts(t *testing.T, charts []string, res *RunResult) map[string]bool {
	t.Helper()
	want := expectedLines(res)
	checked := map[string]bool{}
	titleRE := regexp.MustCompile(`data-title="([^"]*)"`)
	for _, svg := range charts {
		m := titleRE.FindStringSubmatch(svg)
		if m == nil {
			t.Fatalf("a chart without data-title")
		}
		title := htmlUnescape(m[1])
		lines, err := svgcheck.LineChart(svg)
		if err != nil {
			t.Fatalf("chart %q: %v", title, err)
		}
		for _, l := range lines {
			key := title + "/" + l.Name
			exp, ok := want[key]
			if !ok {
				continue
			}
			if len(l.Values) != len(exp) {
				t.Fatalf("%s: %d points, want %d", key, len(l.Values), len(exp))
			}
			for i := range exp {
				if math.Abs(l.Values[i]-exp[i]) > 1e-6*math.Max(1, exp[i]) || l.Times[i] != int64(math.Round(res.Ticks[i].T*1000)) {
					t.Fatalf("%s point %d: %v at %d ms, want %v at %v s", key, i, l.Values[i], l.Times[i], exp[i], res.Ticks[i].T)
				}
			}
			checked[key] = true
		}
	}
	return checked
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'").Replace(s)
}

// expectedLines computes, from the ticks alone, what some of the charts'
// lines must show.
func expectedLines(res *RunResult) map[string][]float64 {
	out := map[string][]float64{}
	prev := 0.0
	topic := slices.Min(slices.Collect(maps.Keys(res.Ticks[0].Produced)))
	perPart := fmt.Sprintf("Produced per partition, %s/%s-1", topic, topic)
	for _, tk := range res.Ticks {
		d := tk.T - prev
		prev = tk.T
		if d <= 0 {
			d = math.Inf(1) // the chart draws 0 for an empty interval
		}
		out["Records per second/consumed"] = append(out["Records per second/consumed"], float64(sumMap(tk.Consumed))/d)
		out[perPart] = append(out[perPart], float64(tk.Produced[topic][1])/d)
		out["End-to-end latency (record timestamp to consumer)/p99"] = append(out["End-to-end latency (record timestamp to consumer)/p99"], tk.E2EMs.P99)
		out["Bytes produced to each broker/broker 2"] = append(out["Bytes produced to each broker/broker 2"], float64(tk.BrokerBytes[2])/d/(1<<20))
	}
	return out
}

// sampleResult is a small run: two partitions, a collapse and a fault.
func sampleResult() *RunResult {
	res := &RunResult{Name: "sample", Variant: "v", Started: time.Unix(1_800_000_000, 0),
		BrokerBytes: map[int32]int64{1: 3 << 20, 2: 1 << 20}, BrokerShare: map[int32]float64{1: 0.75, 2: 0.25},
		Events: []Event{{T: 1.5, Kind: "fault", Text: "kill broker 2"}, {T: 2.2, Kind: "leader", Text: "a-1: leader 2 -> 1"}}}
	for i := range 6 {
		res.Ticks = append(res.Ticks, Tick{
			T:           float64(i+1) * 0.98,
			Produced:    map[string][]int64{"a": {int64(100 * i), int64(50 * i)}},
			Consumed:    map[string][]int64{"a": {int64(90 * i), int64(i * i)}},
			Backlog:     map[string][]int64{"a": {int64(10 * i), 0}},
			E2EMs:       Percentiles{Count: 10, P50: float64(i), P99: 3.5 * float64(i), Max: 40},
			ProduceMs:   Percentiles{Count: 10, P50: 2, P99: 20, Max: 21},
			BrokerBytes: map[int32]int64{1: int64(i) << 20, 2: int64(i) << 18},
		})
	}
	return res
}

// A topic of more partitions than a chart's legend holds gets one line
// for each of the busiest maxLegend-1 and one for the sum of the rest,
// so a report's size does not grow with the partition count.
func TestPerPartitionChartsKeepTheBusiest(t *testing.T) {
	const n = 40
	res := &RunResult{Name: "many", Started: time.Unix(1_800_000_000, 0)}
	for i := range 4 {
		prod := make([]int64, n)
		for p := range prod {
			prod[p] = int64(p * (i + 1)) // partition p's share grows with p
		}
		res.Ticks = append(res.Ticks, Tick{T: float64(i + 1), Produced: map[string][]int64{"a": prod},
			Consumed: map[string][]int64{"a": make([]int64, n)}, Backlog: map[string][]int64{"a": make([]int64, n)}})
	}
	var b bytes.Buffer
	if err := WriteRunHTML(&b, res); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, svg := range ChartsOf(b.String()) {
		if !strings.Contains(svg, `data-title="Produced per partition, a"`) {
			continue
		}
		found = true
		lines, err := svgcheck.LineChart(svg)
		if err != nil {
			t.Fatal(err)
		}
		if len(lines) != maxLegend {
			t.Fatalf("%d lines, want %d", len(lines), maxLegend)
		}
		byName := map[string][]float64{}
		for _, l := range lines {
			byName[l.Name] = l.Values
		}
		for p := n - maxLegend + 1; p < n; p++ {
			if byName[fmt.Sprintf("a-%d", p)] == nil {
				t.Errorf("busy partition a-%d has no line (have %v)", p, slices.Collect(maps.Keys(byName)))
			}
		}
		if byName["a-0"] != nil {
			t.Error("the idlest partition has a line of its own")
		}
		other := byName[fmt.Sprintf("the other %d partitions", n-maxLegend+1)]
		if len(other) != 4 {
			t.Fatalf("the other partitions' line: %v", other)
		}
		for i, v := range other {
			want := 0.0
			for p := range n - maxLegend + 1 {
				want += float64(p * (i + 1)) // a rate over 1 s ticks
			}
			if math.Abs(v-want) > 1e-6*want {
				t.Errorf("tick %d: the other partitions at %v, want %v", i, v, want)
			}
		}
	}
	if !found {
		t.Fatal("no per-partition chart")
	}
}
