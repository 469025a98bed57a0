package logdir

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/testfs"
)

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not true after 5s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A failure takes the directory offline once (one OnChange, Err a
// KAFKA_STORAGE_ERROR naming the cause); it stays offline while the probe
// fails and comes back when it succeeds; errors that say nothing about
// the disk are ignored; it can fail again after coming back.
func TestOfflineAndBack(t *testing.T) {
	var healthy atomic.Bool
	var mu sync.Mutex
	var changes []bool
	d := New(Config{Path: t.TempDir(), Interval: 5 * time.Millisecond,
		OnChange: func(online bool) { mu.Lock(); changes = append(changes, online); mu.Unlock() },
		probe: func(string, int64) error {
			if healthy.Load() {
				return nil
			}
			return errors.New("still full")
		}})
	defer d.Close()
	seen := func() []bool { mu.Lock(); defer mu.Unlock(); return append([]bool(nil), changes...) }

	d.Failed(os.ErrClosed)
	d.Failed(nil)
	if !d.Online() {
		t.Fatal("offline after errors that say nothing about the disk")
	}
	d.Failed(&os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC})
	d.Failed(&os.PathError{Op: "write", Path: "y", Err: syscall.EIO})
	err := d.Err()
	if !errors.Is(err, kerr.KafkaStorageError) || !errors.Is(d.err, syscall.ENOSPC) {
		t.Fatalf("Err %v, cause %v", err, d.err)
	}
	time.Sleep(30 * time.Millisecond) // probes fail meanwhile
	if d.Online() {
		t.Fatal("online while the probe fails")
	}
	healthy.Store(true)
	eventually(t, "back online", d.Online)
	eventually(t, "told twice", func() bool { return len(seen()) == 2 })
	if got := seen(); got[0] || !got[1] {
		t.Fatalf("changes %v, want [false true]", got)
	}
	healthy.Store(false)
	d.Failed(syscall.EIO)
	if d.Online() {
		t.Fatal("a second failure did not take it offline")
	}
	d.Close()
	d.Failed(syscall.EIO) // after Close: no goroutine, no panic
}

// The real probe: refused while the file system has less than MinFree,
// accepted once it grows.
func TestProbe(t *testing.T) {
	dir := testfs.Small(t, 1<<20)
	if err := probe(dir, 2<<20); err == nil {
		t.Fatal("a 1 MiB file system passed a 2 MiB probe")
	}
	testfs.Resize(t, dir, 4<<20)
	if err := probe(dir, 2<<20); err != nil {
		t.Fatalf("probe after growing: %v", err)
	}
	if _, err := os.Stat(dir + "/" + probeFile); !os.IsNotExist(err) {
		t.Fatalf("the probe file stayed: %v", err)
	}
}

// Running out of file descriptors (EMFILE for the process, ENFILE for the
// system) says nothing about the disk: the directory stays online, as
// the controller scenario at 50,000 partitions needed (each EMFILE took
// the directory offline and the broker asked to be fenced).
func TestOutOfDescriptorsKeepsDirectoryOnline(t *testing.T) {
	changed := 0
	d := New(Config{Path: t.TempDir(), OnChange: func(bool) { changed++ }})
	defer d.Close()
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE} {
		d.Failed(&os.PathError{Op: "open", Path: "checkpoint.tmp", Err: errno})
	}
	if !d.Online() || changed != 0 {
		t.Fatalf("online %v after running out of descriptors, %d changes", d.Online(), changed)
	}
	d.Failed(&os.PathError{Op: "write", Path: "x.log", Err: syscall.EIO})
	if d.Online() {
		t.Fatal("an I/O error left the directory online")
	}
}
