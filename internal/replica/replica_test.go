package replica

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kerr"

	wlog "weir/internal/log"
	"weir/internal/metadata"
)

// leaderOf opens a replica leading epoch 3 with replicas 1,2,3 and isr.
func leaderOf(t *testing.T, isr []int32, minISR int) (*Replica, *fakeClock, *[]ISRChange) {
	t.Helper()
	l := openLog(t, t.TempDir())
	t.Cleanup(func() { _ = l.Close() })
	clock := newFakeClock()
	var proposals []ISRChange
	r, err := Open(l, 0, Config{Env: NewEnv(Env{LocalID: 1, Now: clock.Now, OnISRChange: func(_ *Replica, c ISRChange) { proposals = append(proposals, c) }}), Topic: "t", MinISR: minISR})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.BecomeLeader(PartitionState{Leader: 1, LeaderEpoch: 3, PartitionEpoch: 7, Replicas: []int32{1, 2, 3}, ISR: isr}); err != nil {
		t.Fatal(err)
	}
	return r, clock, &proposals
}

func TestAppendRefusesUnderMinISR(t *testing.T) {
	r, _, _ := leaderOf(t, []int32{1}, 2)
	if _, err := r.Append(batch("x", 1), -1, wlog.AppendOptions{}); !isKerr(err, kerr.NotEnoughReplicas) {
		t.Fatalf("acks=all with ISR 1 < 2: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	if r.Log().EndOffset() != 0 {
		t.Fatal("refused batch was written")
	}
	res, err := r.Append(batch("x", 1), 1, wlog.AppendOptions{})
	if err != nil {
		t.Fatalf("acks=1: %v", err)
	}
	if res.LeaderEpoch != 3 {
		t.Fatalf("stamped epoch %d", res.LeaderEpoch)
	}
	h, err := wlog.ParseBatchHeader(readAll(t, r.Log()))
	if err != nil || h.LeaderEpoch != 3 {
		t.Fatalf("batch epoch %d (%v), want 3", h.LeaderEpoch, err)
	}
	// A one-member ISR commits at once.
	if hw := r.HighWatermark(); hw != 1 {
		t.Fatalf("high watermark %d, want 1", hw)
	}
}

func TestWaitForHW(t *testing.T) {
	t.Run("wakes when followers reach the offset", func(t *testing.T) {
		r, _, _ := leaderOf(t, []int32{1, 2, 3}, 2)
		res := mustAppend(t, r, 4, -1)
		done := make(chan error, 1)
		go func() { done <- waitHW(r, res) }()
		for _, id := range []int32{2, 3} {
			if f := r.FetchForFollower(nil, FollowerFetch{ReplicaID: id, FetchOffset: 0, CurrentLeaderEpoch: 3, LastFetchedEpoch: -1, MaxBytes: 1 << 20}); f.Err != nil || f.Bytes == 0 {
				t.Fatalf("fetch: %+v", f)
			}
		}
		select {
		case err := <-done:
			t.Fatalf("returned %v before followers had the batch", err)
		default:
		}
		r.FetchForFollower(nil, FollowerFetch{ReplicaID: 2, FetchOffset: 4, CurrentLeaderEpoch: 3, LastFetchedEpoch: 3, MaxBytes: 1 << 20})
		select {
		case err := <-done:
			t.Fatalf("returned %v with follower 3 behind", err)
		default:
		}
		f := r.FetchForFollower(nil, FollowerFetch{ReplicaID: 3, FetchOffset: 4, CurrentLeaderEpoch: 3, LastFetchedEpoch: 3, MaxBytes: 1 << 20})
		if f.HighWatermark != 4 {
			t.Fatalf("fetch answered high watermark %d, want 4", f.HighWatermark)
		}
		if err := <-done; err != nil {
			t.Fatalf("WaitForHW: %v", err)
		}
	})
	t.Run("not enough replicas after append", func(t *testing.T) {
		r, clock, proposals := leaderOf(t, []int32{1, 2}, 2)
		res := mustAppend(t, r, 2, -1)
		clock.Advance(DefaultMaxLag + time.Millisecond)
		r.MaybeShrinkISR()
		if len(*proposals) != 1 || !slices.Equal((*proposals)[0].NewISR, []int32{1}) || (*proposals)[0].PartitionEpoch != 7 {
			t.Fatalf("proposals %+v", *proposals)
		}
		r.CompleteISRChange((*proposals)[0], ISRChangeResult{LeaderEpoch: 3, PartitionEpoch: 8, ISR: []int32{1}})
		if err := waitHW(r, res); !isKerr(err, kerr.NotEnoughReplicasAfterAppend) {
			t.Fatalf("got %v, want NOT_ENOUGH_REPLICAS_AFTER_APPEND", err)
		}
	})
	t.Run("leadership moves", func(t *testing.T) {
		r, _, _ := leaderOf(t, []int32{1, 2}, 1)
		res := mustAppend(t, r, 2, -1)
		done := make(chan error, 1)
		go func() { done <- waitHW(r, res) }()
		if err := r.BecomeFollower(PartitionState{Leader: 2, LeaderEpoch: 4, PartitionEpoch: 8, Replicas: []int32{1, 2, 3}, ISR: []int32{2}}); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !isKerr(err, kerr.NotLeaderForPartition) {
			t.Fatalf("got %v, want NOT_LEADER_OR_FOLLOWER", err)
		}
	})
	t.Run("context ends", func(t *testing.T) {
		r, _, _ := leaderOf(t, []int32{1, 2}, 1)
		res := mustAppend(t, r, 2, -1)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := r.WaitForHW(ctx, res.LeaderEpoch, res.LastOffset+1); !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", err)
		}
	})
}

