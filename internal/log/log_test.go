package log

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// fakeClock is a settable clock for tests.
type fakeClock struct{ ms atomic.Int64 }

func newFakeClock() *fakeClock           { c := &fakeClock{}; c.ms.Store(testNow.UnixMilli()); return c }
func (c *fakeClock) now() time.Time      { return time.UnixMilli(c.ms.Load()) }
func (c *fakeClock) add(d time.Duration) { c.ms.Add(d.Milliseconds()) }

func openTestLog(t testing.TB, dir string, cfg Config, clock *fakeClock) *Log {
	t.Helper()
	l, err := Open(dir, cfg, Options{Now: clock.now})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

// crash abandons the log as a killed process would: no flush, no
// checkpoint, files closed.
func crash(l *Log) {
	l.mu.Lock()
	l.state.Or(stateClosing)
	l.mu.Unlock()
	l.stopSyncing()
	l.mu.Lock()
	l.state.Or(stateClosed)
	l.mu.Unlock()
	l.closeFiles()
}

// appendN appends n batches of recsPer records and returns their bytes as
// stored (with offsets assigned).
func appendN(t testing.TB, l *Log, clock *fakeClock, n, recsPer, valueSize int) [][]byte {
	t.Helper()
	var out [][]byte
	for range n {
		b := simpleBatch(t, recsPer, clock.now().UnixMilli(), valueSize)
		if _, err := l.Append(b, AppendOptions{LeaderEpoch: 1}); err != nil {
			t.Fatalf("Append: %v", err)
		}
		out = append(out, b)
	}
	return out
}

// readAll reads every batch from offset to the end and checks each.
func readAll(t testing.TB, l *Log, from int64) [][]byte {
	t.Helper()
	var out [][]byte
	for off := from; off < l.EndOffset(); {
		b, err := l.ReadBytes(off, 1<<20, l.EndOffset())
		if err != nil {
			t.Fatalf("ReadBytes(%d): %v", off, err)
		}
		if len(b) == 0 {
			t.Fatalf("empty read at %d below end %d", off, l.EndOffset())
		}
		for len(b) > 0 {
			h, err := ParseBatchHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := validateReplicated(b[:h.Length], testNow); err != nil {
				t.Fatalf("stored batch at %d invalid: %v", h.BaseOffset, err)
			}
			out = append(out, b[:h.Length])
			off = h.NextOffset()
			b = b[h.Length:]
		}
	}
	return out
}

func TestAppendAssignsOffsetsAndReads(t *testing.T) {
	clock := newFakeClock()
	l := openTestLog(t, t.TempDir(), DefaultConfig(), clock)
	defer l.Close()
	written := appendN(t, l, clock, 10, 3, 20)
	if got := l.EndOffset(); got != 30 {
		t.Fatalf("end offset %d, want 30", got)
	}
	for i, b := range written {
		h, _ := ParseBatchHeader(b)
		if h.BaseOffset != int64(i*3) || h.LeaderEpoch != 1 {
			t.Fatalf("batch %d: base %d epoch %d", i, h.BaseOffset, h.LeaderEpoch)
		}
	}
	got := readAll(t, l, 0)
	if len(got) != 10 {
		t.Fatalf("read %d batches", len(got))
	}
	for i := range got {
		if !bytes.Equal(got[i], written[i]) {
			t.Fatalf("batch %d differs from what was appended", i)
		}
	}
	// A read from the middle of a batch starts with that batch.
	b, err := l.ReadBytes(4, 1, 30)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, written[1]) {
		t.Fatal("read at offset 4 with a 1-byte limit must return exactly the whole batch holding it")
	}
}

