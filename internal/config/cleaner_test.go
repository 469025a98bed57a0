package config

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"weir/internal/cleaner"
)

func TestCleanerConfig(t *testing.T) {
	b := mustBroker(t, nil)
	if got, want := b.Cleaner(), cleaner.DefaultConfig(); got != want {
		t.Fatalf("defaults %+v, want Kafka's %+v", got, want)
	}
	b = mustBroker(t, map[string]string{CleanerEnable: "false", CleanerThreads: "3", CleanerDedupeBufferSize: "1000000",
		CleanerIOBufferLoadFactor: "0.5", CleanerIOBufferSize: "4096", CleanerIOMaxBytesPerSec: "1e6", CleanerBackoffMs: "20", WeirLogCleanerNice: "7"})
	want := cleaner.Config{Enabled: false, Threads: 3, DedupeBufferSize: 1000000, LoadFactor: 0.5, IOBufferSize: 4096, IOMaxBytesPerSecond: 1e6, Backoff: 20 * time.Millisecond, Nice: 7}
	if got := b.Cleaner(); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if cleaner.DefaultConfig().IOMaxBytesPerSecond != math.MaxFloat64 {
		t.Fatal("Kafka's default I/O limit is Double.MAX_VALUE")
	}
}

func TestCleanerThreadsChangeDynamically(t *testing.T) {
	b := mustBroker(t, map[string]string{CleanerThreads: "2"})
	cases := []struct {
		threads string
		msg     string
	}{
		{"4", ""},
		{"1", ""},
		{"5", "Log cleaner threads cannot be increased to more than double the current value 2"},
		{"0", "Log cleaner threads should be at least 1"},
	}
	for _, tc := range cases {
		_, e := b.IncrementalAlterBroker("", []IncrementalOp{op(CleanerThreads, OpSet, ptr(tc.threads))})
		switch {
		case tc.msg == "" && e != nil:
			t.Errorf("threads=%s refused: %v", tc.threads, e.Message)
		case tc.msg != "" && (e == nil || e.Message != tc.msg || e.Code != codeInvalidRequest):
			t.Errorf("threads=%s: %+v, want %q", tc.threads, e, tc.msg)
		}
	}
	b4 := mustBroker(t, map[string]string{CleanerThreads: "4"})
	if _, e := b4.IncrementalAlterBroker("", []IncrementalOp{op(CleanerThreads, OpSet, ptr("1"))}); e == nil || e.Message != "Log cleaner threads cannot be reduced to less than half the current value 4" {
		t.Errorf("halving past half: %+v", e)
	}
	if _, e := b.IncrementalAlterBroker("", []IncrementalOp{op(CleanerDedupeBufferSize, OpSet, ptr("10"))}); e == nil || e.Code != codeInvalidRequest {
		t.Errorf("a dedupe buffer with no room for a key: %+v", e)
	}
	if _, e := b.IncrementalAlterBroker("", []IncrementalOp{op(CleanerEnable, OpSet, ptr("false"))}); e == nil {
		t.Error("log.cleaner.enable changed dynamically")
	}
}

// TestCleanerNice: weir.log.cleaner.nice takes 0 to 19, statically and
// dynamically, and refuses anything else by name.
func TestCleanerNice(t *testing.T) {
	for _, tc := range []struct {
		value string
		ok    bool
	}{{"0", true}, {"19", true}, {"10", true}, {"-1", false}, {"20", false}, {"x", false}, {"", false}} {
		_, err := NewBroker(map[string]string{NodeID: "1", WeirLogCleanerNice: tc.value})
		if (err == nil) != tc.ok {
			t.Errorf("weir.log.cleaner.nice=%q: %v", tc.value, err)
		}
		if err != nil && !strings.Contains(err.Error(), WeirLogCleanerNice) {
			t.Errorf("weir.log.cleaner.nice=%q refused without naming it: %v", tc.value, err)
		}
		b := mustBroker(t, nil)
		dyn, e := b.IncrementalAlterBroker("", []IncrementalOp{op(WeirLogCleanerNice, OpSet, ptr(tc.value))})
		if (e == nil) != tc.ok {
			t.Errorf("dynamic weir.log.cleaner.nice=%q: %+v", tc.value, e)
		}
		if e != nil {
			continue
		}
		if next, _ := b.WithDynamic(dyn, nil); next.Cleaner().Nice != int(mustInt(t, tc.value)) {
			t.Errorf("dynamic weir.log.cleaner.nice=%q: cleaner nice %d", tc.value, next.Cleaner().Nice)
		}
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
