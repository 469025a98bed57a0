package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestCompactedTopicRefusesRecordsWithoutKey(t *testing.T) {
	keyed := []testRecord{{key: []byte("a"), value: []byte("1")}, {key: []byte("b"), value: nil}}
	keyless := []testRecord{{key: []byte("a"), value: []byte("1")}, {key: nil, value: []byte("2")}}
	cases := []struct {
		name    string
		compact bool
		recs    []testRecord
		codec   int
		refused bool
	}{
		{"compact, every key set", true, keyed, CompressionNone, false},
		{"compact, one record without key", true, keyless, CompressionNone, true},
		{"compact, compressed, one record without key", true, keyless, CompressionZstd, true},
		{"delete, record without key", false, keyless, CompressionNone, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Compact = tc.compact
			clock := newFakeClock()
			l := openTestLog(t, t.TempDir(), cfg, clock)
			defer l.Close()
			_, err := l.Append(makeBatch(t, batchSpec{records: tc.recs, baseTs: clock.now().UnixMilli(), codec: tc.codec}), AppendOptions{})
			if !tc.refused {
				if err != nil {
					t.Fatalf("Append: %v", err)
				}
				return
			}
			if !errors.Is(err, kerr.InvalidRecord) || !strings.HasSuffix(err.Error(), ": Compacted topic cannot accept message without key") {
				t.Fatalf("Append: %v", err)
			}
			if l.EndOffset() != 0 || l.Size() != 0 {
				t.Fatalf("refused batch left end %d size %d", l.EndOffset(), l.Size())
			}
		})
	}
}

// keyedBatch is a batch of the given keys ("" is a tombstone-free key of
// that name; a key ending in "!" is a tombstone for the key before it).
func keyedBatch(t testing.TB, ts int64, keys ...string) []byte {
	var recs []testRecord
	for i, k := range keys {
		v := []byte(fmt.Sprintf("%s@%d", k, ts))
		if strings.HasSuffix(k, "!") {
			k, v = strings.TrimSuffix(k, "!"), nil
		}
		recs = append(recs, testRecord{key: []byte(k), value: v, tsDelta: int64(i)})
	}
	return makeBatch(t, batchSpec{records: recs, baseTs: ts})
}

