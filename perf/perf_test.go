package perf

import (
	"strings"
	"testing"
	"time"
)

func TestSummaryFormats(t *testing.T) {
	var b strings.Builder
	ProduceResult{Records: 1000, Bytes: 1000 * 512, Elapsed: 2 * time.Second, AvgLatency: 1500 * time.Microsecond,
		MaxLatency: 9 * time.Millisecond, P50: time.Millisecond, P95: 3 * time.Millisecond, P99: 5 * time.Millisecond, P999: 8 * time.Millisecond}.WriteSummary(&b)
	want := "1000 records sent, 500.000000 records/sec (0.24 MB/sec), 1.50 ms avg latency, 9.00 ms max latency, 1 ms 50th, 3 ms 95th, 5 ms 99th, 8 ms 99.9th.\n"
	if b.String() != want {
		t.Fatalf("produce summary\n got %q\nwant %q", b.String(), want)
	}
	b.Reset()
	start := time.Date(2026, 1, 2, 3, 4, 5, 67_000_000, time.UTC)
	ConsumeResult{Records: 100, Bytes: 1 << 20, Start: start, FirstRecord: start.Add(time.Second), End: start.Add(3 * time.Second)}.WriteSummary(&b)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "2026-01-02 03:04:05:067, 2026-01-02 03:04:08:067, 1.0000, 0.3333, 100, 33.3333, 1000, 2000, 0.5000, 50.0000, 0") {
		t.Fatalf("consume summary:\n%s", b.String())
	}
}
