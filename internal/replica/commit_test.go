package replica

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	wlog "weir/internal/log"
)

// Acked and WaitAcked are the one rule for "acknowledged": acks=0 at once,
// acks=1 once written (and fsynced where the topic syncs before
// acknowledging), acks=-1 once the whole ISR has it too.
func TestAcked(t *testing.T) {
	for _, tc := range []struct {
		name      string
		isr       []int32
		sync      bool
		acks      int16
		doneFirst bool // Acked right after the append
	}{
		{"acks=0", []int32{1, 2}, true, 0, true},
		{"acks=1 page cache", []int32{1, 2}, false, 1, true},
		{"acks=1 sync before ack", []int32{1, 2}, true, 1, false},
		{"acks=all one-member ISR", []int32{1}, false, -1, true},
		{"acks=all follower behind", []int32{1, 2}, false, -1, false},
		{"acks=all sync, follower behind", []int32{1, 2}, true, -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _, _ := leaderOf(t, tc.isr, 1)
			cfg := r.Log().Config()
			cfg.SyncBeforeAck = tc.sync
			if err := r.Log().SetConfig(cfg); err != nil {
				t.Fatal(err)
			}
			res, err := r.Append(batch("a", 3), tc.acks, wlog.AppendOptions{})
			if err != nil {
				t.Fatal(err)
			}
			done, err := r.Acked(res, tc.acks)
			// The log's syncer may fsync before this check; then a topic
			// that syncs before acknowledging is rightly done already.
			synced := tc.sync && tc.acks == 1 && done && r.Log().DurableOffset() >= res.LastOffset+1
			if (done != tc.doneFirst && !synced) || err != nil {
				t.Fatalf("Acked right after the append: done %v err %v, want done %v", done, err, tc.doneFirst)
			}
			if len(tc.isr) > 1 && tc.acks == -1 {
				// The follower catches up: only then is it committed.
				r.FetchForFollower(nil, FollowerFetch{ReplicaID: 2, FetchOffset: res.LastOffset + 1, CurrentLeaderEpoch: res.LeaderEpoch, LastFetchedEpoch: res.LeaderEpoch, MaxBytes: 1 << 20})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := r.WaitAcked(ctx, res, tc.acks); err != nil {
				t.Fatalf("WaitAcked: %v", err)
			}
			if tc.sync && tc.acks != 0 && r.Log().DurableOffset() < res.LastOffset+1 {
				t.Fatalf("acknowledged at durable offset %d, before the fsync of %d", r.Log().DurableOffset(), res.LastOffset+1)
			}
			if done, err := r.Acked(res, tc.acks); !done || err != nil {
				t.Fatalf("Acked after WaitAcked: done %v err %v", done, err)
			}
		})
	}
}

