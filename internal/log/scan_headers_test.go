package log

import (
	"bytes"
	"errors"
	"sync"
	"testing"
)

// producerBatch is a batch of n records from an idempotent producer; big
// makes the values large enough that one batch exceeds the scan window.
func producerBatch(t testing.TB, pid int64, epoch int16, seq int32, n int, big bool) []byte {
	t.Helper()
	size := 10
	if big {
		size = scanWindow + 1000
	}
	recs := make([]testRecord, n)
	for i := range recs {
		recs[i] = testRecord{value: bytes.Repeat([]byte{'v'}, size), tsDelta: int64(i)}
	}
	return makeBatch(t, batchSpec{records: recs, baseTs: testNow.UnixMilli(), producer: pid, epoch: epoch, sequence: seq})
}

func scanAll(t testing.TB, l *Log, from int64) []BatchHeader {
	t.Helper()
	var out []BatchHeader
	if err := l.ScanHeaders(from, func(h BatchHeader) bool { out = append(out, h); return true }); err != nil {
		t.Fatalf("ScanHeaders(%d): %v", from, err)
	}
	return out
}

func storedHeaders(t testing.TB, l *Log) []BatchHeader {
	t.Helper()
	var out []BatchHeader
	for _, b := range readAll(t, l, l.StartOffset()) {
		h, err := ParseBatchHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, h)
	}
	return out
}

func TestScanHeadersMatchesStoredBatches(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 4096
	cfg.IndexIntervalBytes = 200
	cfg.LogAppendTime = true
	l := openTestLog(t, t.TempDir(), cfg, newFakeClock())
	defer l.Close()
	seq := int32(0)
	for i := range 60 {
		n := 1 + i%4
		b := producerBatch(t, 7, 3, seq, n, i%17 == 5)
		if _, err := l.Append(b, AppendOptions{LeaderEpoch: 2}); err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		seq += int32(n)
	}
	want := storedHeaders(t, l)
	if len(want) != 60 {
		t.Fatalf("stored %d batches", len(want))
	}
	if want[0].LogAppendTime() == false || want[0].ProducerID != 7 || want[0].ProducerEpoch != 3 {
		t.Fatalf("stored header not as expected: %+v", want[0])
	}

	froms := []int64{-5, 0, 1, want[10].BaseOffset, want[10].LastOffset(), want[59].BaseOffset, l.EndOffset() - 1, l.EndOffset(), l.EndOffset() + 3}
	for _, from := range froms {
		var exp []BatchHeader
		for _, h := range want {
			if h.LastOffset() >= from {
				exp = append(exp, h)
			}
		}
		got := scanAll(t, l, from)
		if len(got) != len(exp) {
			t.Fatalf("from %d: %d headers, want %d", from, len(got), len(exp))
		}
		for i := range got {
			if got[i] != exp[i] {
				t.Fatalf("from %d: header %d = %+v, want %+v", from, i, got[i], exp[i])
			}
		}
	}
}

func TestScanHeadersStopsEarly(t *testing.T) {
	l := openTestLog(t, t.TempDir(), DefaultConfig(), newFakeClock())
	defer l.Close()
	for i := range 10 {
		if _, err := l.Append(producerBatch(t, 1, 0, int32(i), 1, false), AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	calls := 0
	err := l.ScanHeaders(0, func(h BatchHeader) bool {
		calls++
		return h.BaseOffset < 3
	})
	if err != nil || calls != 4 {
		t.Fatalf("err %v, %d calls, want 4", err, calls)
	}
}

func TestScanHeadersStartsAtLogStart(t *testing.T) {
	l := openTestLog(t, t.TempDir(), DefaultConfig(), newFakeClock())
	defer l.Close()
	for i := range 10 {
		if _, err := l.Append(producerBatch(t, 1, 0, int32(2*i), 2, false), AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.AdvanceStartOffset(7, l.EndOffset()); err != nil {
		t.Fatal(err)
	}
	got := scanAll(t, l, 0)
	// Offset 7 lies in the batch [6, 7].
	if len(got) != 7 || got[0].BaseOffset != 6 {
		t.Fatalf("got %d headers starting at %d, want 7 starting at 6", len(got), got[0].BaseOffset)
	}
}

func TestScanHeadersEmptyAndClosed(t *testing.T) {
	l := openTestLog(t, t.TempDir(), DefaultConfig(), newFakeClock())
	if got := scanAll(t, l, 0); len(got) != 0 {
		t.Fatalf("empty log gave %d headers", len(got))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.ScanHeaders(0, func(BatchHeader) bool { return true }); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed log: %v", err)
	}
}

// TestScanHeadersDuringAppends scans while another goroutine appends and
// rolls segments: every scan must see a gap-free run of batches from the
// start.
func TestScanHeadersDuringAppends(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 2048
	l := openTestLog(t, t.TempDir(), cfg, newFakeClock())
	defer l.Close()
	const total = 300
	batches := make([][]byte, total)
	for i := range batches {
		batches[i] = producerBatch(t, 9, 0, int32(i), 1, false)
	}
	var wg sync.WaitGroup
	errc := make(chan error, 1)
	wg.Go(func() {
		for _, b := range batches {
			if _, err := l.Append(b, AppendOptions{}); err != nil {
				errc <- err
				return
			}
		}
	})
	for scans := 0; scans < 200 && l.EndOffset() < total; scans++ {
		next := int64(0)
		err := l.ScanHeaders(0, func(h BatchHeader) bool {
			if h.BaseOffset != next || h.BaseSequence != int32(next) {
				t.Errorf("scan saw batch %d (seq %d), want %d", h.BaseOffset, h.BaseSequence, next)
				return false
			}
			next = h.NextOffset()
			return true
		})
		if err != nil {
			t.Fatalf("scan: %v", err)
		}
	}
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatalf("append: %v", err)
	default:
	}
	if got := scanAll(t, l, 0); len(got) != total {
		t.Fatalf("final scan saw %d batches, want %d", len(got), total)
	}
}
