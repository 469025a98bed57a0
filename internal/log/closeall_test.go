package log

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// closeAllFixture is n written logs under one root, nothing fsynced or
// checkpointed yet (no background sync), with the fsync and syncfs hooks
// of every log's Env recording into a transcript.
type closeAllFixture struct {
	root     string
	logs     []*Log
	ends     []int64
	data     [][][]byte
	fsyncs   int
	calls    []string  // one line per syncfs: what the checkpoints held then
	durables [][]int64 // each log's DurableOffset at each syncfs
}

func newCloseAllFixture(t *testing.T, n int, syncfs func(call int) error) *closeAllFixture {
	t.Helper()
	cfg := DefaultConfig()
	cfg.BackgroundSync = false
	fx := &closeAllFixture{root: t.TempDir()}
	clock := newFakeClock()
	fx.logs = openWith(t, fx.root, n, cfg, Options{Now: clock.now})
	for i, l := range fx.logs {
		fx.data = append(fx.data, appendN(t, l, clock, 3+i, 2, 40))
		fx.ends = append(fx.ends, l.EndOffset())
		l.env().fsync = func(f *os.File) error {
			fx.fsyncs++
			return f.Sync()
		}
		l.env().syncfs = func(dir string) error {
			if dir != fx.root {
				return fmt.Errorf("synced %s, not the logs' filesystem %s", dir, fx.root)
			}
			fx.calls = append(fx.calls, fx.state())
			var ds []int64
			for _, l := range fx.logs {
				ds = append(ds, l.DurableOffset())
			}
			fx.durables = append(fx.durables, ds)
			return syncfs(len(fx.calls))
		}
	}
	return fx
}

// state is what each log's checkpoint and temporary checkpoint hold:
// "-" for no file, else the recovery point.
func (fx *closeAllFixture) state() string {
	var parts []string
	for i := range fx.logs {
		dir := filepath.Join(fx.root, fmt.Sprint(i))
		read := func(name string) string {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				return "-"
			}
			c, ok := parseCheckpoint(b)
			if !ok {
				return "bad"
			}
			return fmt.Sprint(c.recoveryPoint)
		}
		parts = append(parts, read(checkpointFile)+"/"+read(checkpointFile+tmpSuffix))
	}
	return strings.Join(parts, " ")
}

// reopen opens every log again and checks it holds what was written.
func (fx *closeAllFixture) reopen(t *testing.T) {
	t.Helper()
	for i, l := range openWith(t, fx.root, len(fx.logs), DefaultConfig(), Options{}) {
		if l.EndOffset() != fx.ends[i] || !batchesEqual(readAll(t, l, 0), fx.data[i]) {
			t.Fatalf("log %d after CloseAll and Open: end %d, want %d, or other bytes", i, l.EndOffset(), fx.ends[i])
		}
	}
}

// CloseAll syncs the filesystem three times and fsyncs no file: the data
// and indexes are durable before a checkpoint is written, the temporary
// checkpoints before any is renamed into place, the names at the end.
// Each step's checkpoints are the transcript.
func TestCloseAllSharesTheSyncs(t *testing.T) {
	fx := newCloseAllFixture(t, 3, func(int) error { return nil })
	if err := CloseAll(fx.logs, 2); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"0/- 0/- 0/-", // the data's sync: the checkpoints the first appends wrote
		fmt.Sprintf("0/%d 0/%d 0/%d", fx.ends[0], fx.ends[1], fx.ends[2]),
		fmt.Sprintf("%d/- %d/- %d/-", fx.ends[0], fx.ends[1], fx.ends[2]),
	}
	if strings.Join(fx.calls, "\n") != strings.Join(want, "\n") {
		t.Fatalf("syncfs transcript:\n%s\nwant:\n%s", strings.Join(fx.calls, "\n"), strings.Join(want, "\n"))
	}
	if fx.fsyncs != 0 {
		t.Fatalf("%d segment fsyncs, want none (the filesystem syncs cover them)", fx.fsyncs)
	}
	// Nothing counts durable before the first sync, all of it after.
	for i := range fx.logs {
		if before, after := fx.durables[0][i], fx.durables[1][i]; before >= fx.ends[i] || after != fx.ends[i] {
			t.Fatalf("log %d: durable %d at the data's sync and %d after it, want below %d and then %d", i, before, after, fx.ends[i], fx.ends[i])
		}
	}
	for i, l := range fx.logs {
		if _, err := l.Append(simpleBatch(t, 1, testNow.UnixMilli(), 10), AppendOptions{LeaderEpoch: 1}); !errors.Is(err, ErrClosed) {
			t.Fatalf("log %d: append after CloseAll: %v, want ErrClosed", i, err)
		}
	}
	fx.reopen(t)
}

// A failed sync leaves every checkpoint as it was (here: at 0, so the
// next Open scans the logs) and no temporary file behind; CloseAll
// reports the error and the logs are closed all the same.
func TestCloseAllFailedSyncMovesNoCheckpoint(t *testing.T) {
	for _, failAt := range []int{1, 2} {
		t.Run(fmt.Sprintf("sync %d fails", failAt), func(t *testing.T) {
			boom := errors.New("syncfs: input/output error")
			fx := newCloseAllFixture(t, 2, func(call int) error {
				if call == failAt {
					return boom
				}
				return nil
			})
			if err := CloseAll(fx.logs, 2); !errors.Is(err, boom) {
				t.Fatalf("CloseAll: %v, want the sync's error", err)
			}
			if len(fx.calls) != failAt {
				t.Fatalf("%d syncs after the one that failed: %v", len(fx.calls)-failAt, fx.calls)
			}
			if got := fx.state(); got != "0/- 0/-" {
				t.Fatalf("checkpoints after a failed sync: %s, want the old ones (0) and no temporary file", got)
			}
			fx.reopen(t)
		})
	}
}

// Logs a Close already closed are skipped, blank ones need nothing: only
// the others are closed, and no ErrClosed comes back.
func TestCloseAllSkipsClosedLogs(t *testing.T) {
	fx := newCloseAllFixture(t, 2, func(int) error { return nil })
	if err := fx.logs[0].Close(); err != nil {
		t.Fatal(err)
	}
	if fx.fsyncs == 0 {
		t.Fatal("Close fsynced nothing")
	}
	fx.fsyncs = 0
	if err := CloseAll(fx.logs, 2); err != nil {
		t.Fatalf("CloseAll with one log closed: %v", err)
	}
	if fx.fsyncs != 0 || len(fx.calls) != 3 {
		t.Fatalf("fsyncs %d, syncs %d: want 0 and 3", fx.fsyncs, len(fx.calls))
	}
	if got, want := fx.state(), fmt.Sprintf("%d/- %d/-", fx.ends[0], fx.ends[1]); got != want {
		t.Fatalf("checkpoints %s, want %s", got, want)
	}
	fx.reopen(t)
}