// A retry of a batch already written (Written) is acknowledged by the
// same rule as the append itself: for acks=all not while a follower of
// the ISR lacks it, and with NOT_LEADER_OR_FOLLOWER once this replica no
// longer leads.
func TestWrittenWaitsLikeTheAppend(t *testing.T) {
	r, _, _ := leaderOf(t, []int32{1, 2}, 1)
	res, err := r.Append(batch("a", 3), -1, wlog.AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	retry, err := r.Written(res.LastOffset)
	if err != nil {
		t.Fatal(err)
	}
	if done, err := r.Acked(retry, -1); done {
		t.Fatalf("the retry of a batch no follower has is acknowledged (err %v)", err)
	}
	if done, err := r.Acked(retry, 1); !done || err != nil {
		t.Fatalf("acks=1 retry: done %v err %v, want acknowledged", done, err)
	}
	r.FetchForFollower(nil, FollowerFetch{ReplicaID: 2, FetchOffset: res.LastOffset + 1, CurrentLeaderEpoch: res.LeaderEpoch, LastFetchedEpoch: res.LeaderEpoch, MaxBytes: 1 << 20})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.WaitAcked(ctx, retry, -1); err != nil {
		t.Fatalf("the retry once the follower has the batch: %v", err)
	}
	next := PartitionState{Leader: 2, LeaderEpoch: res.LeaderEpoch + 1, PartitionEpoch: 5, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}
	if err := r.BecomeFollower(next); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Written(res.LastOffset); !isKerr(err, kerr.NotLeaderForPartition) {
		t.Fatalf("Written on a follower: %v, want NOT_LEADER_OR_FOLLOWER", err)
	}
}

// AppendCommitted returns once the ISR has the batch, and with the
// replica's error when leadership moves before it does.
func TestAppendCommitted(t *testing.T) {
	solo, _, _ := leaderOf(t, []int32{1}, 1)
	res, err := solo.AppendCommitted(context.Background(), batch("c", 2), wlog.AppendOptions{})
	if err != nil || solo.HighWatermark() != res.LastOffset+1 {
		t.Fatalf("one-member ISR: %v, high watermark %d", err, solo.HighWatermark())
	}

	r, _, _ := leaderOf(t, []int32{1, 2}, 1)
	done := make(chan error, 1)
	go func() {
		_, err := r.AppendCommitted(context.Background(), batch("c", 2), wlog.AppendOptions{})
		done <- err
	}()
	eventually(t, 10*time.Second, "the append", func() bool { return r.Log().EndOffset() == 2 })
	select {
	case err := <-done:
		t.Fatalf("returned %v before the follower had the batch", err)
	default:
	}
	if err := r.BecomeFollower(PartitionState{Leader: 2, LeaderEpoch: 4, PartitionEpoch: 8, Replicas: []int32{1, 2}, ISR: []int32{2}}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !isKerr(err, kerr.NotLeaderForPartition) {
		t.Fatalf("got %v, want NOT_LEADER_OR_FOLLOWER", err)
	}
	if _, ok := r.Leading(); ok {
		t.Fatal("a follower reports leading")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r2, _, _ := leaderOf(t, []int32{1, 2}, 1)
	if epoch, ok := r2.Leading(); !ok || epoch != 3 {
		t.Fatalf("Leading: %d %v, want 3 true", epoch, ok)
	}
	if _, err := r2.AppendCommitted(ctx, batch("c", 1), wlog.AppendOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
}

// An append wakes the broker once: OnHighWatermark when it moved the high
// watermark, OnAppend when it did not.
func TestAppendNotifiesOnce(t *testing.T) {
	for _, tc := range []struct {
		isr          []int32
		hwMoves, app int
	}{
		{[]int32{1}, 1, 0},
		{[]int32{1, 2}, 0, 1},
	} {
		l := openLog(t, t.TempDir())
		t.Cleanup(func() { _ = l.Close() })
		var hwMoves, appends int
		r, err := Open(l, 0, Config{Env: NewEnv(Env{LocalID: 1, OnHighWatermark: func(*Replica, int64) { hwMoves++ }, OnAppend: func(*Replica) { appends++ }}), Topic: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.BecomeLeader(PartitionState{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2}, ISR: tc.isr}); err != nil {
			t.Fatal(err)
		}
		hwMoves, appends = 0, 0
		mustAppend(t, r, 1, 1)
		if hwMoves != tc.hwMoves || appends != tc.app {
			t.Fatalf("ISR %v: OnHighWatermark %d, OnAppend %d; want %d, %d", tc.isr, hwMoves, appends, tc.hwMoves, tc.app)
		}
	}
}

// A replica the broker stops hosting (moved away by a reassignment)
// fails its acks=all waiters at once and takes no more appends.
func TestStopEndsWaits(t *testing.T) {
	r, _, _ := leaderOf(t, []int32{1, 2}, 1)
	res := mustAppend(t, r, 2, -1)
	done := make(chan error, 1)
	go func() { done <- r.WaitAcked(context.Background(), res, -1) }()
	select {
	case err := <-done:
		t.Fatalf("returned %v before the stop", err)
	case <-time.After(20 * time.Millisecond):
	}
	r.Stop()
	select {
	case err := <-done:
		if !isKerr(err, kerr.NotLeaderForPartition) {
			t.Fatalf("got %v, want NOT_LEADER_OR_FOLLOWER", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait outlived the stop")
	}
	if _, err := r.Append(batch("x", 1), 1, wlog.AppendOptions{}); !isKerr(err, kerr.NotLeaderForPartition) {
		t.Fatalf("append after stop: %v", err)
	}
	if _, ok := r.Leading(); ok {
		t.Fatal("a stopped replica leads")
	}
}
