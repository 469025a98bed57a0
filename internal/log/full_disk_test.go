package log

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/testfs"
)

// TestFullDisk fills a 2 MiB file system: the append that does not fit
// fails with KAFKA_STORAGE_ERROR at once, leaves the log a valid prefix
// and tells the owner (OnIOError, with ENOSPC); everything appended before
// reads back; with not a byte left a flush fails. When space returns,
// appends and flushes go on, the work of the flush that failed is done
// (every sealed segment has its index), and after a reopen every batch
// appended is there.
func TestFullDisk(t *testing.T) {
	dir := testfs.Small(t, 2<<20)
	cfg := DefaultConfig()
	cfg.SegmentBytes = 256 << 10
	cfg.IndexIntervalBytes = 4096
	var (
		mu     sync.Mutex
		ioErrs []error
	)
	clock := newFakeClock()
	opts := Options{Now: clock.now, OnIOError: func(err error) {
		mu.Lock()
		ioErrs = append(ioErrs, err)
		mu.Unlock()
	}}
	l, err := Open(dir+"/p-0", cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	var stored [][]byte
	var full error
	for i := 0; i < 1000 && full == nil; i++ {
		b := simpleBatch(t, 4, clock.now().UnixMilli(), 8<<10)
		start := time.Now()
		if _, err := l.Append(b, AppendOptions{LeaderEpoch: 1}); err != nil {
			full = err
			if took := time.Since(start); took > time.Second {
				t.Fatalf("the failing append took %v", took)
			}
			break
		}
		stored = append(stored, b)
	}
	if !errors.Is(full, kerr.KafkaStorageError) {
		t.Fatalf("the disk never filled, or the append failed otherwise: %v", full)
	}
	mu.Lock()
	gotENOSPC := len(ioErrs) > 0 && errors.Is(ioErrs[0], syscall.ENOSPC)
	mu.Unlock()
	if !gotENOSPC {
		t.Fatalf("OnIOError got %v, want ENOSPC", ioErrs)
	}
	if got := readAll(t, l, 0); len(got) != len(stored) {
		t.Fatalf("%d batches read back, %d appended", len(got), len(stored))
	}
	// Nothing left at all (a filler takes what the failed append left):
	// the active segment's index cannot be written, so a flush fails.
	filler, err := os.Create(dir + "/filler")
	if err != nil {
		t.Fatal(err)
	}
	for _, werr := filler.Write(make([]byte, 4096)); werr == nil; _, werr = filler.Write(make([]byte, 4096)) {
	}
	filler.Close()
	if err := l.Flush(); err == nil {
		t.Fatal("a flush on a full disk succeeded")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	os.Remove(dir + "/filler")
	testfs.Resize(t, dir, 8<<20)
	for range 20 {
		b := simpleBatch(t, 4, clock.now().UnixMilli(), 8<<10)
		if _, err := l.Append(b, AppendOptions{LeaderEpoch: 1}); err != nil {
			t.Fatalf("append once space returned: %v", err)
		}
		stored = append(stored, b)
	}
	if err := l.WaitDurable(ctx, l.EndOffset()); err != nil {
		t.Fatalf("WaitDurable once space returned: %v", err)
	}
	if err := l.Flush(); err != nil {
		t.Fatalf("flush once space returned: %v", err)
	}
	// The sealed segments' indexes that could not be written are.
	logs, _ := filepath.Glob(dir + "/p-0/*.log")
	for _, f := range logs[:len(logs)-1] {
		if st, err := os.Stat(strings.TrimSuffix(f, ".log") + ".index"); err != nil || st.Size() == 0 {
			t.Fatalf("sealed segment %s has no index after the flush: %v", filepath.Base(f), err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = Open(dir+"/p-0", cfg, Options{Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := readAll(t, l, 0); len(got) != len(stored) {
		t.Fatalf("after a reopen: %d batches, %d appended", len(got), len(stored))
	}
}

// TestFailedFsyncFailsWaiters: a WaitDurable caller whose fsync fails (a
// disk that cannot write back what it accepted: ENOSPC or EIO from
// fsync) gets KAFKA_STORAGE_ERROR at once instead of waiting, the owner
// is told, and once fsyncs work again the same offset becomes durable.
func TestFailedFsyncFailsWaiters(t *testing.T) {
	clock := newFakeClock()
	var told atomic.Int32
	cfg := DefaultConfig()
	cfg.BackgroundSync = false
	l, err := Open(t.TempDir(), cfg, Options{Now: clock.now, OnIOError: func(err error) {
		if errors.Is(err, syscall.EIO) {
			told.Add(1)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var failing atomic.Bool
	failing.Store(true)
	l.env().fsync = func(f *os.File) error {
		if failing.Load() {
			return &os.PathError{Op: "fsync", Path: f.Name(), Err: syscall.EIO}
		}
		return f.Sync()
	}
	appendN(t, l, clock, 3, 2, 100)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := l.WaitDurable(ctx, l.EndOffset()); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("WaitDurable with failing fsyncs: %v after %v", err, time.Since(start))
	}
	// The syncer wakes the waiters, then tells the owner: give it a moment.
	for deadline := time.Now().Add(5 * time.Second); told.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if told.Load() == 0 {
		t.Fatal("the owner was not told of the failed fsync")
	}
	failing.Store(false)
	if err := l.WaitDurable(ctx, l.EndOffset()); err != nil {
		t.Fatalf("WaitDurable once fsyncs work: %v", err)
	}
}