// segmentedLog has one closed segment per batch of keys and an empty
// active segment, all flushed.
func segmentedLog(t testing.TB, dir string, clock *fakeClock, batches ...[]string) *Log {
	t.Helper()
	cfg := DefaultConfig()
	cfg.SegmentBytes = BatchHeaderSize
	cfg.FileDeleteDelay = 0
	l := openTestLog(t, dir, cfg, clock)
	for _, keys := range batches {
		if _, err := l.Append(keyedBatch(t, clock.now().UnixMilli(), keys...), AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		clock.add(time.Millisecond)
	}
	l.mu.Lock()
	err := l.roll(clock.now())
	l.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	return l
}

// records reads every record of the log: "offset:key=value" ("key=nil"
// for a tombstone).
func records(t testing.TB, l *Log) []string {
	t.Helper()
	var out []string
	for _, b := range readAll(t, l, l.StartOffset()) {
		for _, d := range decodeBatch(t, b) {
			v := d.value
			if d.nullValue {
				v = "nil"
			}
			out = append(out, fmt.Sprintf("%d:%s=%s", d.offset, d.key, v))
		}
	}
	return out
}

// cleanGroup replaces the closed segments [base, end) with what keep
// keeps, as the cleaner does: the group's last batch is kept, emptied if
// need be.
func cleanGroup(l *Log, base, end int64, keep func(*CleanRecord) bool) error {
	w, err := l.NewCleanedSegment(base, end)
	if err != nil {
		return err
	}
	var f BatchFilter
	var out []byte
	_, err = l.EachCleanableBatch(base, end, nil, func(_ int64, b []byte) error {
		h, _ := ParseBatchHeader(b)
		var ferr error
		out, _, ferr = f.Filter(out[:0], b, FilterOptions{RetainEmpty: h.NextOffset() == end}, keep)
		if ferr != nil || len(out) == 0 {
			return ferr
		}
		return w.Append(out)
	})
	if err != nil {
		w.Abort()
		return err
	}
	return w.Commit()
}

func keepKeys(keys ...string) func(*CleanRecord) bool {
	return func(r *CleanRecord) bool {
		for _, k := range keys {
			if string(r.Key) == k {
				return true
			}
		}
		return false
	}
}

func TestCleanedGroupReplacesSegmentsKeepingOffsets(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	l := segmentedLog(t, dir, clock, []string{"a", "b"}, []string{"c", "a"}, []string{"b", "d"}, []string{"e"})
	defer func() { l.Close() }()
	view, err := l.CleanerView()
	if err != nil {
		t.Fatal(err)
	}
	if len(view.Segments) != 4 || view.ActiveBase != 7 || view.Segments[3].Next != 7 || view.RecoveryPoint != 7 {
		t.Fatalf("view %+v", view)
	}
	sizeBefore := l.Size()
	// Clean the first three segments keeping c and d only: offsets 2 and
	// 5 stay, and 5 is the group's last record anyway.
	if err := cleanGroup(l, 0, 6, keepKeys("c", "d")); err != nil {
		t.Fatal(err)
	}
	want := []string{"2:c=c@" + fmt.Sprint(testNow.UnixMilli()+1), "5:d=d@" + fmt.Sprint(testNow.UnixMilli()+2), "6:e=e@" + fmt.Sprint(testNow.UnixMilli()+3)}
	if got := records(t, l); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("records\n got %v\nwant %v", got, want)
	}
	if l.Size() >= sizeBefore {
		t.Fatalf("size %d, was %d", l.Size(), sizeBefore)
	}
	after, _ := l.CleanerView()
	if len(after.Segments) != 2 || after.Segments[0].Base != 0 || after.Segments[0].Next != 6 || after.Segments[1].Base != 6 {
		t.Fatalf("segments %+v", after.Segments)
	}
	// Reads that start in a gap get the next batch; reads from every
	// offset agree with the records.
	for off := int64(0); off < 7; off++ {
		b, err := l.ReadBytes(off, 1, 7)
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		h, _ := ParseBatchHeader(b)
		if h.LastOffset() < off {
			t.Fatalf("read at %d returned batch ending at %d", off, h.LastOffset())
		}
	}
	names := dirNames(t, dir)
	for _, n := range names {
		if strings.HasSuffix(n, cleanedSuffix) || strings.HasSuffix(n, swapSuffix) || strings.HasPrefix(n, "00000000000000000002") {
			t.Fatalf("leftover %s in %v", n, names)
		}
	}
	// Reopened, with and without the checkpoint (every batch verified,
	// gaps included), the log reads the same.
	l.Close()
	l = openTestLog(t, dir, l.Config(), clock)
	if got := records(t, l); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after reopen %v", got)
	}
	l.Close()
	if err := os.Remove(filepath.Join(dir, checkpointFile)); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, l.Config(), clock)
	if got := records(t, l); fmt.Sprint(got) != fmt.Sprint(want) || l.EndOffset() != 7 {
		t.Fatalf("after reopen without checkpoint %v end %d", got, l.EndOffset())
	}
	if _, err := l.Append(keyedBatch(t, clock.now().UnixMilli(), "f"), AppendOptions{}); err != nil || l.EndOffset() != 8 {
		t.Fatalf("append after cleaning: %v, end %d", err, l.EndOffset())
	}
}

