package replica

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	wlog "weir/internal/log"
)

// TestWaitForHWEndsWithTheLeadership appends as leader of a three-replica
// ISR (so the write waits for followers that never fetch) and checks that
// the acks=all wait ends with NOT_LEADER_OR_FOLLOWER as soon as the
// leadership it waited in ends, whatever ends it: a newer epoch led here,
// a move to follower, or the replica stopped.
func TestWaitForHWEndsWithTheLeadership(t *testing.T) {
	st := PartitionState{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}
	for _, tc := range []struct {
		name string
		end  func(r *Replica) error
	}{
		{"newer epoch led here", func(r *Replica) error {
			next := st
			next.LeaderEpoch, next.PartitionEpoch = 2, 2
			return r.BecomeLeader(next)
		}},
		{"follower", func(r *Replica) error {
			next := st
			next.Leader, next.LeaderEpoch, next.PartitionEpoch = 2, 2, 2
			return r.BecomeFollower(next)
		}},
		{"stopped", func(r *Replica) error { r.Stop(); return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Open(openLog(t, filepath.Join(t.TempDir(), "t-0")), 0, Config{Env: NewEnv(Env{LocalID: 1}), Topic: "t"})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.BecomeLeader(st); err != nil {
				t.Fatal(err)
			}
			res, err := r.Append(batch("w", 1), -1, wlog.AppendOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- r.WaitForHW(ctx, res.LeaderEpoch, res.LastOffset+1) }()
			eventually(t, 10*time.Second, "the write's wait parked", func() bool {
				r.mu.Lock()
				defer r.mu.Unlock()
				return r.ls.busy != nil && r.ls.hwCh != nil
			})
			if done, err := r.HWReached(res.LeaderEpoch, res.LastOffset+1); done {
				t.Fatalf("the write is decided (%v) before any follower fetched", err)
			}
			if err := tc.end(r); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if !isKerr(err, kerr.NotLeaderForPartition) {
					t.Fatalf("the wait ended with %v, want NOT_LEADER_OR_FOLLOWER", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the wait outlived the leadership it waited in")
			}
		})
	}
}
