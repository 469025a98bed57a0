package log

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// openFDs counts the process's open file descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count open files without /proc: %v", err)
	}
	return len(ents)
}

// openWith opens n logs under root with opts; Cleanup closes them.
func openWith(t testing.TB, root string, n int, cfg Config, opts Options) []*Log {
	t.Helper()
	logs := make([]*Log, n)
	for i := range logs {
		l, err := Open(filepath.Join(root, strconv.Itoa(i)), cfg, opts)
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		logs[i] = l
	}
	t.Cleanup(func() {
		for _, l := range logs {
			l.Close()
		}
	})
	return logs
}

// A thousand partitions holding data stay under a budget of 50 open
// files through appends, reads, a restart and reads again: without the
// cache each kept its segment open (1,000 descriptors).
func TestManyLogsStayUnderOpenFileBudget(t *testing.T) {
	const n, budget = 1000, 50
	s := NewSyncer(2)
	t.Cleanup(func() { s.Close() })
	cfg := DefaultConfig()
	cfg.BackgroundSync = false
	files := NewFiles(budget, 0)
	root := t.TempDir()
	base := openFDs(t)
	logs := openWith(t, root, n, cfg, Options{Syncer: s, Files: files})
	clock := newFakeClock()
	want := make([][][]byte, n)
	for i, l := range logs {
		want[i] = appendN(t, l, clock, 2, 3, 50)
	}
	check := func(stage string) {
		t.Helper()
		// A few more for an index or checkpoint a Syncer worker writes.
		if got := openFDs(t) - base; got > budget+4 {
			t.Fatalf("%s: %d files open beyond the %d before, budget %d (cache counts %d)", stage, got, base, budget, files.Open())
		}
	}
	check("after appends")
	for i, l := range logs {
		if got := readAll(t, l, 0); !batchesEqual(got, want[i]) {
			t.Fatalf("log %d reads back other bytes", i)
		}
	}
	check("after reads")
	for _, l := range logs {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	check("after close")
	logs = openWith(t, root, n, cfg, Options{Syncer: s, Files: files})
	check("after reopening")
	for i, l := range logs {
		more := appendN(t, l, clock, 1, 2, 50)
		if got := readAll(t, l, 0); !batchesEqual(got, append(want[i], more...)) {
			t.Fatalf("log %d after the restart reads back other bytes", i)
		}
	}
	check("after appends and reads on the reopened logs")
	if files.Evictions() == 0 || files.Reopens() == 0 {
		t.Fatalf("evictions %d, reopens %d: the budget was never used", files.Evictions(), files.Reopens())
	}
}

func batchesEqual(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// A segment whose file the cache closed reads back the same bytes, from
// every segment, through a reopened file.
func TestEvictedSegmentReadsSameBytes(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 1000
	files := NewFiles(1, 0)
	logs := openWith(t, t.TempDir(), 2, cfg, Options{Files: files})
	clock := newFakeClock()
	want := appendN(t, logs[0], clock, 12, 4, 40)
	before := readAll(t, logs[0], 0)
	appendN(t, logs[1], clock, 1, 1, 10) // its file pushes logs[0]'s out
	if files.Evictions() == 0 {
		t.Fatal("nothing was evicted with a budget of one file")
	}
	re := files.Reopens()
	if got := readAll(t, logs[0], 0); !batchesEqual(got, before) || !batchesEqual(got, want) {
		t.Fatal("a reopened segment reads back other bytes")
	}
	if files.Reopens() == re {
		t.Fatal("the read did not reopen an evicted file")
	}
}

// Data appended through a file the cache then closed is fsynced by the
// next flush (through a reopened file), and durable offsets move as
// before: closing a file does not drop the obligation to sync it.
func TestEvictedUnsyncedSegmentIsSyncedByFlush(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BackgroundSync = false
	files := NewFiles(1, 0)
	logs := openWith(t, t.TempDir(), 2, cfg, Options{Files: files})
	clock := newFakeClock()
	var synced []string
	logs[0].env().fsync = func(f *os.File) error {
		synced = append(synced, f.Name())
		return f.Sync()
	}
	appendN(t, logs[0], clock, 3, 2, 50)
	end := logs[0].EndOffset()
	if logs[0].DurableOffset() >= end {
		t.Fatalf("durable %d before any flush, end %d", logs[0].DurableOffset(), end)
	}
	appendN(t, logs[1], clock, 1, 1, 10) // closes logs[0]'s active file
	logs[0].segs[0].h.mu.Lock()
	closed := logs[0].segs[0].h.f == nil
	logs[0].segs[0].h.mu.Unlock()
	if !closed {
		t.Fatal("the unsynced segment's file was not closed")
	}
	if err := logs[0].Flush(); err != nil {
		t.Fatal(err)
	}
	if len(synced) == 0 || logs[0].DurableOffset() != end {
		t.Fatalf("flush after eviction: fsyncs %v, durable %d, end %d", synced, logs[0].DurableOffset(), end)
	}
}

// Appends, reads and evictions on many logs at once: no read in the log
// sees a closed file or other bytes, no append is lost (run with -race).
// The reads (ScanHeaders, MaxTimestamp) do their I/O inside the log, on
// pinned files; a file handed out is covered by the grace period (see
// TestHandedOutFileOutlivesEviction).
func TestConcurrentAppendReadEvict(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 2000
	files := NewFiles(3, 0)
	s := NewSyncer(2)
	t.Cleanup(func() { s.Close() })
	logs := openWith(t, t.TempDir(), 8, cfg, Options{Files: files, Syncer: s})
	clock := newFakeClock()
	const each = 60
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	stop := make(chan struct{})
	for _, l := range logs {
		wg.Go(func() {
			for range each {
				if _, err := l.Append(simpleBatch(t, 2, clock.now().UnixMilli(), 30), AppendOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Go(func() {
			for range each {
				end := l.EndOffset()
				if end == 0 {
					continue
				}
				n, next := 0, int64(0)
				err := l.ScanHeaders(0, func(h BatchHeader) bool {
					if h.BaseOffset != next {
						errs <- fmt.Errorf("batch at %d, expected %d", h.BaseOffset, next)
						return false
					}
					n, next = n+1, h.NextOffset()
					return true
				})
				if err == nil && n == 0 {
					err = errors.New("scan found no batch below a non-zero end")
				}
				if err == nil {
					_, err = l.MaxTimestamp(end)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var shedder sync.WaitGroup
	shedder.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				files.shed()
			}
		}
	})
	wg.Wait()
	close(stop)
	shedder.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, l := range logs {
		if got := len(readAll(t, l, 0)); got != each {
			t.Fatalf("log %d holds %d batches, %d appended", i, got, each)
		}
	}
	if files.Evictions() == 0 {
		t.Fatal("nothing was evicted")
	}
}

// A file a read handed out stays open for the grace period however many
// other files want its place: the fetch sends it after the read returned.
func TestHandedOutFileOutlivesEviction(t *testing.T) {
	files := NewFiles(1, time.Hour)
	files.minGrace = time.Hour // what a file handed out a moment ago has
	logs := openWith(t, t.TempDir(), 3, DefaultConfig(), Options{Files: files})
	clock := newFakeClock()
	want := appendN(t, logs[0], clock, 2, 2, 20)
	res, err := logs[0].Read(nil, 0, 1<<20, logs[0].EndOffset())
	if err != nil || len(res.Ranges) != 1 {
		t.Fatalf("read: %v, %d ranges", err, len(res.Ranges))
	}
	appendN(t, logs[1], clock, 1, 1, 10)
	appendN(t, logs[2], clock, 1, 1, 10)
	files.shed()
	r := res.Ranges[0]
	got := make([]byte, r.Len)
	if _, err := r.File.ReadAt(got, r.Pos); err != nil {
		t.Fatalf("a handed-out file was closed: %v", err)
	}
	if !bytes.Equal(got, append(append([]byte(nil), want[0]...), want[1]...)) {
		t.Fatal("a handed-out range reads other bytes")
	}
}

// When the bound cannot be kept otherwise, a file handed out longer ago
// than minGrace is closed even within the grace: a consumer fetching
// every partition of a broker must not keep all their files open for 30 s.
func TestHandedOutFileClosedPastMinGrace(t *testing.T) {
	files := NewFiles(1, time.Hour)
	files.minGrace = 0 // the hand-out is older than minGrace
	logs := openWith(t, t.TempDir(), 2, DefaultConfig(), Options{Files: files})
	clock := newFakeClock()
	appendN(t, logs[0], clock, 1, 1, 20)
	if _, err := logs[0].Read(nil, 0, 1<<20, logs[0].EndOffset()); err != nil {
		t.Fatal(err)
	}
	appendN(t, logs[1], clock, 1, 1, 10)
	h := logs[0].segs[0].h
	h.mu.Lock()
	open := h.f != nil
	h.mu.Unlock()
	if open || files.Open() > 1 {
		t.Fatalf("handed-out file open %v, %d files open with a budget of 1", open, files.Open())
	}
}

// lowerFileLimit sets the process's soft RLIMIT_NOFILE to room files more
// than are open now, until the test ends.
func lowerFileLimit(t *testing.T, room int) {
	t.Helper()
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	low := rl
	low.Cur = uint64(openFDs(t) + room)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			t.Errorf("restore RLIMIT_NOFILE: %v", err)
		}
	})
}

// Running out of descriptors is not a disk failure: with idle files to
// close the append succeeds (the cache sheds them and retries); without,
// it fails with a retriable error, the owner is not told of an I/O error
// (so the log directory stays online), and once descriptors are back the
// same append works.
func TestOutOfFileDescriptorsIsNotADiskFailure(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BackgroundSync = false
	var told []error
	var mu sync.Mutex
	opts := Options{Files: NewFiles(1000, 0), Lazy: true, OnIOError: func(err error) {
		mu.Lock()
		told = append(told, err)
		mu.Unlock()
	}}
	root := t.TempDir()
	idle := openWith(t, filepath.Join(root, "idle"), 20, cfg, opts)
	clock := newFakeClock()
	for _, l := range idle {
		appendN(t, l, clock, 1, 1, 10)
	}
	fresh := openWith(t, filepath.Join(root, "fresh"), 2, cfg, opts)

	lowerFileLimit(t, -1) // less the descriptor that counted them: none free
	// A first append creates the segment file and writes the checkpoint:
	// both opens need a descriptor the process does not have.
	if _, err := fresh[0].Append(simpleBatch(t, 1, clock.now().UnixMilli(), 10), AppendOptions{}); err != nil {
		t.Fatalf("append with idle files to shed: %v", err)
	}
	for _, l := range idle {
		l.Close()
	}
	lowerFileLimit(t, -10) // more than shedding fresh[0]'s file gives back
	_, err := fresh[1].Append(simpleBatch(t, 1, clock.now().UnixMilli(), 10), AppendOptions{})
	var ke *kerr.Error
	if err == nil || !errors.As(err, &ke) || !ke.Retriable {
		t.Fatalf("append out of descriptors: %v, want a retriable Kafka error", err)
	}
	// A checkpoint the Syncer cannot write for want of a descriptor is
	// no I/O error either (its error keeps the errno under the Kafka
	// code).
	fresh[0].NoteHighWatermark(1)
	fresh[0].lastCkpt = time.Time{} // the checkpoint is due
	fresh[0].syncPass()
	if e := fresh[0].lastSyncErr.Load(); e == nil || !IsFDLimit(*e) {
		t.Fatalf("the checkpoint pass out of descriptors: %v", e)
	}
	mu.Lock()
	if len(told) != 0 {
		t.Fatalf("the owner was told of an I/O error: %v", told)
	}
	mu.Unlock()
	if !IsFDLimit(&os.PathError{Op: "open", Err: syscall.EMFILE}) || IsFDLimit(&os.PathError{Op: "write", Err: syscall.EIO}) {
		t.Fatal("IsFDLimit misclassifies")
	}
	lowerFileLimit(t, 64)
	if _, err := fresh[1].Append(simpleBatch(t, 1, clock.now().UnixMilli(), 10), AppendOptions{}); err != nil {
		t.Fatalf("append once descriptors are back: %v", err)
	}
}

// The default budget is half the soft limit, which Go's runtime has
// raised to the hard limit at start.
func TestDefaultBudgetFollowsRlimit(t *testing.T) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	if rl.Cur != rl.Max {
		t.Fatalf("soft limit %d, hard %d: not raised at start", rl.Cur, rl.Max)
	}
	if got, want := DefaultMaxOpenFiles(), max(int(rl.Cur/2), 64); got != want {
		t.Fatalf("DefaultMaxOpenFiles %d, want %d", got, want)
	}
}