func dirNames(t testing.TB, dir string) []string {
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestEmptiedGroupKeepsItsLastBatch(t *testing.T) {
	clock := newFakeClock()
	l := segmentedLog(t, t.TempDir(), clock, []string{"a", "b"}, []string{"c"})
	defer l.Close()
	if err := cleanGroup(l, 0, 3, keepKeys()); err != nil {
		t.Fatal(err)
	}
	bs := readAll(t, l, 0)
	if len(bs) != 1 {
		t.Fatalf("%d batches", len(bs))
	}
	h, _ := ParseBatchHeader(bs[0])
	if h.BaseOffset != 2 || h.LastOffset() != 2 || h.NumRecords != 0 || l.EndOffset() != 3 {
		t.Fatalf("kept %+v, end %d", h, l.EndOffset())
	}
}

func TestFollowerCopiesCleanedLog(t *testing.T) {
	clock := newFakeClock()
	leader := segmentedLog(t, t.TempDir(), clock, []string{"a", "b"}, []string{"a"}, []string{"c", "b"}, []string{"a"})
	defer leader.Close()
	if err := cleanGroup(leader, 0, 5, keepKeys("c", "b")); err != nil {
		t.Fatal(err)
	}
	if _, err := leader.Append(keyedBatch(t, clock.now().UnixMilli(), "z"), AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	want := records(t, leader)
	// A follower fetching from 0, and one that had the first batch and
	// fetches from offset 2 (in a gap of the leader's log), end the same.
	for _, from := range []int64{0, 2} {
		t.Run(fmt.Sprint(from), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.SegmentBytes = 200
			f := openTestLog(t, t.TempDir(), cfg, clock)
			defer f.Close()
			if from > 0 {
				if _, err := f.Append(keyedBatch(t, clock.now().UnixMilli(), "a", "b"), AppendOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			for f.EndOffset() < leader.EndOffset() {
				b, err := leader.ReadBytes(f.EndOffset(), 100, leader.EndOffset())
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.AppendReplicated(b); err != nil {
					t.Fatalf("AppendReplicated at %d: %v", f.EndOffset(), err)
				}
			}
			got := records(t, f)
			if from > 0 {
				want := append([]string{fmt.Sprintf("0:a=a@%d", clock.now().UnixMilli()), fmt.Sprintf("1:b=b@%d", clock.now().UnixMilli())}, want[1:]...)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("follower %v\nwant %v", got, want)
				}
				return
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("follower %v\nleader %v", got, want)
			}
			// Its own recovery accepts the gaps.
			dir := f.Dir()
			crash(f)
			f = openTestLog(t, dir, cfg, clock)
			if got := records(t, f); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("follower after crash %v", got)
			}
		})
	}
}

func TestCleaningAbandonedWhenLogChanges(t *testing.T) {
	cases := []struct {
		name   string
		change func(*Log) error
	}{
		{"truncation", func(l *Log) error { return l.Truncate(3) }},
		{"retention", func(l *Log) error { _, err := l.AdvanceStartOffset(2, 10); return err }},
		{"close", func(l *Log) error { return l.Close() }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			clock := newFakeClock()
			l := segmentedLog(t, dir, clock, []string{"a"}, []string{"a"}, []string{"b"}, []string{"c"})
			defer func() { l.Close() }()
			before := records(t, l)
			w, err := l.NewCleanedSegment(0, 3)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.EachCleanableBatch(0, 3, nil, func(_ int64, b []byte) error { return w.Append(b) }); err != nil {
				t.Fatal(err)
			}
			if err := tc.change(l); err != nil {
				t.Fatal(err)
			}
			want := before
			if tc.name != "close" {
				want = records(t, l)
			}
			if err := w.Commit(); !errors.Is(err, ErrStaleClean) {
				t.Fatalf("Commit: %v", err)
			}
			for _, n := range dirNames(t, dir) {
				if strings.HasSuffix(n, cleanedSuffix) {
					t.Fatalf("%s left behind", n)
				}
			}
			if tc.name == "close" {
				l = openTestLog(t, dir, l.Config(), clock)
			}
			if got := records(t, l); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("log changed by an abandoned clean: %v, want %v", got, want)
			}
		})
	}
}

// TestSwapCrashAtEveryStep cuts the swap short at every step (and every
// file removal) as a crash would, reopens the log and checks that it
// holds exactly the old records or exactly the cleaned ones, follows on,
// and takes appends.
func TestSwapCrashAtEveryStep(t *testing.T) {
	for step := stepCleanedWritten; step <= stepIndexed; step++ {
		for nth := 0; ; nth++ {
			dir := t.TempDir()
			clock := newFakeClock()
			l := segmentedLog(t, dir, clock, []string{"a", "b"}, []string{"a"}, []string{"b", "c"}, []string{"d"})
			before := records(t, l)
			seen := 0
			l.swapFault = func(s swapStep) error {
				if s != step {
					return nil
				}
				seen++
				if seen > nth {
					return errSwapFault
				}
				return nil
			}
			err := cleanGroup(l, 0, 5, keepKeys("a", "c"))
			if err == nil {
				l.Close()
				if nth == 0 {
					t.Fatalf("step %d never reached", step)
				}
				break // every occurrence of this step was tried
			}
			if !errors.Is(err, errSwapFault) {
				t.Fatal(err)
			}
			crash(l)
			l = openTestLog(t, dir, l.Config(), clock)
			got := records(t, l)
			committed := step >= stepSwapRenamed
			want := before
			if committed {
				want = []string{before[0], before[2], before[4], before[5]}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("step %d/%d: records %v\nwant %v", step, nth, got, want)
			}
			for _, n := range dirNames(t, dir) {
				if strings.HasSuffix(n, cleanedSuffix) || strings.HasSuffix(n, swapSuffix) {
					t.Fatalf("step %d/%d: %s left after recovery", step, nth, n)
				}
			}
			if _, err := l.Append(keyedBatch(t, clock.now().UnixMilli(), "x"), AppendOptions{}); err != nil || l.EndOffset() != 7 {
				t.Fatalf("step %d/%d: append after recovery: %v, end %d", step, nth, err, l.EndOffset())
			}
			l.Close()
			if step != stepOldRemoved {
				break
			}
		}
	}
}