// HWReached answers what WaitForHW would, without waiting: known at once
// for a one-replica ISR, not yet while followers lag, and
// NOT_LEADER_OR_FOLLOWER for another epoch.
func TestHWReached(t *testing.T) {
	solo, _, _ := leaderOf(t, []int32{1}, 1)
	res := mustAppend(t, solo, 2, -1)
	if done, err := solo.HWReached(res.LeaderEpoch, res.LastOffset+1); !done || err != nil {
		t.Fatalf("one-replica ISR: done %v, err %v; want done, nil", done, err)
	}
	if done, err := solo.HWReached(res.LeaderEpoch+1, res.LastOffset+1); !done || !isKerr(err, kerr.NotLeaderForPartition) {
		t.Fatalf("other epoch: done %v, err %v; want done, NOT_LEADER_OR_FOLLOWER", done, err)
	}
	r, _, _ := leaderOf(t, []int32{1, 2}, 2)
	res = mustAppend(t, r, 3, -1)
	if done, err := r.HWReached(res.LeaderEpoch, res.LastOffset+1); done || err != nil {
		t.Fatalf("follower behind: done %v, err %v; want not done", done, err)
	}
	r.FetchForFollower(nil, FollowerFetch{ReplicaID: 2, FetchOffset: res.LastOffset + 1, CurrentLeaderEpoch: res.LeaderEpoch, LastFetchedEpoch: res.LeaderEpoch, MaxBytes: 1 << 20})
	if done, err := r.HWReached(res.LeaderEpoch, res.LastOffset+1); !done || err != nil {
		t.Fatalf("follower caught up: done %v, err %v; want done, nil", done, err)
	}
}

func TestFetchForFollowerErrors(t *testing.T) {
	r, _, _ := leaderOf(t, []int32{1, 2, 3}, 1)
	for i := range 3 {
		mustAppend(t, r, 2+i, 1)
	}
	// The log holds epoch 3 at [0, 9).
	tests := []struct {
		name    string
		f       FollowerFetch
		err     *kerr.Error
		diverge EpochEntryEnd
		records bool
	}{
		{"fenced epoch", FollowerFetch{ReplicaID: 2, CurrentLeaderEpoch: 2, LastFetchedEpoch: -1}, kerr.FencedLeaderEpoch, EpochEntryEnd{-1, -1}, false},
		{"unknown newer epoch", FollowerFetch{ReplicaID: 2, CurrentLeaderEpoch: 4, LastFetchedEpoch: -1}, kerr.UnknownLeaderEpoch, EpochEntryEnd{-1, -1}, false},
		{"not a replica", FollowerFetch{ReplicaID: 9, CurrentLeaderEpoch: 3, LastFetchedEpoch: -1}, kerr.NotLeaderForPartition, EpochEntryEnd{-1, -1}, false},
		{"past the log end", FollowerFetch{ReplicaID: 2, FetchOffset: 10, CurrentLeaderEpoch: 3, LastFetchedEpoch: -1}, kerr.OffsetOutOfRange, EpochEntryEnd{-1, -1}, false},
		{"epoch older than any: diverges at the first epoch start", FollowerFetch{ReplicaID: 2, FetchOffset: 5, CurrentLeaderEpoch: 3, LastFetchedEpoch: 1}, nil, EpochEntryEnd{1, 0}, false},
		{"same epoch, longer than the leader", FollowerFetch{ReplicaID: 2, FetchOffset: 12, CurrentLeaderEpoch: 3, LastFetchedEpoch: 3}, nil, EpochEntryEnd{3, 9}, false},
		// The leader has never seen epoch 5 (a leader's own epoch is the
		// newest, so only a confused follower sends it): the lookup says
		// UNDEFINED, which on the wire reads as no divergence, and no
		// records are served.
		{"unknown newer last epoch", FollowerFetch{ReplicaID: 2, FetchOffset: 9, CurrentLeaderEpoch: 3, LastFetchedEpoch: 5}, nil, EpochEntryEnd{-1, -1}, false},
		{"in line", FollowerFetch{ReplicaID: 2, FetchOffset: 5, CurrentLeaderEpoch: 3, LastFetchedEpoch: 3}, nil, EpochEntryEnd{-1, -1}, true},
		{"no last epoch (before v12)", FollowerFetch{ReplicaID: 3, FetchOffset: 2, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1}, nil, EpochEntryEnd{-1, -1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.f.MaxBytes = 1 << 20
			res := r.FetchForFollower(nil, tt.f)
			if tt.err != nil && !isKerr(res.Err, tt.err) || tt.err == nil && res.Err != nil {
				t.Fatalf("error %v, want %v", res.Err, tt.err)
			}
			if res.DivergingEpoch != tt.diverge {
				t.Fatalf("diverging %+v, want %+v", res.DivergingEpoch, tt.diverge)
			}
			if (len(res.Ranges) > 0) != tt.records {
				t.Fatalf("served %d ranges, want records=%v", len(res.Ranges), tt.records)
			}
		})
	}
}

