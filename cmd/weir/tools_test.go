package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startServe runs weir serve in-process and returns its address.
func startServe(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--log-level", "error"}, &out, &out)
	}()
	t.Cleanup(func() { cancel(); <-done })
	re := regexp.MustCompile(`weir listening on (127\.0\.0\.1:\d+)`)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
		waitABit()
	}
	t.Fatalf("serve did not start:\n%s", out.String())
	return ""
}

// weir runs one command line and returns its exit code and output.
func weir(t *testing.T, input string, args ...string) (int, string) {
	t.Helper()
	if input != "" {
		old := stdin
		stdin = strings.NewReader(input)
		defer func() { stdin = old }()
	}
	var out syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := run(ctx, args, &out, &out)
	return code, out.String()
}

func mustWeir(t *testing.T, input string, args ...string) string {
	t.Helper()
	code, out := weir(t, input, args...)
	if code != 0 {
		t.Fatalf("weir %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

func TestConsoleTools(t *testing.T) {
	addr := startServe(t)
	bs := []string{"--bootstrap-server", addr}
	with := func(args ...string) []string { return append(args, bs...) }

	out := mustWeir(t, "", with("topic", "create", "--topic", "tools", "--partitions", "2", "--config", "retention.ms=3600000")...)
	if !strings.Contains(out, "Created topic tools.") {
		t.Fatalf("create said: %s", out)
	}
	if code, out := weir(t, "", with("topic", "create", "--topic", "tools")...); code == 0 || !strings.Contains(out, "TOPIC_ALREADY_EXISTS") {
		t.Fatalf("second create: exit %d\n%s", code, out)
	}
	if out := mustWeir(t, "", with("topic", "list")...); strings.TrimSpace(out) != "tools" {
		t.Fatalf("list: %q", out)
	}
	out = mustWeir(t, "", with("topic", "describe", "--topic", "tools")...)
	if !strings.Contains(out, "PartitionCount: 2") || !strings.Contains(out, "retention.ms=3600000") || strings.Count(out, "Partition: ") != 2 {
		t.Fatalf("describe:\n%s", out)
	}
	// An explicit assignment, as kafka-topics.sh --replica-assignment:
	// two partitions on this broker.
	leader := regexp.MustCompile(`Leader: (\d+)`).FindStringSubmatch(out)
	if leader == nil {
		t.Fatalf("describe names no leader:\n%s", out)
	}
	mustWeir(t, "", with("topic", "create", "--topic", "placed", "--replica-assignment", leader[1]+","+leader[1])...)
	out = mustWeir(t, "", with("topic", "describe", "--topic", "placed")...)
	if !strings.Contains(out, "PartitionCount: 2") || strings.Count(out, "Replicas: "+leader[1]) != 2 {
		t.Fatalf("describe of the placed topic:\n%s", out)
	}
	mustWeir(t, "", with("topic", "delete", "--topic", "placed")...)
	for _, bad := range [][]string{
		{"--replica-assignment", leader[1] + ":" + leader[1]},
		{"--replica-assignment", leader[1], "--partitions", "1"},
		{"--replica-assignment", "x"},
	} {
		if code, out := weir(t, "", with(append([]string{"topic", "create", "--topic", "bad"}, bad...)...)...); code != 2 {
			t.Fatalf("create %v: exit %d, want 2\n%s", bad, code, out)
		}
	}
	mustWeir(t, "", with("topic", "alter", "--topic", "tools", "--partitions", "3", "--delete-config", "retention.ms")...)
	out = mustWeir(t, "", with("topic", "describe", "--topic", "tools")...)
	if !strings.Contains(out, "PartitionCount: 3") || strings.Contains(out, "retention.ms=") {
		t.Fatalf("describe after alter:\n%s", out)
	}

	lines := "k1=v1\nk2=v2\nk3=v3\nnokey\n"
	out = mustWeir(t, lines, with("produce", "--topic", "tools", "--key-separator", "=", "--partition", "1")...)
	if !strings.Contains(out, "4 records written to tools, 0 failed") {
		t.Fatalf("produce: %s", out)
	}
	out = mustWeir(t, "", with("consume", "--topic", "tools", "--from-beginning", "--max-messages", "4", "--print-key", "--print-offset", "--idle-timeout", "20s")...)
	for _, want := range []string{"Partition:1\tOffset:0\tk1\tv1", "Partition:1\tOffset:2\tk3\tv3", "Partition:1\tOffset:3\tnull\tnokey", "Processed a total of 4 messages"} {
		if !strings.Contains(out, want) {
			t.Fatalf("consume output lacks %q:\n%s", want, out)
		}
	}
	// A group consumer commits what it read: a second run reads nothing new.
	out = mustWeir(t, "", with("consume", "--topic", "tools", "--group", "g", "--from-beginning", "--max-messages", "4", "--idle-timeout", "20s")...)
	if !strings.Contains(out, "Processed a total of 4 messages") {
		t.Fatalf("group consume: %s", out)
	}
	out = mustWeir(t, "", with("consume", "--topic", "tools", "--group", "g", "--idle-timeout", "3s")...)
	if !strings.Contains(out, "Processed a total of 0 messages") {
		t.Fatalf("second group consume re-read committed records: %s", out)
	}

	mustWeir(t, "", with("topic", "delete", "--topic", "tools")...)
	if out := mustWeir(t, "", with("topic", "list")...); strings.TrimSpace(out) != "" {
		t.Fatalf("list after delete: %q", out)
	}
	if code, _ := weir(t, "", "topic", "create"); code != 2 {
		t.Fatalf("create without --topic: exit %d, want 2", code)
	}
	if code, out := weir(t, "", with("produce", "--topic", "x", "--property", "acks=maybe")...); code != 1 || !strings.Contains(out, "acks") {
		t.Fatalf("bad producer property: exit %d\n%s", code, out)
	}
}

func TestPerfTools(t *testing.T) {
	addr := startServe(t)
	mustWeir(t, "", "topic", "create", "--topic", "perf", "--partitions", "3", "--bootstrap-server", addr)
	out := mustWeir(t, "", "perf", "produce", "--topic", "perf", "--num-records", "20000", "--record-size", "100",
		"--throughput", "-1", "--producer-props", "bootstrap.servers="+addr, "acks=all", "linger.ms=2", "--print-metrics")
	summary := regexp.MustCompile(`(?m)^20000 records sent, [0-9.]+ records/sec \([0-9.]+ MB/sec\), [0-9.]+ ms avg latency, [0-9.]+ ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99.9th\.$`)
	if !summary.MatchString(out) || !strings.Contains(out, "outgoing-byte-total") {
		t.Fatalf("perf produce output:\n%s", out)
	}
	out = mustWeir(t, "", "perf", "consume", "--topic", "perf", "--messages", "20000", "--bootstrap-server", addr)
	if !strings.Contains(out, "data.consumed.in.nMsg") || !regexp.MustCompile(`, 20000, `).MatchString(out) {
		t.Fatalf("perf consume output:\n%s", out)
	}
	out = mustWeir(t, "", "perf", "consume", "--topic", "perf", "--messages", "20000", "--group", "pg", "--bootstrap-server", addr)
	if !regexp.MustCompile(`, 20000, `).MatchString(out) {
		t.Fatalf("perf consume with a group:\n%s", out)
	}
	// Throttled: about 2000 records at 1000/s take about two seconds.
	start := time.Now()
	mustWeir(t, "", "perf", "produce", "--topic", "perf", "--num-records", "2000", "--record-size", "10", "--throughput", "1000",
		"--producer-props", "bootstrap.servers="+addr)
	if took := time.Since(start); took < 1500*time.Millisecond {
		t.Fatalf("throttled run finished in %v; the throttle did not hold", took)
	}
	// Transactional, as ProducerPerformance --transactional-id
	// --transaction-duration-ms: about 1.5 s at 2000/s in transactions of
	// 100 ms, read back whole by a read_committed consumer.
	out = mustWeir(t, "", "perf", "produce", "--topic", "perf", "--num-records", "3000", "--record-size", "10", "--throughput", "2000",
		"--transactional-id", "perf-txn", "--transaction-duration-ms", "100", "--producer-props", "bootstrap.servers="+addr)
	txns := regexp.MustCompile(`(?m)^(\d+) transactions committed, commit latency [0-9.]+ ms avg, [0-9.]+ ms 50th, [0-9.]+ ms 99th, [0-9.]+ ms max\.$`).FindStringSubmatch(out)
	if txns == nil || !strings.Contains(out, "3000 records sent") {
		t.Fatalf("transactional perf produce output:\n%s", out)
	}
	if n, _ := strconv.Atoi(txns[1]); n < 5 {
		t.Fatalf("%d transactions in about 1.5 s of 100 ms transactions", n)
	}
	out = mustWeir(t, "", "perf", "consume", "--topic", "perf", "--messages", "25000", "--bootstrap-server", addr, "--consumer-props", "isolation.level=read_committed")
	if !regexp.MustCompile(`, 25000, `).MatchString(out) {
		t.Fatalf("read_committed perf consume of the transactional records:\n%s", out)
	}
	// An exactly-once copy of those 25000 records in 100 ms transactions.
	mustWeir(t, "", "topic", "create", "--topic", "perf-copy", "--partitions", "3", "--bootstrap-server", addr)
	out = mustWeir(t, "", "perf", "copy", "--from", "perf", "--to", "perf-copy", "--messages", "25000", "--bootstrap-server", addr)
	if !regexp.MustCompile(`(?m)^25000 records copied in [0-9.]+ s, [0-9.]+ records/sec; \d+ transactions, commit latency [0-9.]+ ms avg, [0-9.]+ ms 50th, [0-9.]+ ms 99th, [0-9.]+ ms max\.$`).MatchString(out) {
		t.Fatalf("perf copy output:\n%s", out)
	}
	out = mustWeir(t, "", "perf", "consume", "--topic", "perf-copy", "--messages", "25000", "--bootstrap-server", addr, "--consumer-props", "isolation.level=read_committed")
	if !regexp.MustCompile(`, 25000, `).MatchString(out) {
		t.Fatalf("reading the copy:\n%s", out)
	}
	// Keyed records, each of 4 keys in turn, on a compacted topic (which
	// refuses records without a key); every result's latency logged.
	mustWeir(t, "", "topic", "create", "--topic", "keyed", "--partitions", "1", "--config", "cleanup.policy=compact", "--bootstrap-server", addr)
	lat := filepath.Join(t.TempDir(), "latency")
	mustWeir(t, "", "perf", "produce", "--topic", "keyed", "--num-records", "8", "--record-size", "5", "--key-space", "4",
		"--latency-log", lat, "--producer-props", "bootstrap.servers="+addr, "acks=all")
	out = mustWeir(t, "", "consume", "--topic", "keyed", "--from-beginning", "--max-messages", "8", "--print-key", "--idle-timeout", "20s", "--bootstrap-server", addr)
	if got := regexp.MustCompile(`k0000000000\d\d`).FindAllString(out, -1); fmt.Sprint(got) != "[k000000000000 k000000000001 k000000000002 k000000000003 k000000000000 k000000000001 k000000000002 k000000000003]" {
		t.Fatalf("keys %v in\n%s", got, out)
	}
	logged, err := os.ReadFile(lat)
	if err != nil {
		t.Fatal(err)
	}
	if lines := regexp.MustCompile(`(?m)^\d{13} \d+$`).FindAllString(string(logged), -1); len(lines) != 8 {
		t.Fatalf("latency log:\n%s", logged)
	}
}

func TestMetricsEndpoint(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--log-level", "error"}, &out, &out)
	}()
	defer func() { cancel(); <-done }()
	re := regexp.MustCompile(`weir metrics on (http://127\.0\.0\.1:\d+/metrics)`)
	lis := regexp.MustCompile(`weir listening on (127\.0\.0\.1:\d+)`)
	deadline := time.Now().Add(20 * time.Second)
	for !lis.MatchString(out.String()) && time.Now().Before(deadline) {
		waitABit()
	}
	m := re.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no metrics line:\n%s", out.String())
	}
	addr := lis.FindStringSubmatch(out.String())[1]
	mustWeir(t, "", "topic", "create", "--topic", "m", "--bootstrap-server", addr)
	mustWeir(t, "a\nb\n", "produce", "--topic", "m", "--bootstrap-server", addr)
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`weir_partition_log_end_offset{partition="0",topic="m"} 2`, `weir_server_requests_total{api="Produce"}`, "weir_server_inline_replies_total", "go_goroutines",
		"weir_cleaner_runs_total 0"} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("metrics lack %q:\n%s", want, body)
		}
	}
}
