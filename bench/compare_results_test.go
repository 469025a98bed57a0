package bench

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCompareReportFixedRateCPU runs bench/compare-results.py on a small
// raw file (testdata/compare-raw.txt: weir's second pair failed its
// latency run, so its CPU and its records pair up by run, not by list
// position) and checks the fixed-rate broker CPU rows: against Kafka with
// the 0.25 target, against the null broker with the 1.5 target, and the
// CPU per record sent.
func TestCompareReportFixedRateCPU(t *testing.T) {
	report := runPython(t, "compare-results.py", "report", "testdata/compare-raw.txt")
	wantLines(t, report,
		// weir 3.5 s; Kafka median of 17.5 and 21.0.
		"| broker CPU s, 50000 rec/s latency run | 3.5 | 19.2 | 0.18 | <= 0.25 | yes |",
		// 3.5 s over 1,750,000 records; Kafka median of 10.0 and 12.0.
		"| broker CPU us per record, 50000 rec/s latency run | 2.0 | 11.0 | 0.18 |  |  |",
		// the null broker's median of 1.75 and 3.5 s.
		"| broker CPU s, 50000 rec/s latency run | 2.6 | 3.5 | 1.33 | <= 1.5 | yes | 7.33 |",
		"| broker CPU us per record, 50000 rec/s latency run | 1.5 | 2.0 | 1.33 |  |  | 7.33 |",
		// the ceiling's throughput target still there
		"| produce acks=1, records/s | 220,000 | 200,000 | 0.91 | >= 0.8 | yes | 0.45 |",
		// per-run rows list the CPU seconds, not the derived figure
		"| broker CPU s, 50000 rec/s latency run | 3.5 | 17.5 / 21.0 | 1.8 / 3.5 |",
	)
	if strings.Contains(report, "| broker CPU us per record, 50000 rec/s latency run | 2.0 | 10.0 / 12.0") {
		t.Errorf("per-run table lists the derived per-record figure:\n%s", report)
	}
}

// runPython runs the Python script (a path under bench) with args and
// returns its output.
func runPython(t *testing.T, script string, args ...string) string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("bench/%s needs python3: %v", script, err)
	}
	out, err := exec.Command(python, append([]string{script}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", script, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// wantLines fails t for each of lines that is not a whole line of out.
func wantLines(t *testing.T, out string, lines ...string) {
	t.Helper()
	have := map[string]bool{}
	for l := range strings.SplitSeq(out, "\n") {
		have[l] = true
	}
	for _, l := range lines {
		if !have[l] {
			t.Errorf("output lacks the line\n%s\noutput:\n%s", l, out)
		}
	}
}
