package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kerr"
)

// lazyDir is a partition directory that does not exist yet.
func lazyDir(t *testing.T) string {
	return filepath.Join(t.TempDir(), "topic-0")
}

func mustNotExist(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s exists (or stat failed: %v); a never-written lazy log must leave nothing on disk", dir, err)
	}
}

func openLazy(t *testing.T, dir string, cfg Config, opts Options) *Log {
	t.Helper()
	opts.Lazy = true
	if opts.Now == nil {
		opts.Now = newFakeClock().now
	}
	l, err := Open(dir, cfg, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

func TestLazyOpenCreatesNothingAndStartsNoGoroutine(t *testing.T) {
	for _, mode := range syncModes {
		t.Run(mode.name, func(t *testing.T) {
			opts := mode.opts(t)
			root := t.TempDir()
			before := runtime.NumGoroutine()
			const n = 200
			logs := make([]*Log, n)
			for i := range logs {
				logs[i] = openLazy(t, filepath.Join(root, "p", strconv.Itoa(i)), DefaultConfig(), opts)
			}
			if after := runtime.NumGoroutine(); after-before >= n {
				t.Fatalf("%d lazy logs added %d goroutines", n, after-before)
			}
			for _, l := range logs {
				if l.env().private && l.env().syncer.started {
					t.Fatal("private syncer of a never-written lazy log was started")
				}
			}
			for _, l := range logs {
				if err := l.Close(); err != nil {
					t.Fatalf("Close: %v", err)
				}
			}
			mustNotExist(t, filepath.Join(root, "p"))
		})
	}
}

func TestLazyUnwrittenBehavesAsEmpty(t *testing.T) {
	dir := lazyDir(t)
	l := openLazy(t, dir, DefaultConfig(), Options{})
	ctx := context.Background()
	checks := []struct {
		name string
		fn   func() error
	}{
		{"offsets and size", func() error {
			if l.EndOffset() != 0 || l.StartOffset() != 0 || l.Size() != 0 || l.DurableOffset() != 0 || l.Fsyncs() != 0 {
				return errors.New("not an empty log at 0")
			}
			return nil
		}},
		{"read at end", func() error {
			res, err := l.Read(nil, 0, 1<<20, 10)
			if err == nil && (len(res.Ranges) != 0 || res.Bytes != 0) {
				err = errors.New("read returned data")
			}
			return err
		}},
		{"read past end", func() error {
			if _, err := l.ReadBytes(1, 1<<20, 10); !errors.Is(err, kerr.OffsetOutOfRange) {
				return errors.New("want OFFSET_OUT_OF_RANGE")
			}
			return nil
		}},
		{"timestamps", func() error {
			r, err := l.OffsetForTimestamp(0, 10)
			if err == nil && (r.Found || r.Offset != -1) {
				err = errors.New("OffsetForTimestamp found a record")
			}
			if err != nil {
				return err
			}
			r, err = l.MaxTimestamp(10)
			if err == nil && (r.Found || r.Offset != -1) {
				err = errors.New("MaxTimestamp found a record")
			}
			return err
		}},
		{"scan headers", func() error {
			return l.ScanHeaders(0, func(BatchHeader) bool { panic("no batch expected") })
		}},
		{"retention", func() error {
			n, err := l.EnforceRetention(10)
			if err == nil && n != 0 {
				err = errors.New("deleted segments")
			}
			return err
		}},
		{"advance start", func() error {
			if s, err := l.AdvanceStartOffset(0, 0); err != nil || s != 0 {
				return errors.New("AdvanceStartOffset(0) changed the log")
			}
			if _, err := l.AdvanceStartOffset(1, 1); !errors.Is(err, kerr.OffsetOutOfRange) {
				return errors.New("AdvanceStartOffset past the end must fail")
			}
			return nil
		}},
		{"truncate", func() error {
			if err := l.Truncate(0); err != nil {
				return err
			}
			return l.Truncate(-1)
		}},
		{"flush, config, wait", func() error {
			if err := l.Flush(); err != nil {
				return err
			}
			if err := l.SetConfig(DefaultConfig()); err != nil {
				return err
			}
			return l.WaitDurable(ctx, 0)
		}},
	}
	for _, c := range checks {
		if err := c.fn(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		mustNotExist(t, dir)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	mustNotExist(t, dir)
	if err := l.WaitDurable(ctx, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitDurable after Close: %v", err)
	}
}

func TestLazyFirstWriteCreates(t *testing.T) {
	first := simpleBatch(t, 3, testNow.UnixMilli(), 10)
	cases := []struct {
		name   string
		cfg    func(*Config)
		append func(t *testing.T, l *Log) []byte
	}{
		{"Append", nil, func(t *testing.T, l *Log) []byte {
			b := bytes.Clone(first)
			if _, err := l.Append(b, AppendOptions{LeaderEpoch: 2}); err != nil {
				t.Fatal(err)
			}
			return b
		}},
		{"Append with SyncBeforeAck", func(c *Config) { c.SyncBeforeAck = true }, func(t *testing.T, l *Log) []byte {
			b := bytes.Clone(first)
			res, err := l.Append(b, AppendOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.WaitDurable(t.Context(), res.LastOffset+1); err != nil {
				t.Fatal(err)
			}
			return b
		}},
		{"AppendReplicated", nil, func(t *testing.T, l *Log) []byte {
			if end, err := l.AppendReplicated(first); err != nil || end != 3 {
				t.Fatalf("AppendReplicated: end %d, %v", end, err)
			}
			return first
		}},
	}
	for _, mode := range syncModes {
		for _, c := range cases {
			t.Run(mode.name+"/"+c.name, func(t *testing.T) {
				cfg := DefaultConfig()
				if c.cfg != nil {
					c.cfg(&cfg)
				}
				dir := lazyDir(t)
				opts := mode.opts(t)
				l := openLazy(t, dir, cfg, opts)
				written := c.append(t, l)
				if _, err := os.Stat(filepath.Join(dir, "00000000000000000000.log")); err != nil {
					t.Fatalf("after the first write: %v", err)
				}
				// The checkpoint comes with the first flush (the Syncer's
				// pass, Flush, WaitDurable, Close).
				if err := l.Flush(); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(filepath.Join(dir, checkpointFile)); err != nil {
					t.Fatalf("after the first flush: %v", err)
				}
				if got := readAll(t, l, 0); len(got) != 1 || !bytes.Equal(got[0], written) {
					t.Fatal("read back differs from what was written")
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				// Reopening, lazily or not, is ordinary recovery.
				for i, lazy := range []bool{true, false} {
					opts.Lazy = lazy
					l, err := Open(dir, cfg, opts)
					if err != nil {
						t.Fatal(err)
					}
					// Each round appended one more record.
					if got := readAll(t, l, 0); len(got) != 1+i || !bytes.Equal(got[0], written) || l.EndOffset() != int64(3+i) {
						t.Fatalf("lazy=%v: reopened log differs", lazy)
					}
					appendN(t, l, newFakeClock(), 1, 1, 1)
					if err := l.Close(); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}

func TestLazyRejectedWriteCreatesNothing(t *testing.T) {
	dir := lazyDir(t)
	l := openLazy(t, dir, DefaultConfig(), Options{})
	defer l.Close()
	guard := func(BatchInfo, int64) error { return errors.New("duplicate") }
	if _, err := l.Append(simpleBatch(t, 1, testNow.UnixMilli(), 5), AppendOptions{Guard: guard}); err == nil {
		t.Fatal("guard did not abort")
	}
	corrupt := simpleBatch(t, 1, testNow.UnixMilli(), 5)
	corrupt[len(corrupt)-1] ^= 1
	if _, err := l.Append(corrupt, AppendOptions{}); !errors.Is(err, kerr.CorruptMessage) {
		t.Fatalf("corrupt batch: %v", err)
	}
	early := simpleBatch(t, 1, testNow.UnixMilli(), 5)
	for i := range 8 {
		early[i] = 0xff // base offset -1: before the log end
	}
	if _, err := l.AppendReplicated(early); err == nil {
		t.Fatal("replicated batch at -1 accepted by an empty log")
	}
	mustNotExist(t, dir)
}

// An existing directory opens as usual under Lazy, even an empty one: the
// first segment is created at once.
func TestLazyExistingDirectoryRecovers(t *testing.T) {
	dir := t.TempDir()
	l := openLazy(t, dir, DefaultConfig(), Options{})
	defer l.Close()
	if _, err := os.Stat(filepath.Join(dir, "00000000000000000000.log")); err != nil {
		t.Fatalf("existing directory not opened as usual: %v", err)
	}
	if l.env().private && !l.env().syncer.started {
		t.Fatal("private syncer not started for an existing directory")
	}
}

func TestSplitDirRoundTrips(t *testing.T) {
	for _, dir := range []string{"/d/orders-7", "/d/orders-0", "/d/orders-07", "/d/orders", "/d/t-123456789", "/d/t-1234567890", "9", ""} {
		if got := splitDir(dir).String(); got != dir {
			t.Errorf("splitDir(%q) = %q", dir, got)
		}
	}
	if a, b := splitDir("/d/x-1"), splitDir("/d/x-2"); a.prefix != b.prefix {
		t.Error("partitions of one topic do not share their prefix")
	}
}

// TestNeverWrittenLogsLeaveTheEmptyBodyAlone: never-written lazy logs
// share emptyBody; every call a broker makes on a partition nobody
// writes, from many goroutines at once (the race detector watches), must
// leave it as it was, and each log still reads as empty at offset 0.
func TestNeverWrittenLogsLeaveTheEmptyBodyAlone(t *testing.T) {
	state := func() string {
		b := emptyBody
		return fmt.Sprint(b.dir, b.producers == nil, b.hw.Load(), len(b.segs), b.recoveryPoint, b.openHW, b.ckptHW, b.syncAsked.Load(), b.unflushed, len(b.toFlush),
			len(b.retired), b.truncations, b.truncatedTo, b.armed, b.stopped, len(b.unreplicated), len(b.snapBuf),
			b.durable.Load(), b.durableCh == nil, b.fsyncs.Load(), b.sync, b.lastFlush, b.lastCkpt)
	}
	before := state()
	root := t.TempDir()
	syncer := NewSyncer(2)
	defer syncer.Close()
	env := NewEnv(Options{Syncer: syncer})
	txnEnv := NewEnv(Options{Syncer: syncer, Producers: func() ProducerState { return idleProducers{} }}) // topics with transactions
	var wg sync.WaitGroup
	for i := range 8 {
		opts := Options{Env: env, Lazy: true}
		if i%2 == 0 {
			opts.Env = txnEnv
		}
		l, err := Open(filepath.Join(root, "t-"+strconv.Itoa(i)), DefaultConfig(), opts)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for range 20 {
				l.NoteHighWatermark(0)
				_ = l.SetConfig(DefaultConfig())
				_, _ = l.Read(nil, 0, 1<<20, 0)
				_, _ = l.ReadIsolated(nil, 0, 1<<20, 0, ReadCommitted)
				_ = l.AbortedTransactions(0, 10)
				_ = l.LastStableOffset(0)
				_ = l.DescribeProducers()
				_ = l.ExpireProducers()
				_, _ = l.CleanerView()
				_, _ = l.EachCleanableBatch(0, 10, nil, func(int64, []byte) error { return nil })
				_, _ = l.NewCleanedSegment(0, 1)
				_ = l.ScanHeaders(0, func(BatchHeader) bool { return true })
				_ = l.ScanMarkers(0, func(*BatchHeader, *Marker) bool { return true })
				_, _ = l.OffsetForTimestamp(0, 0)
				_, _ = l.MaxTimestamp(0)
				_ = l.Truncate(0)
				_, _ = l.AdvanceStartOffset(0, 0)
				_, _ = l.EnforceRetention(0)
				_ = l.Flush()
				_ = l.WaitDurable(ctx, 0)
				_, _, _, _ = l.Size(), l.Fsyncs(), l.DurableOffset(), l.Dir()
			}
			if l.EndOffset() != 0 || l.StartOffset() != 0 || l.live() {
				t.Errorf("a never-written log moved: end %d start %d", l.EndOffset(), l.StartOffset())
			}
			if err := l.Close(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if after := state(); after != before {
		t.Fatalf("emptyBody changed:\n%s\n%s", before, after)
	}
	mustNotExist(t, filepath.Join(root, "t-0"))
}

// idleProducers is a ProducerState with no producer.
type idleProducers struct{}

func (idleProducers) Apply(*BatchHeader, *Marker) (CompletedTxn, bool) { return CompletedTxn{}, false }
func (idleProducers) FirstUnstableOffset() int64                       { return -1 }
func (idleProducers) Reset()                                           {}
func (idleProducers) AppendSnapshot(dst []byte) []byte                 { return dst }
func (idleProducers) LoadSnapshot([]byte) error                        { return nil }
func (idleProducers) ExpireProducers() int                             { return 0 }
func (idleProducers) Describe() []ProducerInfo                         { return nil }

// TestNeverWrittenLogKeepsItsNotedHighWatermark: a never-written log
// keeps the high watermark noted (none, or 0, all it can have) in a
// flag rather than the shared body; the checkpoint its first flush
// writes holds it, so a log that crashes right after that reopens with
// it.
func TestNeverWrittenLogKeepsItsNotedHighWatermark(t *testing.T) {
	for _, tc := range []struct {
		name  string
		noted []int64
		want  int64
		ok    bool
	}{
		{"none noted", nil, -1, false},
		{"0 noted", []int64{0}, 0, true},
		{"0 then none", []int64{0, -1}, -1, false},
		{"none then 0", []int64{-1, 0}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := lazyDir(t)
			clock := newFakeClock()
			l := openLazy(t, dir, DefaultConfig(), Options{Now: clock.now})
			for _, hw := range tc.noted {
				l.NoteHighWatermark(hw)
			}
			if got := emptyBody.hw.Load(); got != -1 {
				t.Fatalf("the shared body's high watermark is %d", got)
			}
			appendN(t, l, clock, 1, 2, 10)
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			crash(l)
			l = openTestLog(t, dir, DefaultConfig(), clock)
			defer l.Close()
			if hw, ok := l.CheckpointedHighWatermark(); hw != tc.want || ok != tc.ok {
				t.Fatalf("checkpointed high watermark %d, %v; want %d, %v", hw, ok, tc.want, tc.ok)
			}
		})
	}
}

// countingProducers is a producer state that counts the batches applied
// to it; its maker counts the states made.
type countingProducers struct {
	idleProducers
	applied *int
}

func (c countingProducers) Apply(*BatchHeader, *Marker) (CompletedTxn, bool) {
	*c.applied++
	return CompletedTxn{}, false
}

// TestLazyLogMakesItsProducerStateOnFirstUse: a never-written lazy log
// holds no producer state (the reads of it answer as for an empty one);
// the first call of Producers makes it, once, with no file, and the
// first append then applies its batch to that same state; Truncate
// FullyAndStartAt after that starts the log where asked. A log opened on
// a directory makes its state at Open.
func TestLazyLogMakesItsProducerStateOnFirstUse(t *testing.T) {
	for _, first := range []string{"Producers", "Append", "TruncateFullyAndStartAt"} {
		t.Run(first, func(t *testing.T) {
			made, applied := 0, 0
			syncer := NewSyncer(1)
			defer syncer.Close()
			env := NewEnv(Options{Now: newFakeClock().now, Syncer: syncer, Producers: func() ProducerState {
				made++
				return countingProducers{applied: &applied}
			}})
			dir := lazyDir(t)
			l := openLazy(t, dir, DefaultConfig(), Options{Env: env})
			_ = l.DescribeProducers()
			_ = l.ExpireProducers()
			_ = l.LastStableOffset(0)
			if !l.TracksTransactions() || made != 0 {
				t.Fatalf("before any use: tracks %v, %d states made; want true, 0", l.TracksTransactions(), made)
			}
			switch first {
			case "Producers":
				st := l.Producers()
				if st == nil || l.Producers() != st || made != 1 {
					t.Fatalf("Producers: %v, %d states made; want one state, kept", st, made)
				}
				mustNotExist(t, dir)
			case "TruncateFullyAndStartAt":
				_ = l.Producers()
				if err := l.TruncateFullyAndStartAt(5); err != nil {
					t.Fatal(err)
				}
				if l.StartOffset() != 5 || l.EndOffset() != 5 {
					t.Fatalf("started at [%d, %d), want [5, 5)", l.StartOffset(), l.EndOffset())
				}
			}
			appendN(t, l, newFakeClock(), 1, 1, 1)
			if made != 1 || applied != 1 {
				t.Fatalf("after the first append: %d states made, %d batches applied; want 1, 1", made, applied)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l, err := Open(dir, DefaultConfig(), Options{Env: env, Lazy: true})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if made != 2 {
				t.Fatalf("a log opened on its directory: %d states made, want 2", made)
			}
		})
	}
}

func TestOpenRefusesProducersBesideAnEnv(t *testing.T) {
	_, err := Open(lazyDir(t), DefaultConfig(), Options{Env: NewEnv(Options{}), Lazy: true, Producers: func() ProducerState { return idleProducers{} }})
	if err == nil {
		t.Fatal("Open took Options.Producers beside an Env, which would ignore it")
	}
}

// TestNeverWrittenLogSize: a never-written log stays in the 48-byte size
// class (its producer state and everything else are in the body it gets
// at its first append): a field added back costs every hosted replica
// 16 B.
func TestNeverWrittenLogSize(t *testing.T) {
	if n := unsafe.Sizeof(Log{}); n > 48 {
		t.Fatalf("Log is %d B, want at most 48", n)
	}
}

// TestFirstAppendLeavesTheDirectoryToTheFlush: the first append makes
// the directory and its segment, and leaves the checkpoint and the
// directories' fsyncs to the next flush (they were three fsyncs on the
// append's path, paid one after another by a follower catching up on
// thousands of new partitions). Nothing counts durable before they are
// done: WaitDurable returns with the checkpoint written. A crash before
// that flush leaves a directory without a checkpoint, which reopens with
// every record, recovered from its segment, and no high watermark.
func TestFirstAppendLeavesTheDirectoryToTheFlush(t *testing.T) {
	for _, mode := range syncModes {
		t.Run(mode.name+"/durable means checkpointed", func(t *testing.T) {
			dir := lazyDir(t)
			l := openLazy(t, dir, DefaultConfig(), mode.opts(t))
			defer l.Close()
			res, err := l.Append(simpleBatch(t, 2, testNow.UnixMilli(), 10), AppendOptions{LeaderEpoch: 1})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.WaitDurable(t.Context(), res.LastOffset+1); err != nil {
				t.Fatal(err)
			}
			if _, ok := readCheckpoint(dir); !ok {
				t.Fatal("the first batch is durable but its directory has no checkpoint")
			}
			l.mu.Lock()
			pending := l.dirUnsynced
			l.mu.Unlock()
			if pending {
				t.Fatal("durable with the new directory still marked unsynced")
			}
		})
		t.Run(mode.name+"/crash before the flush", func(t *testing.T) {
			dir := lazyDir(t)
			clock := newFakeClock()
			opts := mode.opts(t)
			opts.Now = clock.now
			l := openLazy(t, dir, DefaultConfig(), opts)
			l.NoteHighWatermark(0)
			written := appendN(t, l, clock, 3, 2, 10)
			l.mu.Lock()
			pending := l.dirUnsynced
			l.mu.Unlock()
			if !pending {
				t.Fatal("the new directory is not left to the flush")
			}
			crash(l)
			_ = os.Remove(filepath.Join(dir, checkpointFile)) // in case a pass ran before the crash
			l = openTestLog(t, dir, DefaultConfig(), clock)
			defer l.Close()
			got := readAll(t, l, 0)
			if len(got) != len(written) {
				t.Fatalf("reopened with %d batches, want %d", len(got), len(written))
			}
			for i := range got {
				if !bytes.Equal(got[i], written[i]) {
					t.Fatalf("batch %d differs after the reopen", i)
				}
			}
			if hw, ok := l.CheckpointedHighWatermark(); ok {
				t.Fatalf("checkpointed high watermark %d without a checkpoint", hw)
			}
		})
	}
}