func TestReadLimits(t *testing.T) {
	clock := newFakeClock()
	l := openTestLog(t, t.TempDir(), DefaultConfig(), clock)
	defer l.Close()
	written := appendN(t, l, clock, 20, 1, 100)
	size := int64(len(written[0]))
	cases := []struct {
		name            string
		offset, max, hw int64
		wantBatches     int
		wantErr         *kerr.Error
	}{
		{"two and a half batches fit", 0, size*2 + size/2, 20, 2, nil},
		{"high watermark bounds", 5, 1 << 20, 8, 3, nil},
		{"at high watermark", 8, 1 << 20, 8, 0, nil},
		{"at end", 20, 1 << 20, 20, 0, nil},
		{"past end", 21, 1 << 20, 21, 0, kerr.OffsetOutOfRange},
		{"negative", -1, 1 << 20, 20, 0, kerr.OffsetOutOfRange},
		{"zero max still one batch", 3, 0, 20, 1, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := l.Read(nil, tc.offset, tc.max, tc.hw)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Bytes != int64(tc.wantBatches)*size {
				t.Fatalf("read %d bytes, want %d batches of %d", res.Bytes, tc.wantBatches, size)
			}
		})
	}
}

func TestRollBySizeAndTimeAndReopen(t *testing.T) {
	clock := newFakeClock()
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 1000
	cfg.IndexIntervalBytes = 100
	l := openTestLog(t, dir, cfg, clock)
	written := appendN(t, l, clock, 12, 2, 100) // ~300 bytes each: 3 per segment
	l.mu.Lock()
	nsegs := len(l.segs)
	l.mu.Unlock()
	if nsegs != 4 {
		t.Fatalf("%d segments, want 4", nsegs)
	}
	clock.add(cfg.SegmentTime)
	appendN(t, l, clock, 1, 1, 1)
	l.mu.Lock()
	nsegs = len(l.segs)
	l.mu.Unlock()
	if nsegs != 5 {
		t.Fatalf("%d segments after segment.ms passed, want 5", nsegs)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(files) != 5 || filepath.Base(files[1]) != "00000000000000000006.log" {
		t.Fatalf("segment files %v", files)
	}
	l = openTestLog(t, dir, cfg, clock)
	defer l.Close()
	got := readAll(t, l, 0)
	if len(got) != 13 {
		t.Fatalf("reopened log has %d batches", len(got))
	}
	for i := range written {
		if !bytes.Equal(got[i], written[i]) {
			t.Fatalf("batch %d changed across reopen", i)
		}
	}
}

func TestIndexRebuiltWhenMissingOrStale(t *testing.T) {
	for _, damage := range []string{"missing", "garbage", "truncated"} {
		t.Run(damage, func(t *testing.T) {
			clock := newFakeClock()
			dir := t.TempDir()
			cfg := DefaultConfig()
			cfg.IndexIntervalBytes = 50
			l := openTestLog(t, dir, cfg, clock)
			appendN(t, l, clock, 50, 1, 60)
			l.Close()
			ix := filepath.Join(dir, "00000000000000000000.index")
			want, _ := os.ReadFile(ix)
			if len(want) == 0 {
				t.Fatal("no index written")
			}
			switch damage {
			case "missing":
				os.Remove(ix)
			case "garbage":
				os.WriteFile(ix, bytes.Repeat([]byte{0xff}, len(want)), 0o644)
			case "truncated":
				os.WriteFile(ix, want[:len(want)-3], 0o644)
			}
			l = openTestLog(t, dir, cfg, clock)
			defer l.Close()
			l.mu.Lock()
			entries := len(l.segs[0].ix.entries)
			l.mu.Unlock()
			if entries != len(want)/offsetEntrySize {
				t.Fatalf("rebuilt index has %d entries, want %d", entries, len(want)/offsetEntrySize)
			}
			if got := readAll(t, l, 17); len(got) != 33 {
				t.Fatalf("read %d batches from 17", len(got))
			}
		})
	}
}

func TestLogAppendTime(t *testing.T) {
	clock := newFakeClock()
	cfg := DefaultConfig()
	cfg.LogAppendTime = true
	l := openTestLog(t, t.TempDir(), cfg, clock)
	defer l.Close()
	b := simpleBatch(t, 2, 5, 3) // ancient create time is fine under LogAppendTime
	res, err := l.Append(b, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.LogAppendTime != clock.now().UnixMilli() {
		t.Fatalf("log append time %d", res.LogAppendTime)
	}
	stored := readAll(t, l, 0)[0]
	h, _ := ParseBatchHeader(stored)
	if !h.LogAppendTime() || h.MaxTimestamp != clock.now().UnixMilli() {
		t.Fatalf("stored header %+v", h)
	}
}

func TestOffsetForTimestampAndMaxTimestamp(t *testing.T) {
	clock := newFakeClock()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 2000
	cfg.IndexIntervalBytes = 64
	for _, codec := range []int{CompressionNone, CompressionZstd} {
		l := openTestLog(t, t.TempDir(), cfg, clock)
		base := clock.now().UnixMilli()
		// Batch i holds records with timestamps base+10i, base+10i+1, base+10i+2,
		// except batch 7 whose middle record carries the largest timestamp.
		for i := range 20 {
			recs := []testRecord{{value: []byte("x"), tsDelta: 0}, {value: []byte("y"), tsDelta: 1}, {value: []byte("z"), tsDelta: 2}}
			if i == 7 {
				recs[1].tsDelta = 1000
			}
			if _, err := l.Append(makeBatch(t, batchSpec{records: recs, baseTs: base + int64(10*i), codec: codec}), AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		cases := []struct{ ts, wantOff, wantTs int64 }{
			{base - 100, 0, base},
			{base + 11, 4, base + 11},
			{base + 13, 6, base + 20},
			{base + 5, 3, base + 10},
			{base + 71, 22, base + 1070}, // inside batch 7, record 1 is the first at or after
		}
		for _, tc := range cases {
			r, err := l.OffsetForTimestamp(tc.ts, l.EndOffset())
			if err != nil || !r.Found || r.Offset != tc.wantOff || r.Timestamp != tc.wantTs {
				t.Fatalf("codec %d OffsetForTimestamp(%d) = %+v, %v; want offset %d ts %d", codec, tc.ts-base, r, err, tc.wantOff, tc.wantTs-base)
			}
		}
		if r, _ := l.OffsetForTimestamp(base+5000, l.EndOffset()); r.Found {
			t.Fatalf("found %+v past every timestamp", r)
		}
		if r, _ := l.OffsetForTimestamp(base+71, 21); r.Found {
			t.Fatalf("found %+v above the high watermark", r)
		}
		m, err := l.MaxTimestamp(l.EndOffset())
		if err != nil || m.Offset != 22 || m.Timestamp != base+1070 {
			t.Fatalf("MaxTimestamp = %+v, %v", m, err)
		}
		l.Close()
	}
}

func TestTruncate(t *testing.T) {
	clock := newFakeClock()
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 700
	cfg.IndexIntervalBytes = 1
	l := openTestLog(t, dir, cfg, clock)
	written := appendN(t, l, clock, 10, 2, 100)
	// Offset 9 is inside batch 4 (offsets 8-9): the log ends at 8.
	if err := l.Truncate(9); err != nil {
		t.Fatal(err)
	}
	if l.EndOffset() != 8 {
		t.Fatalf("end offset %d after truncating to 9, want 8", l.EndOffset())
	}
	more := appendN(t, l, clock, 2, 2, 50)
	l.Close()
	l = openTestLog(t, dir, cfg, clock)
	defer l.Close()
	got := readAll(t, l, 0)
	want := append(append([][]byte{}, written[:4]...), more...)
	if len(got) != len(want) {
		t.Fatalf("%d batches after truncate+append+reopen, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
	// Truncating below the first segment restarts the log.
	if err := l.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if l.EndOffset() != 0 || l.StartOffset() != 0 || l.Size() != 0 {
		t.Fatalf("after truncate to 0: end %d start %d size %d", l.EndOffset(), l.StartOffset(), l.Size())
	}
}

func TestRetention(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 700
	cfg.FileDeleteDelay = 0
	t.Run("time", func(t *testing.T) {
		clock := newFakeClock()
		c := cfg
		c.RetentionTime = time.Hour
		l := openTestLog(t, t.TempDir(), c, clock)
		defer l.Close()
		appendN(t, l, clock, 6, 2, 100) // 2 per segment
		clock.add(2 * time.Hour)
		appendN(t, l, clock, 1, 2, 100) // fresh data stays
		n, err := l.EnforceRetention(l.EndOffset())
		if err != nil || n != 3 {
			t.Fatalf("deleted %d segments, %v; want 3", n, err)
		}
		if l.StartOffset() != 12 {
			t.Fatalf("log start %d, want 12", l.StartOffset())
		}
		if _, err := l.Read(nil, 0, 100, l.EndOffset()); !errors.Is(err, kerr.OffsetOutOfRange) {
			t.Fatalf("read below log start: %v", err)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		clock := newFakeClock()
		c := cfg
		c.RetentionBytes = 1000
		l := openTestLog(t, t.TempDir(), c, clock)
		defer l.Close()
		appendN(t, l, clock, 8, 2, 100)
		n, err := l.EnforceRetention(l.EndOffset())
		if err != nil || n != 2 || l.Size() > 1200 {
			t.Fatalf("deleted %d, size %d, %v", n, l.Size(), err)
		}
	})
	t.Run("not past high watermark", func(t *testing.T) {
		clock := newFakeClock()
		c := cfg
		c.RetentionBytes = 0
		l := openTestLog(t, t.TempDir(), c, clock)
		defer l.Close()
		appendN(t, l, clock, 6, 2, 100)
		if n, _ := l.EnforceRetention(4); n != 1 {
			t.Fatalf("deleted %d segments with high watermark 4, want 1", n)
		}
	})
}

func TestAdvanceStartOffsetSurvivesReopen(t *testing.T) {
	clock := newFakeClock()
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 700
	l := openTestLog(t, dir, cfg, clock)
	appendN(t, l, clock, 6, 2, 100)
	if _, err := l.AdvanceStartOffset(20, 12); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("past high watermark: %v", err)
	}
	start, err := l.AdvanceStartOffset(5, 12)
	if err != nil || start != 5 {
		t.Fatalf("start %d, %v", start, err)
	}
	crash(l)
	l = openTestLog(t, dir, cfg, clock)
	defer l.Close()
	if l.StartOffset() != 5 {
		t.Fatalf("log start %d after reopen, want 5", l.StartOffset())
	}
	if b, err := l.ReadBytes(5, 1, 12); err != nil || len(b) == 0 {
		t.Fatalf("read at start: %v", err)
	}
}

// syncModes are the two ways a log gets its background work done: its
// own Syncer, or one shared with other logs. Durability tests run in both.
var syncModes = []struct {
	name string
	opts func(t testing.TB) Options
}{
	{"private", func(testing.TB) Options { return Options{} }},
	{"shared", func(t testing.TB) Options {
		s := NewSyncer(2)
		t.Cleanup(func() { s.Close() })
		return Options{Syncer: s}
	}},
}

// openLogs opens n logs in subdirectories of one temporary directory with
// the same options; Cleanup closes them before anything registered
// earlier (such as their Syncer).
func openLogs(t testing.TB, n int, cfg Config, opts Options) []*Log {
	t.Helper()
	return openWith(t, t.TempDir(), n, cfg, opts)
}

func TestGroupCommitSharesFsyncs(t *testing.T) {
	for _, mode := range syncModes {
		t.Run(mode.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.SyncBeforeAck = true
			opts := mode.opts(t)
			opts.Now = newFakeClock().now
			nlogs := 1
			if opts.Syncer != nil {
				nlogs = 6
			}
			checkGroupCommit(t, openLogs(t, nlogs, cfg, opts), 8, 40)
		})
	}
}

// checkGroupCommit runs writers concurrent appenders on every log, each
// waiting for its batch to be durable, and checks that every wait was
// honest and that waiters shared fsyncs on every log.
//
// Whether waiters meet at an fsync is up to the scheduler: on a busy
// machine the writers can run one after another, each alone with its own
// fsync. So each log's fsyncs wait until every writer has made its first
// append: the pass after the first one finds them all waiting, and a log
// that then fsyncs once per append has no group commit.
func checkGroupCommit(t *testing.T, logs []*Log, writers, each int) {
	t.Helper()
	firsts := make([]func(), len(logs))
	for i, l := range logs {
		var appended atomic.Int32
		all := make(chan struct{})
		firsts[i] = func() {
			if appended.Add(1) == int32(writers) {
				close(all)
			}
		}
		l.env().fsync = func(f *os.File) error {
			select {
			case <-all:
			case <-time.After(10 * time.Second):
			}
			return f.Sync()
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers*len(logs))
	for i, l := range logs {
		for range writers {
			wg.Go(func() {
				for n := range each {
					res, err := l.Append(simpleBatch(t, 1, testNow.UnixMilli(), 50), AppendOptions{})
					if n == 0 {
						firsts[i]()
					}
					if err == nil {
						err = l.WaitDurable(context.Background(), res.LastOffset+1)
					}
					if err == nil && l.DurableOffset() <= res.LastOffset {
						err = errors.New("WaitDurable returned before the batch was durable")
					}
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	appends := int64(writers * each)
	for i, l := range logs {
		if l.DurableOffset() != appends {
			t.Fatalf("log %d: durable offset %d, want %d", i, l.DurableOffset(), appends)
		}
		// Without group commit every acknowledged append costs an fsync.
		if f := l.Fsyncs(); f >= appends {
			t.Fatalf("log %d: %d fsyncs for %d appends: waiters did not share them", i, f, appends)
		}
		t.Logf("log %d: %d appends, %d fsyncs", i, appends, l.Fsyncs())
	}
}

func TestFlushMessagesAndFlushMs(t *testing.T) {
	for _, mode := range syncModes {
		t.Run(mode.name, func(t *testing.T) {
			// A shared Syncer serves many logs at once; a private one, one.
			nlogs := 1
			if mode.name == "shared" {
				nlogs = 50
			}
			t.Run("flush.messages", func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.FlushMessages = 10
				opts := mode.opts(t)
				opts.Now = newFakeClock().now
				for _, l := range openLogs(t, nlogs, cfg, opts) {
					for range 10 {
						if _, err := l.Append(simpleBatch(t, 1, testNow.UnixMilli(), 5), AppendOptions{}); err != nil {
							t.Fatal(err)
						}
					}
					eventually(t, 5*time.Second, func() bool { return l.DurableOffset() == 10 })
				}
			})
			t.Run("flush.ms", func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.FlushInterval = 5 * time.Millisecond
				opts := mode.opts(t)
				opts.Now = time.Now
				logs := openLogs(t, nlogs, cfg, opts)
				for _, l := range logs {
					if _, err := l.Append(simpleBatch(t, 3, time.Now().UnixMilli(), 5), AppendOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				for _, l := range logs {
					eventually(t, 5*time.Second, func() bool { return l.DurableOffset() == 3 })
					eventually(t, 5*time.Second, func() bool {
						ck, ok := readCheckpoint(l.Dir())
						return ok && ck.recoveryPoint == 3
					})
				}
			})
			t.Run("default relies on page cache", func(t *testing.T) {
				opts := mode.opts(t)
				opts.Now = newFakeClock().now
				for _, l := range openLogs(t, nlogs, DefaultConfig(), opts) {
					appendN(t, l, newFakeClock(), 5, 1, 5)
					if l.DurableOffset() != 0 {
						t.Fatalf("durable %d without any flush setting", l.DurableOffset())
					}
				}
			})
		})
	}
}

func TestGuardAbortsAppend(t *testing.T) {
	l := openTestLog(t, t.TempDir(), DefaultConfig(), newFakeClock())
	defer l.Close()
	boom := errors.New("duplicate")
	_, err := l.Append(simpleBatch(t, 1, testNow.UnixMilli(), 5), AppendOptions{Guard: func(BatchInfo, int64) error { return boom }})
	if !errors.Is(err, boom) || l.EndOffset() != 0 || l.Size() != 0 {
		t.Fatalf("err %v end %d size %d", err, l.EndOffset(), l.Size())
	}
}

func TestRejectedBatchLeavesLogUntouched(t *testing.T) {
	l := openTestLog(t, t.TempDir(), DefaultConfig(), newFakeClock())
	defer l.Close()
	appendN(t, l, newFakeClock(), 1, 1, 5)
	b := simpleBatch(t, 1, testNow.UnixMilli(), 5)
	b[len(b)-1] ^= 1
	if _, err := l.Append(b, AppendOptions{}); !errors.Is(err, kerr.CorruptMessage) {
		t.Fatalf("err %v", err)
	}
	if l.EndOffset() != 1 || l.Size() != int64(len(b)) {
		t.Fatalf("log changed: end %d size %d", l.EndOffset(), l.Size())
	}
}

func eventually(t testing.TB, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(2 * time.Millisecond)
	}
}
