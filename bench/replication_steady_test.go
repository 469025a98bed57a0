package bench

import (
	"strings"
	"testing"
)

// TestReplicationSteadyReport reads a raw file of three weir runs and
// three Kafka runs, Kafka's second failed (its CPU never read), and checks
// the medians of the three nodes' sum and of the CPU per acknowledged
// record (a median of per-run figures, not a quotient of medians), the
// weir/Kafka ratios, and the per-run ratios of the runs both sides
// finished.
func TestReplicationSteadyReport(t *testing.T) {
	report := runPython(t, "replication/steady-results.py", "report", "testdata/replication-steady/raw.txt")
	wantLines(t, report,
		"Medians over 3 weir and 2 Kafka runs:",
		// node 1: weir 2.0, 3.0, 2.5; Kafka 8 and 10 (run 2 failed).
		"| broker CPU s, node 1 | 2.50 | 9.00 | 0.28 |",
		// sums: weir 5, 6, 7; Kafka 20 and 24.
		"| broker CPU s, 3 nodes | 6.00 | 22.00 | 0.27 |",
		// per record: weir 7.8, 10.0 (run 2 acknowledged 600,000
		// records), 10.9; Kafka 31.2 and 37.5 µs. The sums' median over
		// 640,000 would be 9.4.
		"| broker CPU us per acknowledged record, 3 nodes | 10.0 | 34.4 | 0.29 |",
		"| steady p99 ms | 9 | 50 | 0.18 |",
		"| weir | 2 | 3.00 | 2.00 | 1.00 | 6.00 | 10.0 | 4 | 11 |",
		"| kafka | 3 | 10.00 | 9.00 | 5.00 | 24.00 | 37.5 | 7 | 60 |",
		// runs 1 and 3 only: 5/20 and 7/24.
		"weir/Kafka broker CPU, 3 nodes, per run: 0.25, 0.29",
	)
	if strings.Contains(report, "| kafka | 2 |") {
		t.Errorf("report lists the failed run:\n%s", report)
	}
}

// TestReplicationSteadyProfile reads the profiled run's counters over a
// 20 s window (node n served 2000n Produce and 4000n Fetch requests and
// made 120000n system calls in 6000n ms of CPU) and checks each node's
// rates and per-request figures; Metadata requests and gauges are not
// requests of the steady load.
func TestReplicationSteadyProfile(t *testing.T) {
	out := runPython(t, "replication/steady-results.py", "profile", "testdata/replication-steady/prof")
	wantLines(t, out,
		"Profiled window 20.0 s, per node (per second; per request = per Fetch + Produce request served):",
		"| 1 | 0.30 | 100 | 200 | 600 | 300 | 6,000 | 2,000 | 20.0 | 1000.1 |",
		"| 3 | 0.90 | 300 | 600 | 1,800 | 900 | 18,000 | 6,000 | 20.0 | 1000.0 |",
	)
}

// TestReplicationSteadySyscalls reads perf stat counts per system call
// over 10 s and checks the rows: most frequent first (by the sum over the
// nodes), calls never made or not counted left out, and the total.
func TestReplicationSteadySyscalls(t *testing.T) {
	out := runPython(t, "replication/steady-results.py", "syscalls", "10", "testdata/replication-steady/prof")
	wantLines(t, out,
		"System calls per second by kind over 10 s (the 3 most frequent):",
		"| read | 300 | 600 | 900 |",
		"| futex | 300 | 200 | 100 |",
		"| all | 700 | 1,000 | 1,300 |",
	)
	if i, j := strings.Index(out, "| read |"), strings.Index(out, "| write |"); i < 0 || j < i {
		t.Errorf("read (1,800 in all) is not listed before write (600):\n%s", out)
	}
	if strings.Contains(out, "openat") || strings.Contains(out, "mmap") {
		t.Errorf("lists a call never counted:\n%s", out)
	}
}
