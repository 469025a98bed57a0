package replica

import (
	"context"
	"maps"
	"testing"
	"time"

	"weir/internal/metadata"
)

// TestApplyRoles: the image's states, applied on every node, make the
// named leader lead with no fetcher and the others follow it from one
// fetcher; a failover moves every node's fetching to the new leader
// (the new leader leaves its fetcher before leading); a partition
// without a leader leaves every fetcher.
func TestApplyRoles(t *testing.T) {
	c := newMemCluster(t, 1, 2, 3)
	apply := func(st PartitionState, ids ...int32) {
		t.Helper()
		for _, id := range ids {
			n := c.nodes[id]
			n.manager.ApplyRoles([]RoleChange{{Replica: n.replica, State: st}})
		}
	}
	check := func(what string, leader, epoch int32, fetchers map[int32]map[int32]int) {
		t.Helper()
		for id, want := range fetchers {
			n := c.nodes[id]
			role, l, e := n.replica.State()
			wantRole := RoleFollower
			if id == leader {
				wantRole = RoleLeader
			}
			if role != wantRole || l != leader || e != epoch {
				t.Fatalf("%s: node %d is %v of leader %d at epoch %d, want %v of %d at %d", what, id, role, l, e, wantRole, leader, epoch)
			}
			if got := n.manager.Leaders(); !maps.Equal(got, want) {
				t.Fatalf("%s: node %d fetches from %v, want %v", what, id, got, want)
			}
		}
	}
	all := []int32{1, 2, 3}
	apply(PartitionState{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: all, ISR: all}, 1, 2, 3)
	check("elected", 1, 1, map[int32]map[int32]int{1: {}, 2: {1: 1}, 3: {1: 1}})
	if _, err := c.produce(1, batch("a", 3), -1); err != nil {
		t.Fatal(err)
	}
	c.converged(1, 2, 3)

	// Node 2 takes over: it leaves node 1's fetcher and leads, node 1
	// follows it.
	apply(PartitionState{Leader: 2, LeaderEpoch: 2, PartitionEpoch: 2, Replicas: all, ISR: all}, 2, 3, 1)
	check("failover", 2, 2, map[int32]map[int32]int{1: {2: 1}, 2: {}, 3: {2: 1}})
	if _, err := c.produce(2, batch("b", 2), -1); err != nil {
		t.Fatal(err)
	}
	c.converged(2, 1, 3)

	// A state older than the replica's (epoch 1, leader 1) changes
	// nothing: node 3 keeps fetching from node 2.
	apply(PartitionState{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: all, ISR: all}, 3)
	check("stale state", 2, 2, map[int32]map[int32]int{1: {2: 1}, 2: {}, 3: {2: 1}})
	// Nor does an older state naming node 3 leader.
	apply(PartitionState{Leader: 3, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: all, ISR: all}, 3)
	check("stale leadership", 2, 2, map[int32]map[int32]int{1: {2: 1}, 2: {}, 3: {2: 1}})

	// No leader: every node stops fetching.
	apply(PartitionState{Leader: -1, LeaderEpoch: 3, PartitionEpoch: 3, Replicas: all, ISR: []int32{2}}, 1, 2, 3)
	check("leaderless", -1, 3, map[int32]map[int32]int{1: {}, 2: {}, 3: {}})
}

// TestEligibleIn: registered, unfenced, not shutting down, and at the
// fetch's broker epoch when it carried one; read from the image of the
// moment.
func TestEligibleIn(t *testing.T) {
	img, _, err := metadata.Empty().Apply(0, []metadata.Record{
		&metadata.RegisterBrokerRecord{ID: 1, Epoch: 10},
		&metadata.RegisterBrokerRecord{ID: 2, Epoch: 20, Fenced: true},
		&metadata.RegisterBrokerRecord{ID: 3, Epoch: 30, InControlledShutdown: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	current := img
	eligible := EligibleIn(func() *metadata.Image { return current })
	for _, tc := range []struct {
		id    int32
		epoch int64
		want  bool
	}{
		{1, -1, true},
		{1, 10, true},
		{1, 9, false},
		{2, -1, false},
		{2, 20, false},
		{3, -1, false},
		{4, -1, false},
	} {
		if got := eligible(tc.id, tc.epoch); got != tc.want {
			t.Errorf("eligible(%d, %d) = %v, want %v", tc.id, tc.epoch, got, tc.want)
		}
	}
	// Broker 1 registers again: a fetch from its former epoch no longer
	// counts.
	current, _, err = img.Apply(1, []metadata.Record{&metadata.RegisterBrokerRecord{ID: 1, Incarnation: [16]byte{1}, Epoch: 11}})
	if err != nil {
		t.Fatal(err)
	}
	if eligible(1, 10) || !eligible(1, 11) {
		t.Fatal("the image of the moment was not read")
	}
}

// TestExpireISR: each round asks every led replica to shrink its ISR, so
// a follower that stopped fetching leaves it; the task ends with its
// context.
func TestExpireISR(t *testing.T) {
	clk := newFakeClock()
	proposed := make(chan ISRChange, 4)
	env := NewEnv(Env{LocalID: 1, MaxLag: time.Second, Now: clk.Now,
		OnISRChange: func(_ *Replica, ch ISRChange) { proposed <- ch }})
	r, err := Open(openLog(t, t.TempDir()), 0, Config{Env: env, Topic: "t", MinISR: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.BecomeLeader(PartitionState{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second) // follower 2 never fetched
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ExpireISR(ctx, func() time.Duration { return 2 * time.Millisecond }, func() []*Replica { return []*Replica{r} })
	}()
	select {
	case ch := <-proposed:
		if len(ch.NewISR) != 1 || ch.NewISR[0] != 1 {
			t.Fatalf("proposed ISR %v, want [1]", ch.NewISR)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no shrink proposed")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("ExpireISR did not return")
	}
}
