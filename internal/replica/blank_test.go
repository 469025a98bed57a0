package replica

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	wlog "weir/internal/log"
)

// blankReplica is broker 1's replica of t-0 over a never-written lazy
// log in dir, with an Env that opens its log again (Env.OpenLog) and
// counts the opens.
func blankReplica(t *testing.T, dir string, opens *atomic.Int32) *Replica {
	t.Helper()
	syncer := wlog.NewSyncer(1)
	t.Cleanup(func() { _ = syncer.Close() }) // after the log's Close below
	logEnv := wlog.NewEnv(wlog.Options{Syncer: syncer})
	l, err := wlog.Open(dir, wlog.DefaultConfig(), wlog.Options{Env: logEnv, Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	env := NewEnv(Env{LocalID: 1, OpenLog: func(_ *Replica, cfg wlog.Config) (*wlog.Log, error) {
		opens.Add(1)
		return wlog.Open(dir, cfg, wlog.Options{Env: logEnv, Lazy: true})
	}})
	r, err := Open(l, 0, Config{Env: env, Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Log().Close() })
	return r
}

// TestNeverWrittenReplicaHoldsTheBlank: with Env.OpenLog, a replica over a
// never-written log keeps the blank of its settings, not a Log of its own
// (the saving of a hosted partition never written), reads as before (high
// watermark 0, empty), takes a config change onto the blank without
// opening anything, and opens its log once, with that config, at its
// first append, which then lands and commits as on any log.
func TestNeverWrittenReplicaHoldsTheBlank(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	var opens atomic.Int32
	r := blankReplica(t, dir, &opens)
	if !r.Log().IsBlank() || r.HighWatermark() != 0 || r.Log().EndOffset() != 0 {
		t.Fatalf("blank %v, hw %d, end %d", r.Log().IsBlank(), r.HighWatermark(), r.Log().EndOffset())
	}
	if err := r.BecomeLeader(PartitionState{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1}, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	cfg := wlog.DefaultConfig()
	cfg.SegmentBytes /= 2
	if err := r.SetLogConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if !r.Log().IsBlank() || r.Log().Config() != cfg || opens.Load() != 0 {
		t.Fatalf("after a config change: blank %v, config taken %v, opens %d", r.Log().IsBlank(), r.Log().Config() == cfg, opens.Load())
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the directory exists before the first append (%v)", err)
	}
	res, err := r.Append(batch("a", 2), 1, wlog.AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := r.Log()
	if l.IsBlank() || opens.Load() != 1 || l.Config() != cfg || l.Dir() != dir {
		t.Fatalf("after the first append: blank %v, opens %d, config taken %v, dir %q", l.IsBlank(), opens.Load(), l.Config() == cfg, l.Dir())
	}
	if res.LastOffset != 1 || l.EndOffset() != 2 || r.HighWatermark() != 2 {
		t.Fatalf("appended to %d, log end %d, hw %d", res.LastOffset, l.EndOffset(), r.HighWatermark())
	}
	if _, err := r.Append(batch("b", 1), 1, wlog.AppendOptions{}); err != nil || opens.Load() != 1 {
		t.Fatalf("second append: %v, opens %d", err, opens.Load())
	}
}

// TestOwnLogOpensOneLog: writers racing to open a never-written
// replica's log, and a config change racing them, end with one log that
// every writer got and that has the config.
func TestOwnLogOpensOneLog(t *testing.T) {
	var opens atomic.Int32
	r := blankReplica(t, filepath.Join(t.TempDir(), "t-0"), &opens)
	cfg := wlog.DefaultConfig()
	cfg.SegmentBytes /= 2
	var wg sync.WaitGroup
	got := make([]*wlog.Log, 8)
	for i := range got {
		wg.Go(func() {
			l, err := r.OwnLog()
			if err != nil {
				t.Error(err)
			}
			got[i] = l
		})
	}
	wg.Go(func() {
		if err := r.SetLogConfig(cfg); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
	for i, l := range got {
		if l != r.Log() || l.IsBlank() {
			t.Fatalf("writer %d got another log (blank %v)", i, l.IsBlank())
		}
	}
	if r.Log().Config() != cfg {
		t.Fatal("the config change was lost")
	}
	t.Logf("%d opens for %d writers", opens.Load(), len(got))
}

// TestFollowerOpensItsLogOnFirstBatch: a never-written follower holds the
// blank until the leader sends it batches, then opens its log once.
func TestFollowerOpensItsLogOnFirstBatch(t *testing.T) {
	var opens atomic.Int32
	r := blankReplica(t, filepath.Join(t.TempDir(), "t-0"), &opens)
	if err := r.BecomeFollower(PartitionState{Leader: 2, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if err := r.appendFromLeader(1, nil, 0, 0); err != nil || !r.Log().IsBlank() || opens.Load() != 0 {
		t.Fatalf("an empty answer: %v, blank %v, opens %d", err, r.Log().IsBlank(), opens.Load())
	}
	if err := r.appendFromLeader(1, stamped("a", 3, 0, 1), 3, 0); err != nil {
		t.Fatal(err)
	}
	if r.Log().IsBlank() || opens.Load() != 1 || r.Log().EndOffset() != 3 || r.HighWatermark() != 3 {
		t.Fatalf("blank %v, opens %d, end %d, hw %d", r.Log().IsBlank(), opens.Load(), r.Log().EndOffset(), r.HighWatermark())
	}
}
