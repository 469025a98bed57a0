package log

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseCheckpoint(t *testing.T) {
	cases := []struct {
		in   string
		want checkpoint
		ok   bool
	}{
		{"v1 10 2\n", checkpoint{10, 2, -1}, true},
		{"v2 10 2 7\n", checkpoint{10, 2, 7}, true},
		{"v2 10 2 -1\n", checkpoint{10, 2, -1}, true},
		{"v2 10 2 12\n", checkpoint{10, 2, 12}, true}, // above the recovery point: the tail was not fsynced yet
		{"v2 10 2\n", checkpoint{}, false},
		{"v1 10 2 7\n", checkpoint{}, false},
		{"v2 10 2 -2\n", checkpoint{}, false},
		{"v2 -1 2 3\n", checkpoint{}, false},
		{"v2 10 x 3\n", checkpoint{}, false},
		{"v3 1 2 3\n", checkpoint{}, false},
		{"", checkpoint{}, false},
	}
	for _, tc := range cases {
		got, ok := parseCheckpoint([]byte(tc.in))
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("parseCheckpoint(%q) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
		if ok {
			if back, ok2 := parseCheckpoint(got.encode()); !ok2 || back != got {
				t.Errorf("round trip of %+v: %+v, %v", got, back, ok2)
			}
		}
	}
}

func FuzzParseCheckpoint(f *testing.F) {
	for _, s := range []string{"v1 10 2\n", "v2 10 2 7\n", "v2 0 0 -1", "v2 9223372036854775807 1 1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, ok := parseCheckpoint(b)
		if !ok {
			return
		}
		if c.recoveryPoint < 0 || c.logStartOffset < 0 || c.highWatermark < -1 {
			t.Fatalf("accepted %+v from %q", c, b)
		}
		if back, ok := parseCheckpoint(c.encode()); !ok || back != c {
			t.Fatalf("round trip of %+v: %+v, %v", c, back, ok)
		}
	})
}

// The high watermark noted before Close comes back after a reopen; a log
// whose checkpoint predates it (version 1) has none.
func TestCheckpointKeepsHighWatermark(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	l := openTestLog(t, dir, DefaultConfig(), clock)
	if _, ok := l.CheckpointedHighWatermark(); ok {
		t.Fatal("a new log has a checkpointed high watermark")
	}
	appendN(t, l, clock, 3, 2, 10)
	l.NoteHighWatermark(4)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, DefaultConfig(), clock)
	if hw, ok := l.CheckpointedHighWatermark(); !ok || hw != 4 {
		t.Fatalf("after reopen: %d, %v; want 4, true", hw, ok)
	}
	// Reopened and closed again without a new note: the value stays.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, DefaultConfig(), clock)
	if hw, ok := l.CheckpointedHighWatermark(); !ok || hw != 4 {
		t.Fatalf("after a second reopen: %d, %v; want 4, true", hw, ok)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, checkpointFile), []byte("v1 6 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, DefaultConfig(), clock)
	defer l.Close()
	if hw, ok := l.CheckpointedHighWatermark(); ok {
		t.Fatalf("a version 1 checkpoint gave high watermark %d", hw)
	}
}

// The periodic flush writes a high watermark that moved without new data.
func TestFlushWritesMovedHighWatermark(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	l := openTestLog(t, dir, DefaultConfig(), clock)
	defer l.Close()
	appendN(t, l, clock, 2, 1, 10)
	if err := l.flush(true, false); err != nil {
		t.Fatal(err)
	}
	l.NoteHighWatermark(2)
	if err := l.flush(true, false); err != nil {
		t.Fatal(err)
	}
	ck, ok := readCheckpoint(dir)
	if !ok || ck.highWatermark != 2 || ck.recoveryPoint != 2 {
		t.Fatalf("checkpoint %+v, %v; want recovery point 2, high watermark 2", ck, ok)
	}
}
