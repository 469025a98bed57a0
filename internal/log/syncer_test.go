package log

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"
)

// timedLen is how many logs the Syncer plans to visit.
func (s *Syncer) timedLen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.timed)
}

// A shared Syncer visits a log only while it has background work; once
// data is flushed and checkpointed the log drops out, and logs never
// written never enter.
func TestSyncerForgetsIdleLogs(t *testing.T) {
	s := NewSyncer(2)
	defer s.Close()
	logs := openLogs(t, 20, DefaultConfig(), Options{Syncer: s, Now: newFakeClock().now})
	if n := s.timedLen(); n != 0 {
		t.Fatalf("%d unwritten logs scheduled", n)
	}
	appendN(t, logs[3], newFakeClock(), 2, 1, 10)
	if n := s.timedLen(); n != 1 {
		t.Fatalf("%d logs scheduled after writing one, want 1", n)
	}
	if err := logs[3].Flush(); err != nil {
		t.Fatal(err)
	}
	// The pass planned by the append finds nothing left and plans no more.
	eventually(t, 10*time.Second, func() bool {
		logs[3].mu.Lock()
		defer logs[3].mu.Unlock()
		return !logs[3].armed && s.timedLen() == 0
	})
}

// Files of deleted segments are closed by the shared Syncer once
// file.delete.delay.ms is over.
func TestSharedSyncerClosesRetiredFiles(t *testing.T) {
	s := NewSyncer(1)
	defer s.Close()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 700
	cfg.FileDeleteDelay = 0
	cfg.RetentionBytes = 0
	clock := newFakeClock()
	l := openLogs(t, 1, cfg, Options{Syncer: s, Now: clock.now})[0]
	appendN(t, l, clock, 6, 2, 100)
	l.mu.Lock()
	first := l.segs[0].h.f
	l.mu.Unlock()
	if n, err := l.EnforceRetention(l.EndOffset()); err != nil || n == 0 {
		t.Fatalf("retention deleted %d: %v", n, err)
	}
	eventually(t, 10*time.Second, func() bool {
		_, err := first.Stat()
		return errors.Is(err, os.ErrClosed)
	})
}

// Closing logs while writers wait on them, and closing the Syncer after
// them, ends every wait (durable or ErrClosed) and leaves no pass running.
func TestSharedSyncerCloseUnderLoad(t *testing.T) {
	s := NewSyncer(2)
	cfg := DefaultConfig()
	cfg.SyncBeforeAck = true
	logs := openLogs(t, 8, cfg, Options{Syncer: s, Now: newFakeClock().now})
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(logs))
	for _, l := range logs {
		for range 4 {
			wg.Go(func() {
				for {
					res, err := l.Append(simpleBatch(t, 1, testNow.UnixMilli(), 20), AppendOptions{})
					if err == nil {
						err = l.WaitDurable(context.Background(), res.LastOffset+1)
					}
					if errors.Is(err, ErrClosed) {
						return
					}
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	// Let some appends through, then close every log at once.
	eventually(t, 10*time.Second, func() bool { return logs[len(logs)-1].DurableOffset() > 10 })
	var closers sync.WaitGroup
	for _, l := range logs {
		closers.Go(func() {
			if err := l.Close(); err != nil {
				errs <- err
			}
		})
	}
	closers.Wait()
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, l := range logs {
		if l.sync.running || l.sync.queued && !l.sync.detached {
			t.Fatalf("log %d still busy in the Syncer", i)
		}
		if err := l.Close(); !errors.Is(err, ErrClosed) {
			t.Fatalf("second Close of log %d: %v", i, err)
		}
	}
}

// A log can outlive its Syncer: its own Flush and Close still make it
// durable.
func TestLogOutlivesSyncer(t *testing.T) {
	s := NewSyncer(1)
	dir := t.TempDir()
	clock := newFakeClock()
	l, err := Open(dir, DefaultConfig(), Options{Syncer: s, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	appendN(t, l, clock, 3, 1, 10)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.WaitDurable(ctx, 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitDurable with nobody syncing: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if ck, ok := readCheckpoint(dir); !ok || ck.recoveryPoint != 3 {
		t.Fatalf("checkpoint %+v %v after Close", ck, ok)
	}
}

// The Syncer's queues without workers: logs that asked go before logs
// whose time came, a log waits once however often it asks, and a log that
// asks during its pass gets another.
func TestSyncerQueueOrder(t *testing.T) {
	s := newSyncer(1) // not started: the test plays the worker
	defer s.Close()
	newLog := func() *Log { return &Log{body: &body{sync: syncState{heapIdx: -1}}} }
	a, b, c := newLog(), newLog(), newLog()
	s.mu.Lock()
	s.enqueueLocked(a, false)
	s.enqueueLocked(b, false)
	s.mu.Unlock()
	s.request(c)
	s.request(b) // moves ahead of a
	s.request(c) // already waiting
	var order []*Log
	for l := s.next(); l != nil; l = s.next() {
		order = append(order, l)
		if l == c && len(order) == 1 {
			s.request(c) // during its pass
		}
		s.finish(l)
	}
	want := []*Log{c, b, c, a} // c asked again after b
	if len(order) != len(want) {
		t.Fatalf("%d passes, want %d", len(order), len(want))
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("pass %d went to the wrong log", i)
		}
	}
	// A detached log is dropped from the queues.
	s.request(a)
	s.detach(a)
	if l := s.next(); l != nil {
		t.Fatal("detached log got a pass")
	}
}

// Once a log's data is fsynced, only its checkpoint is left: the next pass
// is planned for when the checkpoint interval is up, not every second.
func TestSyncerPlansCheckpointOnlyPassLate(t *testing.T) {
	s := NewSyncer(1)
	defer s.Close()
	cfg := DefaultConfig()
	cfg.SyncBeforeAck = true
	clock := newFakeClock()
	l := openLogs(t, 1, cfg, Options{Syncer: s, Now: clock.now, CheckpointInterval: time.Hour})[0]
	res, err := l.Append(simpleBatch(t, 1, testNow.UnixMilli(), 5), AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.WaitDurable(context.Background(), res.LastOffset+1); err != nil {
		t.Fatal(err)
	}
	// The pass that made it durable ends by planning the next one.
	eventually(t, 10*time.Second, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return !l.sync.running && l.sync.heapIdx >= 0 && time.Until(l.sync.due) > 30*time.Minute
	})
	if ck, ok := readCheckpoint(l.Dir()); !ok || ck.recoveryPoint != 0 {
		t.Fatalf("checkpoint %+v written before its interval", ck)
	}
}