func TestEachCleanableBatchGrowsForLargeBatches(t *testing.T) {
	clock := newFakeClock()
	cfg := DefaultConfig()
	l := openTestLog(t, t.TempDir(), cfg, clock)
	defer l.Close()
	big := makeBatch(t, batchSpec{records: []testRecord{{key: []byte("k"), value: bytes.Repeat([]byte("v"), 200<<10)}}, baseTs: clock.now().UnixMilli()})
	for range 3 {
		if _, err := l.Append(append([]byte(nil), big...), AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	l.mu.Lock()
	_ = l.roll(clock.now())
	l.mu.Unlock()
	var got []int64
	if _, err := l.EachCleanableBatch(1, 3, make([]byte, 0, 1024), func(_ int64, b []byte) error {
		h, _ := ParseBatchHeader(b)
		got = append(got, h.BaseOffset)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("batches %v", got)
	}
}

// TestReplayReadsTheCleanedLog: a coordinator replaying its compacted
// topic (ScanRecords) sees what is left, gaps and emptied batches
// skipped.
func TestReplayReadsTheCleanedLog(t *testing.T) {
	clock := newFakeClock()
	l := segmentedLog(t, t.TempDir(), clock, []string{"a", "b"}, []string{"a"}, []string{"c"}, []string{"b"})
	defer l.Close()
	if err := cleanGroup(l, 0, 3, keepKeys("c")); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := l.ScanRecords(context.Background(), func(r *Record) error {
		got = append(got, fmt.Sprintf("%d:%s", r.Offset, r.Key))
		return nil
	})
	if err != nil || fmt.Sprint(got) != "[3:c 4:b]" {
		t.Fatalf("replay %v %v", got, err)
	}
}

// FuzzFinishSwap: whatever a .swap file holds, opening the directory
// never panics and leaves a log that reads back whole and takes appends;
// a swap that reads back whole replaces the segments it covers.
func FuzzFinishSwap(f *testing.F) {
	var old, cleaned bytes.Buffer
	for i := range 4 {
		b := stamped(f, int64(i), batchSpec{records: []testRecord{{key: []byte{'a' + byte(i%2)}, value: []byte("v")}}, baseTs: testNow.UnixMilli()})
		old.Write(b)
		if i >= 2 {
			cleaned.Write(b) // the latest of a and b
		}
	}
	f.Add(old.Bytes(), cleaned.Bytes())
	f.Add(old.Bytes(), cleaned.Bytes()[:70])
	f.Add(old.Bytes(), []byte("not a segment"))
	f.Add(old.Bytes(), []byte{})
	f.Fuzz(func(t *testing.T, logBytes, swapBytes []byte) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "00000000000000000000.log"), logBytes, 0o644)
		os.WriteFile(filepath.Join(dir, "00000000000000000000.log.swap"), swapBytes, 0o644)
		os.WriteFile(filepath.Join(dir, "00000000000000000000.log.cleaned"), swapBytes, 0o644)
		l, err := Open(dir, DefaultConfig(), Options{Now: newFakeClock().now})
		if err != nil {
			return
		}
		defer l.Close()
		for _, n := range dirNames(t, dir) {
			if strings.HasSuffix(n, swapSuffix) || strings.HasSuffix(n, cleanedSuffix) {
				t.Fatalf("%s left after recovery", n)
			}
		}
		readAll(t, l, l.StartOffset())
		if _, err := l.Append(simpleBatch(t, 1, testNow.UnixMilli(), 1), AppendOptions{}); err != nil {
			t.Fatalf("append after recovery: %v", err)
		}
	})
}