func TestOpenRecoversEpochCache(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir)
	r, err := Open(l, 0, Config{Env: NewEnv(Env{LocalID: 2}), Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.BecomeFollower(PartitionState{Leader: 1, LeaderEpoch: 4, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	// Batches from the leader: epoch 2 at 0, epoch 4 at 3.
	var data []byte
	data = append(data, stamped("r", 1, 0, 2)...)
	data = append(data, stamped("r", 2, 1, 2)...)
	data = append(data, stamped("r", 1, 3, 4)...)
	if err := r.appendFromLeader(4, data, 100, 0); err != nil {
		t.Fatal(err)
	}
	want := []EpochEntry{{2, 0}, {4, 3}}
	if got := r.EpochCache().Entries(); !slices.Equal(got, want) {
		t.Fatalf("cache %v, want %v", got, want)
	}
	if hw := r.HighWatermark(); hw != l.EndOffset() {
		t.Fatalf("follower high watermark %d, want min(100, %d)", hw, l.EndOffset())
	}
	// A checkpoint ahead of the log (written before a crash cut the log)
	// is cut back on open; a missing one is rebuilt from the batches.
	if err := r.EpochCache().Assign(6, 50); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, remove := range []bool{false, true} {
		if remove {
			if err := os.Remove(filepath.Join(dir, epochCheckpointFile)); err != nil {
				t.Fatal(err)
			}
		}
		l := openLog(t, dir)
		r, err := Open(l, 1, Config{Env: NewEnv(Env{LocalID: 2}), Topic: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.EpochCache().Entries(); !slices.Equal(got, want) {
			t.Fatalf("removed=%v: cache %v, want %v", remove, got, want)
		}
		if r.HighWatermark() != 1 {
			t.Fatalf("high watermark %d, want the persisted 1", r.HighWatermark())
		}
		// A rebuilt cache is not written at open (a restart would write a
		// file per log); its next change writes it.
		path := filepath.Join(dir, epochCheckpointFile)
		if _, err := os.Stat(path); remove != errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("removed=%v: checkpoint after open: %v", remove, err)
		}
		if remove {
			if err := r.EpochCache().Assign(7, l.EndOffset()); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := decodeEpochCheckpoint(b); err != nil || !slices.Equal(got, append(slices.Clone(want), EpochEntry{7, l.EndOffset()})) {
				t.Fatalf("checkpoint after the next change %v (%v), want %v and (7, %d)", got, err, want, l.EndOffset())
			}
		}
		_ = l.Close()
	}
}

func mustAppend(t *testing.T, r *Replica, records int, acks int16) AppendResult {
	t.Helper()
	res, err := r.Append(batch("x", records), acks, wlog.AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestStateOfMetadataPartition(t *testing.T) {
	b := metadata.NewBuilder(metadata.Empty())
	id := metadata.TopicID{1, 2, 3}
	for _, rec := range []metadata.Record{
		&metadata.TopicRecord{Name: "t", ID: id},
		&metadata.PartitionRecord{TopicID: id, Partition: 0, Replicas: []int32{3, 1, 2}, ISR: []int32{3, 1}, Leader: 3, LeaderEpoch: 6, PartitionEpoch: 9},
	} {
		if err := b.Apply(rec); err != nil {
			t.Fatal(err)
		}
	}
	p, ok := b.Partition(id, 0)
	if !ok {
		t.Fatal("partition not in the image")
	}
	got := StateOf(p)
	if got.Leader != 3 || got.LeaderEpoch != 6 || got.PartitionEpoch != 9 || !slices.Equal(got.Replicas, []int32{3, 1, 2}) || !slices.Equal(got.ISR, []int32{3, 1}) {
		t.Fatalf("StateOf = %+v", got)
	}
	// A leader keeps the image's lists, one slice for both (no copy: the
	// leader state is its only allocation), and an ISR change it commits
	// is a copy of its own, leaving the image as it was.
	rules := &leaderRules{self: 3}
	var s *leaderState
	if n := testing.AllocsPerRun(10, func() { s = newLeaderState(rules, got, 0, 0, time.Unix(0, 0)) }); n != 1 {
		t.Fatalf("a leader state from StateOf makes %v allocations, want 1", n)
	}
	if !slices.Equal(s.replicas(), []int32{3, 1, 2}) || !slices.Equal(s.isr(), []int32{3, 1}) || s.lists != &p.ReplicasAndISR()[0] {
		t.Fatalf("leader state replicas %v isr %v, want the image's [3 1 2] [3 1]", s.replicas(), s.isr())
	}
	s.setISR([]int32{3, 1, 2})
	if !slices.Equal(s.isr(), []int32{3, 1, 2}) || !slices.Equal(s.replicas(), []int32{3, 1, 2}) || !slices.Equal(p.ISR(), []int32{3, 1}) {
		t.Fatalf("after an ISR change: leader isr %v replicas %v, image isr %v", s.isr(), s.replicas(), p.ISR())
	}
}

// TestLeaderStateSize: a leader state stays in the 64-byte size class
// (replicas and ISR one array, held by its first element and length): a
// field added back costs every led partition 16 B.
func TestLeaderStateSize(t *testing.T) {
	if n := unsafe.Sizeof(leaderState{}); n > 64 {
		t.Fatalf("leaderState is %d B, want at most 64", n)
	}
}

// TestLeaderStateLists: the lists a leader state holds read back as
// given through every way they are set, empty ones included.
func TestLeaderStateLists(t *testing.T) {
	for _, tc := range []struct{ replicas, isr []int32 }{
		{nil, nil},
		{[]int32{1}, nil},
		{[]int32{1, 2, 3}, []int32{1}},
		{[]int32{4, 5, 6, 7, 8, 9, 10, 11, 12}, []int32{4, 5, 6, 7, 8, 9, 10, 11, 12}},
	} {
		var s leaderState
		s.setLists(PartitionState{Replicas: tc.replicas, ISR: tc.isr})
		if !slices.Equal(s.replicas(), tc.replicas) || !slices.Equal(s.isr(), tc.isr) {
			t.Fatalf("set %v %v, read %v %v", tc.replicas, tc.isr, s.replicas(), s.isr())
		}
		if len(s.replicas()) > 0 && cap(s.replicas()) != len(tc.replicas) {
			t.Fatalf("replicas %v have room for %d: an append would write the ISR", s.replicas(), cap(s.replicas()))
		}
		isr := append(slices.Clone(tc.isr), 99)
		s.setISR(isr)
		isr[0] = -1 // a copy is kept
		if !slices.Equal(s.replicas(), tc.replicas) || !slices.Equal(s.isr(), append(slices.Clone(tc.isr), 99)) {
			t.Fatalf("after setISR: %v %v", s.replicas(), s.isr())
		}
	}
}

func TestRoleChangesRefuseWrongOrStaleStates(t *testing.T) {
	r, _, _ := leaderOf(t, []int32{1, 2}, 1) // leads epoch 3
	tests := []struct {
		name string
		do   func() error
		want error
	}{
		{"leader state naming another leader", func() error {
			return r.BecomeLeader(PartitionState{Leader: 2, LeaderEpoch: 4, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
		}, ErrWrongRole},
		{"follower state naming this broker", func() error {
			return r.BecomeFollower(PartitionState{Leader: 1, LeaderEpoch: 4, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
		}, ErrWrongRole},
		{"older leader epoch", func() error {
			return r.BecomeFollower(PartitionState{Leader: 2, LeaderEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
		}, ErrStaleState},
		{"same epoch, older partition epoch: no-op", func() error {
			return r.BecomeLeader(PartitionState{Leader: 1, LeaderEpoch: 3, PartitionEpoch: 6, Replicas: []int32{1, 2}, ISR: []int32{1}})
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.do(); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if role, _, epoch := r.State(); role != RoleLeader || epoch != 3 {
				t.Fatalf("state changed to %v epoch %d", role, epoch)
			}
			if committed, _ := r.ISR(); !slices.Equal(committed, []int32{1, 2}) {
				t.Fatalf("ISR changed to %v", committed)
			}
		})
	}
}

func TestLogStartMovesTheEpochCache(t *testing.T) {
	r, _, _ := leaderOf(t, []int32{1}, 1) // epoch 3 from 0
	mustAppend(t, r, 2, 1)
	if err := r.BecomeLeader(PartitionState{Leader: 1, LeaderEpoch: 5, PartitionEpoch: 8, Replicas: []int32{1}, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, r, 3, 1) // epoch 5 from 2
	if start, err := r.AdvanceStartOffset(3); err != nil || start != 3 {
		t.Fatalf("AdvanceStartOffset: %d, %v", start, err)
	}
	if got, want := r.EpochCache().Entries(), []EpochEntry{{5, 3}}; !slices.Equal(got, want) {
		t.Fatalf("cache %v, want %v", got, want)
	}
	if _, err := r.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	if got, want := r.EpochCache().Entries(), []EpochEntry{{5, r.Log().StartOffset()}}; !slices.Equal(got, want) {
		t.Fatalf("after retention: cache %v, want %v", got, want)
	}
}

// TestLazyLogLeadsWithoutFiles: a replica over a lazy log that was never
// written becomes leader without creating its directory; its first
// append creates it, and a reopened replica rebuilds the epoch cache from
// the batches.
func TestLazyLogLeadsWithoutFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p-0")
	l, err := wlog.Open(dir, wlog.DefaultConfig(), wlog.Options{Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(l, 0, Config{Env: NewEnv(Env{LocalID: 1}), Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.BecomeLeader(PartitionState{Leader: 1, LeaderEpoch: 4, PartitionEpoch: 1, Replicas: []int32{1}, ISR: []int32{1}}); err != nil {
		t.Fatalf("lead over a lazy log: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("leading created the directory: %v", err)
	}
	if _, err := r.Append(batch("x", 1), 1, wlog.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, dir)
	t.Cleanup(func() { _ = l2.Close() })
	r2, err := Open(l2, 1, Config{Env: NewEnv(Env{LocalID: 1}), Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := r2.EpochCache().Latest(); !ok || e.Epoch != 4 || e.StartOffset != 0 {
		t.Fatalf("reopened epoch cache latest %+v %v, want epoch 4 from 0", e, ok)
	}
}

// TestOpenExtendsALaggingCheckpoint: the checkpoint is written without
// fsync, so after a crash it may miss the newest epochs; Open adds them
// from the batch headers.
func TestOpenExtendsALaggingCheckpoint(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir)
	r, err := Open(l, 0, Config{Env: NewEnv(Env{LocalID: 1}), Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	lead := func(epoch int32) {
		if err := r.BecomeLeader(PartitionState{Leader: 1, LeaderEpoch: epoch, PartitionEpoch: epoch, Replicas: []int32{1}, ISR: []int32{1}}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Append(batch("x", 1), 1, wlog.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	lead(3)
	stale, err := os.ReadFile(filepath.Join(dir, epochCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	lead(5)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// The crash left the checkpoint of before epoch 5.
	if err := os.WriteFile(filepath.Join(dir, epochCheckpointFile), stale, 0o644); err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, dir)
	t.Cleanup(func() { _ = l2.Close() })
	r2, err := Open(l2, 2, Config{Env: NewEnv(Env{LocalID: 1}), Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	want := []EpochEntry{{Epoch: 3, StartOffset: 0}, {Epoch: 5, StartOffset: 1}}
	if got := r2.EpochCache().Entries(); !slices.Equal(got, want) {
		t.Fatalf("entries after reopening %v, want %v", got, want)
	}
}

// TestFetchForFollowerBeforePromotion: a replica asked to serve a follower
// before it applied its own promotion checks the epoch first, as Kafka
// does: a newer epoch is UNKNOWN_LEADER_EPOCH (the broker holds such a
// fetch until the promotion arrives), the same one NOT_LEADER_OR_FOLLOWER,
// an older one FENCED_LEADER_EPOCH.
func TestFetchForFollowerBeforePromotion(t *testing.T) {
	r := followerOf(t, 4, stamped("a", 2, 0, 4))
	tests := []struct {
		epoch int32
		want  *kerr.Error
	}{
		{5, kerr.UnknownLeaderEpoch},
		{4, kerr.NotLeaderForPartition},
		{3, kerr.FencedLeaderEpoch},
		{-1, kerr.NotLeaderForPartition},
	}
	for _, tt := range tests {
		res := r.FetchForFollower(nil, FollowerFetch{ReplicaID: 1, FetchOffset: 2, CurrentLeaderEpoch: tt.epoch, LastFetchedEpoch: 4, MaxBytes: 1 << 20})
		if !isKerr(res.Err, tt.want) {
			t.Errorf("request epoch %d: %v, want %v", tt.epoch, res.Err, tt.want)
		}
	}
}

// TestNeverWrittenLeaderImpliesItsEpochEntry: the leader of a
// never-written log keeps its epoch's entry out of the cache (it would be
// 40 B per led partition) and answers OffsetForLeaderEpoch and a
// follower's divergence check as if it held (leader epoch, log end); the
// entry is written into the cache by the leader's first append, by the
// end of its leadership (BecomeFollower, Stop), and a new leadership of
// the still-empty log implies its own epoch instead.
func TestNeverWrittenLeaderImpliesItsEpochEntry(t *testing.T) {
	lead := func(epoch int32) PartitionState {
		return PartitionState{Leader: 1, LeaderEpoch: epoch, PartitionEpoch: epoch, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}
	}
	cases := []struct {
		name string
		then func(t *testing.T, r *Replica) error
		want []EpochEntry
	}{
		{"append", func(t *testing.T, r *Replica) error {
			_, err := r.Append(batch("x", 1), 1, wlog.AppendOptions{})
			return err
		}, []EpochEntry{{4, 0}}},
		{"marker", func(t *testing.T, r *Replica) error {
			_, err := r.AppendMarker(wlog.TxnMarker{ProducerID: 7, Marker: wlog.Marker{Type: wlog.ControlAbort}}, wlog.AppendOptions{})
			return err
		}, []EpochEntry{{4, 0}}},
		{"follow", func(t *testing.T, r *Replica) error {
			return r.BecomeFollower(PartitionState{Leader: 2, LeaderEpoch: 5, PartitionEpoch: 5, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
		}, []EpochEntry{{4, 0}}},
		{"stop", func(t *testing.T, r *Replica) error { r.Stop(); return nil }, []EpochEntry{{4, 0}}},
		{"lead again, then append", func(t *testing.T, r *Replica) error {
			if err := r.BecomeLeader(lead(6)); err != nil {
				return err
			}
			if got := r.EpochCache().Entries(); len(got) != 0 {
				t.Fatalf("a new leadership of the empty log wrote %v", got)
			}
			if got, err := r.EndOffsetForEpoch(-1, 6, true); err != nil || got != (EpochEntryEnd{6, 0}) {
				t.Fatalf("epoch 6 after leading again: %v, %v", got, err)
			}
			_, err := r.Append(batch("x", 1), 1, wlog.AppendOptions{})
			return err
		}, []EpochEntry{{6, 0}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := lazyReplica(t, 0)
			if err := r.BecomeLeader(lead(4)); err != nil {
				t.Fatal(err)
			}
			if got := r.EpochCache().Entries(); len(got) != 0 {
				t.Fatalf("leading a never-written log wrote %v", got)
			}
			for _, q := range []struct {
				epoch int32
				want  EpochEntryEnd
			}{
				{4, EpochEntryEnd{4, 0}},
				{3, EpochEntryEnd{3, 0}},
				{5, EpochEntryEnd{UndefinedEpoch, UndefinedOffset}},
				{UndefinedEpoch, EpochEntryEnd{UndefinedEpoch, UndefinedOffset}},
			} {
				if got, err := r.EndOffsetForEpoch(-1, q.epoch, true); err != nil || got != q.want {
					t.Fatalf("OffsetForLeaderEpoch %d: %v, %v; want %v", q.epoch, got, err, q.want)
				}
			}
			// A follower claiming epoch 3 up to offset 1 diverges at (3, 0),
			// as with the entry in the cache.
			res := r.FetchForFollower(nil, FollowerFetch{ReplicaID: 2, FetchOffset: 1, LastFetchedEpoch: 3, CurrentLeaderEpoch: 4, MaxBytes: 1 << 20})
			if res.Err != nil || res.DivergingEpoch != (EpochEntryEnd{3, 0}) {
				t.Fatalf("follower fetch from epoch 3: diverging %v, %v", res.DivergingEpoch, res.Err)
			}
			if err := c.then(t, r); err != nil {
				t.Fatal(err)
			}
			if got := r.EpochCache().Entries(); !slices.Equal(got, c.want) {
				t.Fatalf("cache %v, want %v", got, c.want)
			}
		})
	}
}

// TestHighWatermarkIsTheLogs: the replica keeps no copy of its high
// watermark: the one it reads is the one noted in its log, which the
// log's checkpoint writes, as it moves on a leader, follows the leader on
// a follower and is cut by a truncation; a never-written lazy log holds
// it (0) without a body of its own.
func TestHighWatermarkIsTheLogs(t *testing.T) {
	same := func(t *testing.T, r *Replica, want int64) {
		t.Helper()
		if hw, noted := r.HighWatermark(), r.Log().NotedHighWatermark(); hw != want || noted != want {
			t.Fatalf("high watermark %d, noted in the log %d; want %d", hw, noted, want)
		}
	}
	r := lazyReplica(t, 5)
	same(t, r, 0) // clamped into the empty log
	if err := r.BecomeLeader(PartitionState{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, r, 3, 1)
	same(t, r, 3) // a one-member ISR commits at once
	if err := r.BecomeFollower(PartitionState{Leader: 2, LeaderEpoch: 2, PartitionEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	r.roleMu.Lock()
	rose := r.setFollowerHW(1)
	r.roleMu.Unlock()
	if rose {
		t.Fatal("a lower leader high watermark reported as a rise")
	}
	same(t, r, 1)
	if err := r.truncateTo(2, 0); err != nil {
		t.Fatal(err)
	}
	same(t, r, 0)
}

// TestSetMinISRReachesTheLeader: raising min.insync.replicas before a
// produce waiting for replication is answered makes the answer
// NOT_ENOUGH_REPLICAS_AFTER_APPEND, and the next acks=all append is
// refused.
func TestSetMinISRReachesTheLeader(t *testing.T) {
	r, _, _ := leaderOf(t, []int32{1, 2}, 1)
	res := mustAppend(t, r, 1, -1)
	if f := r.FetchForFollower(nil, FollowerFetch{ReplicaID: 2, FetchOffset: 1, CurrentLeaderEpoch: 3, LastFetchedEpoch: 3, MaxBytes: 1 << 20}); f.Err != nil || f.HighWatermark != 1 {
		t.Fatalf("follower fetch: hw %d, %v", f.HighWatermark, f.Err)
	}
	r.SetMinISR(3) // after the ISR has the batch, before the answer
	if done, err := r.HWReached(res.LeaderEpoch, res.LastOffset+1); !done || !isKerr(err, kerr.NotEnoughReplicasAfterAppend) {
		t.Fatalf("HWReached: %v, %v; want NOT_ENOUGH_REPLICAS_AFTER_APPEND", done, err)
	}
	if _, err := r.Append(batch("x", 1), -1, wlog.AppendOptions{}); !isKerr(err, kerr.NotEnoughReplicas) {
		t.Fatalf("acks=all with ISR 2 < 3: %v, want NOT_ENOUGH_REPLICAS", err)
	}
}

// TestReplicaSize: a replica stays in the 80-byte size class (its high
// watermark in its log, min.insync.replicas in its role's padding, no
// note of its fetcher, its Env through its Owner, its counters the
// Env's, its role lock a roleLock): a field added back costs every
// hosted replica 16 B.
func TestReplicaSize(t *testing.T) {
	if n := unsafe.Sizeof(Replica{}); n > 80 {
		t.Fatalf("Replica is %d B, want at most 80", n)
	}
}

// TestReplicaCountsAreTheEnvs: the ISR change and truncation counts
// Stats reports are those of every replica of one Env together (kept in
// the Env, not in each replica), and replicas of another Env count apart.
func TestReplicaCountsAreTheEnvs(t *testing.T) {
	env, other := NewEnv(Env{LocalID: 1}), NewEnv(Env{LocalID: 1})
	open := func(env *Env, i int32) *Replica {
		r, err := Open(openLog(t, filepath.Join(t.TempDir(), "t-0")), 0, Config{Env: env, Topic: "t", Partition: i})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b, c := open(env, 0), open(env, 1), open(other, 0)
	a.env().counts.isrShrinks.Add(1)
	b.env().counts.isrExpands.Add(2)
	b.env().counts.truncations.Add(3)
	for _, r := range []*Replica{a, b} {
		if st := r.Stats(); st.ISRShrinks != 1 || st.ISRExpands != 2 || st.Truncations != 3 {
			t.Fatalf("partition %d: counts %d/%d/%d, want the Env's 1/2/3", r.Partition(), st.ISRShrinks, st.ISRExpands, st.Truncations)
		}
	}
	if st := c.Stats(); st.ISRShrinks != 0 || st.ISRExpands != 0 || st.Truncations != 0 {
		t.Fatalf("a replica of another Env counts %d/%d/%d, want none", st.ISRShrinks, st.ISRExpands, st.Truncations)
	}
}

// envOwner is an Owner with the Env it gives.
type envOwner struct{ env *Env }

func (o envOwner) Topic() string     { return "t" }
func (o envOwner) TopicID() [16]byte { return [16]byte{1} }
func (o envOwner) Partition() int32  { return 7 }
func (o envOwner) ReplicaEnv() *Env  { return o.env }

// TestOwnerGivesTheEnv: a replica with an Owner uses the Owner's Env,
// not Config.Env, and refuses one NewEnv did not make (its rules and
// counts would be missing).
func TestOwnerGivesTheEnv(t *testing.T) {
	env := NewEnv(Env{LocalID: 4})
	r, err := Open(openLog(t, filepath.Join(t.TempDir(), "t-7")), 0, Config{Env: NewEnv(Env{LocalID: 9}), Owner: envOwner{env}})
	if err != nil {
		t.Fatal(err)
	}
	if r.env() != env || r.lead().rules != env.rules || r.Partition() != 7 {
		t.Fatalf("replica's Env %p (rules %p), want the owner's %p", r.env(), r.lead().rules, env)
	}
	if _, err := Open(openLog(t, filepath.Join(t.TempDir(), "t-8")), 0, Config{Owner: envOwner{&Env{LocalID: 4}}}); err == nil {
		t.Fatal("opened with an owner's Env not made by NewEnv")
	}
}

// lazyReplica is broker 1's replica of t-0 over a never-written lazy log,
// opened with high watermark hw.
func lazyReplica(t *testing.T, hw int64) *Replica {
	t.Helper()
	l, err := wlog.Open(filepath.Join(t.TempDir(), "p-0"), wlog.DefaultConfig(), wlog.Options{Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	r, err := Open(l, hw, Config{Env: NewEnv(Env{LocalID: 1}), Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A leader logs at INFO each change of its committed ISR that it
// proposed once, whichever way it learnt of it: the controller's answer,
// or the metadata image, which can bring the change first (on the
// controller's own node the answer then matches no change in flight and
// is dropped unlogged). Other changes the image brings are at debug.
func TestISRChangeLoggedOnce(t *testing.T) {
	st := func(partitionEpoch int32, isr ...int32) PartitionState {
		return PartitionState{Leader: 1, LeaderEpoch: 3, PartitionEpoch: partitionEpoch, Replicas: []int32{1, 2, 3}, ISR: isr}
	}
	tests := []struct {
		name string
		do   func(t *testing.T, r *Replica, shrink ISRChange)
		want []string // the ISR changed lines, without time and level
	}{
		{"answer, then its metadata", func(t *testing.T, r *Replica, shrink ISRChange) {
			r.CompleteISRChange(shrink, ISRChangeResult{LeaderEpoch: 3, PartitionEpoch: 8, ISR: shrink.NewISR})
			if err := r.BecomeLeader(st(8, 1, 2)); err != nil {
				t.Fatal(err)
			}
		}, []string{`isr="[1 2]" partition_epoch=8 from=answer`}},
		{"metadata, then the answer", func(t *testing.T, r *Replica, shrink ISRChange) {
			if err := r.BecomeLeader(st(8, 1, 2)); err != nil {
				t.Fatal(err)
			}
			r.CompleteISRChange(shrink, ISRChangeResult{LeaderEpoch: 3, PartitionEpoch: 8, ISR: shrink.NewISR})
		}, []string{`isr="[1 2]" partition_epoch=8 from=metadata`}},
		{"metadata with nothing in flight", func(t *testing.T, r *Replica, shrink ISRChange) {
			r.CompleteISRChange(shrink, ISRChangeResult{Err: kerr.OperationNotAttempted})
			if err := r.BecomeLeader(st(8, 1, 2)); err != nil {
				t.Fatal(err)
			}
		}, nil}, // at debug: a restart replays every change of the metadata log
		{"metadata that keeps the ISR", func(t *testing.T, r *Replica, _ ISRChange) {
			if err := r.BecomeLeader(st(8, 1, 2, 3)); err != nil {
				t.Fatal(err)
			}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs strings.Builder
			l := openLog(t, t.TempDir())
			t.Cleanup(func() { _ = l.Close() })
			clock := newFakeClock()
			var proposals []ISRChange
			env := NewEnv(Env{LocalID: 1, MaxLag: time.Second, Now: clock.Now,
				OnISRChange: func(_ *Replica, c ISRChange) { proposals = append(proposals, c) },
				Logger:      slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{ReplaceAttr: dropTime}))})
			r, err := Open(l, 0, Config{Env: env, Topic: "t"})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.BecomeLeader(st(7, 1, 2, 3)); err != nil {
				t.Fatal(err)
			}
			if res := r.FetchForFollower(nil, FollowerFetch{ReplicaID: 2, BrokerEpoch: -1, CurrentLeaderEpoch: 3, LastFetchedEpoch: -1, MaxBytes: 1}); res.Err != nil {
				t.Fatal(res.Err)
			}
			clock.Advance(2 * time.Second) // follower 3 never fetched
			r.MaybeShrinkISR()
			if len(proposals) != 1 || !slices.Equal(proposals[0].NewISR, []int32{1, 2}) {
				t.Fatalf("proposals %+v, want one shrink to [1 2]", proposals)
			}
			tt.do(t, r, proposals[0])
			var got []string
			for line := range strings.Lines(logs.String()) {
				if _, rest, ok := strings.Cut(strings.TrimSpace(line), `msg="replica: ISR changed" topic=t partition=0 `); ok {
					got = append(got, rest)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("ISR changed lines %q, want %q\nlog:\n%s", got, tt.want, logs.String())
			}
		})
	}
}

// dropTime leaves the time out of a text log line.
func dropTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}
