package scenario

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteComparison(t *testing.T) {
	dir := t.TempDir()
	ref := seriesOf(t, 0, 20000, 20000, 20000, 20000, 20000, 5000)
	slow := seriesOf(t, 0, 29000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 500, 500)
	fast := seriesOf(t, 0, 18000, 19000, 19000, 18500, 19000, 19000, 2000)
	write := func(stem string, rec RunRecord, s *Series) string {
		t.Helper()
		p := filepath.Join(dir, stem)
		b, _ := json.Marshal(rec)
		if err := os.WriteFile(p+".json", b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := writeFile(p+".csv", func(w io.Writer) error { return WriteCSV(w, s.Samples) }); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stems := []string{
		write("ref", RunRecord{Client: "java", AcquireMode: "batch_optimized", Backlog: []int64{100000, 5000}, Distinct: 105000, Drained: true, PeakRate: 20000, MinAfterPeak: 20000, DrainS: 5.2}, ref),
		write("slow", RunRecord{Client: "java", AcquireMode: "record_limit", Backlog: []int64{100000, 5000}, Distinct: 45000, Drained: false, PeakRate: 29000, MinAfterPeak: 500, DrainS: 10.4,
			Plateaus: []PlateauRecord{{0, 1, 123}}}, slow), // stale: LoadRun recomputes plateaus from the CSV
		write("fast", RunRecord{Client: "weir", AcquireMode: "record_limit", Backlog: []int64{100000, 5000}, Distinct: 105000, Duplicates: 3, Drained: true, PeakRate: 19000, MinAfterPeak: 18000, DrainS: 6.24}, fast),
	}
	c := Comparison{Title: "case 2", Setup: "one broker", Reference: 0, ChartPrefix: "cmp"}
	for i, label := range []string{"reference", "java record_limit", "weir record_limit"} {
		run, err := LoadRun(label, stems[i])
		if err != nil {
			t.Fatal(err)
		}
		c.Runs = append(c.Runs, run)
	}
	if err := WriteComparison(dir, "cmp.md", c); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "cmp.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# case 2\n\none broker\n",
		"| reference | java | batch_optimized | 20000 | 20000 | 5.20 s | 1 (reference) | 105000 of 105000 | 20000 (1.0–6.0 s) |",
		"| java record_limit | java | record_limit | 29000 | 500 | > 10.4 s | > 2.00 | 45000 of 105000 | 2000 (2.0–9.0 s) |",
		"| weir record_limit | weir | record_limit | 19000 | 18000 | 6.24 s | 1.20 | 105000 of 105000, 3 duplicates | 19000 (1.0–7.0 s) |",
		"![rate over time](cmp-rate.svg)",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	for _, f := range []string{"cmp-rate.svg", "cmp-rate-log.svg"} {
		svg, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || strings.Count(string(svg), "<polyline") != 3 {
			t.Errorf("%s: %v, want 3 lines", f, err)
		}
	}
	if _, err := LoadRun("x", filepath.Join(dir, "missing")); err == nil {
		t.Error("LoadRun of a missing run succeeded")
	}
}
