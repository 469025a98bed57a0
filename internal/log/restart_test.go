package log

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestTruncateFullyAndStartAt: a follower whose log ends below the
// leader's log start drops its log and starts it, empty, at the leader's
// start; the leader's batches from there append, and the log reopens
// with that start. Both for a log with files and for a lazy log never
// written.
func TestTruncateFullyAndStartAt(t *testing.T) {
	clock := newFakeClock()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 700
	leader := openTestLog(t, t.TempDir(), cfg, clock)
	defer leader.Close()
	written := appendN(t, leader, clock, 10, 2, 100) // offsets 0-19
	from := int64(12)
	tail, err := leader.ReadBytes(from, 1<<20, leader.EndOffset())
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name  string
		setUp func(t *testing.T, dir string) *Log
	}{
		{"with batches", func(t *testing.T, dir string) *Log {
			l := openTestLog(t, dir, cfg, clock)
			head, err := leader.ReadBytes(0, 1<<20, 4) // the first two batches
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.AppendReplicated(head); err != nil {
				t.Fatal(err)
			}
			return l
		}},
		{"lazy, never written", func(t *testing.T, dir string) *Log {
			l, err := Open(dir, cfg, Options{Now: clock.now, Lazy: true})
			if err != nil {
				t.Fatal(err)
			}
			return l
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "t-0")
			l := tc.setUp(t, dir)
			if err := l.TruncateFullyAndStartAt(from); err != nil {
				t.Fatal(err)
			}
			if l.StartOffset() != from || l.EndOffset() != from || l.Size() != 0 {
				t.Fatalf("after the restart: start %d end %d size %d, want %d %d 0", l.StartOffset(), l.EndOffset(), l.Size(), from, from)
			}
			if _, err := l.ReadBytes(0, 1<<20, from); !errors.Is(err, kerr.OffsetOutOfRange) {
				t.Fatalf("read at 0 after the restart: %v, want OFFSET_OUT_OF_RANGE", err)
			}
			if _, err := l.AppendReplicated(tail); err != nil {
				t.Fatalf("appending the leader's batches from %d: %v", from, err)
			}
			l.Close()
			l = openTestLog(t, dir, cfg, clock)
			defer l.Close()
			if l.StartOffset() != from || l.EndOffset() != 20 {
				t.Fatalf("reopened: start %d end %d, want %d 20", l.StartOffset(), l.EndOffset(), from)
			}
			got := readAll(t, l, from)
			want := written[from/2:]
			if len(got) != len(want) {
				t.Fatalf("%d batches read back, want %d", len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("batch %d differs from the leader's", i)
				}
			}
		})
	}
	if err := leader.TruncateFullyAndStartAt(-1); err == nil {
		t.Fatal("a restart at -1 was accepted")
	}
}

// TestStartAtLeavesOtherLazyLogsAtZero: never-written lazy logs share one
// empty body; starting one of them elsewhere, even when its directory
// cannot be made yet, moves that log only. The log keeps its new offsets
// through the failure, and its first append, once the directory can be
// made, lands there.
func TestStartAtLeavesOtherLazyLogsAtZero(t *testing.T) {
	clock := newFakeClock()
	root := t.TempDir()
	syncer := NewSyncer(1)
	defer syncer.Close()
	env := NewEnv(Options{Now: clock.now, Syncer: syncer})
	open := func(dir string) *Log {
		l, err := Open(dir, DefaultConfig(), Options{Env: env, Lazy: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	blocked := filepath.Join(root, "blocked")
	moved, other := open(filepath.Join(blocked, "t-0")), open(filepath.Join(root, "t-1"))
	// The parent of "blocked/t-0" is a file for now: the directory
	// cannot be made.
	if err := os.WriteFile(blocked, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := moved.TruncateFullyAndStartAt(12); err == nil {
		t.Fatal("started a log whose directory cannot be made")
	}
	if moved.StartOffset() != 12 || moved.EndOffset() != 12 {
		t.Fatalf("the started log: start %d end %d, want 12 12", moved.StartOffset(), moved.EndOffset())
	}
	if other.StartOffset() != 0 || other.EndOffset() != 0 {
		t.Fatalf("another never-written log: start %d end %d, want 0 0", other.StartOffset(), other.EndOffset())
	}
	if err := os.Remove(blocked); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(blocked, 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := moved.Append(simpleBatch(t, 2, clock.now().UnixMilli(), 10), AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.BaseOffset != 12 || moved.EndOffset() != 14 {
		t.Fatalf("first append at %d, end %d, want 12 and 14", res.BaseOffset, moved.EndOffset())
	}
}
