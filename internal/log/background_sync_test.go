package log

import (
	"context"
	"testing"
	"time"
)

// writtenLog opens a log with BackgroundSync as given and appends n
// one-record batches, leaving no pass asked for (the first append's
// segment creation asks for one; the tests want unasked passes).
func writtenLog(t *testing.T, bg bool, n int) (*Log, *fakeClock, string) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.BackgroundSync = bg
	clock := newFakeClock()
	dir := t.TempDir()
	l := openTestLog(t, dir, cfg, clock)
	t.Cleanup(func() { l.Close() })
	appendN(t, l, clock, n, 1, 10)
	l.syncAsked.Store(false)
	return l, clock, dir
}

// With BackgroundSync off, a pass of the Syncer that nobody asked for
// fsyncs nothing and claims nothing durable; a waiter, Flush and Close
// still fsync. With it on (the default) the same pass fsyncs.
func TestBackgroundSync(t *testing.T) {
	for _, bg := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[bg], func(t *testing.T) {
			l, clock, dir := writtenLog(t, bg, 3)
			// Unsynced data brings the next pass within a second only
			// with background sync on.
			l.mu.Lock()
			next := l.nextPassLocked(clock.now(), l.cfg.Load())
			l.mu.Unlock()
			if (next <= time.Second) != bg {
				t.Fatalf("next pass in %v with unsynced data, background sync %v", next, bg)
			}
			before := l.Fsyncs()
			l.syncPass()
			synced := l.Fsyncs() > before
			if synced != bg {
				t.Fatalf("periodic pass fsynced: %v, want %v", synced, bg)
			}
			if d := l.durable.Load(); (d == l.EndOffset()) != bg {
				t.Fatalf("durable offset %d after the pass (log end %d), background sync %v", d, l.EndOffset(), bg)
			}
			// A waiter is served either way.
			appendN(t, l, clock, 1, 1, 10)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := l.WaitDurable(ctx, l.EndOffset()); err != nil {
				t.Fatalf("WaitDurable: %v", err)
			}
			if ck, ok := readCheckpoint(dir); !ok || ck.recoveryPoint > l.durable.Load() {
				t.Fatalf("checkpoint %+v claims more than the durable offset %d", ck, l.durable.Load())
			}
		})
	}
}

// Without BackgroundSync the recovery point never passes what was
// fsynced: a periodic checkpoint pass over unsynced data keeps it.
func TestCheckpointWithoutBackgroundSyncKeepsRecoveryPoint(t *testing.T) {
	l, _, dir := writtenLog(t, false, 2)
	l.NoteHighWatermark(2)
	if err := l.flush(true, false); err != nil {
		t.Fatal(err)
	}
	ck, ok := readCheckpoint(dir)
	if !ok {
		t.Fatal("no checkpoint")
	}
	if ck.recoveryPoint != 0 || ck.highWatermark != 2 {
		t.Fatalf("checkpoint %+v: want recovery point 0 (nothing fsynced) and high watermark 2", ck)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if ck, _ := readCheckpoint(dir); ck.recoveryPoint != 2 {
		t.Fatalf("after Flush: recovery point %d, want 2", ck.recoveryPoint)
	}
}
