package sharestate

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "weir/internal/log"
	"weir/internal/replica"
	"weir/internal/share"
)

// testNode is one node of a two-node test: it leads the state partitions
// leaders says are its own, over real logs and replicas, and reaches the
// other node's service in process.
type testNode struct {
	id      int32
	leaders map[int]int32
	reps    map[int]*replica.Replica
	peer    *Service
	svc     *Service
}

func (n *testNode) Partitions() int                          { return len(n.leaders) }
func (n *testNode) EnsureTopic(context.Context, int32) error { return nil }
func (n *testNode) Leader(i int) int32                       { return n.leaders[i] }
func (n *testNode) Serving() bool                            { return true }
func (n *testNode) Replica(i int) Replica {
	if r, ok := n.reps[i]; ok {
		return r
	}
	return nil
}
func (n *testNode) Send(ctx context.Context, _ int32, req kmsg.Request) (kmsg.Response, error) {
	switch r := req.(type) {
	case *kmsg.WriteShareGroupStateRequest:
		return n.peer.HandleWrite(ctx, r), nil
	case *kmsg.ReadShareGroupStateRequest:
		return n.peer.HandleRead(ctx, r), nil
	}
	return nil, fmt.Errorf("unexpected %T", req)
}

// leaderOf opens a replica leading a state partition alone, in dir.
func leaderOf(t *testing.T, dir string, node, epoch int32) *replica.Replica {
	t.Helper()
	l, err := wlog.Open(dir, wlog.DefaultConfig(), wlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	r, err := replica.Open(l, l.EndOffset(), replica.Config{Env: replica.NewEnv(replica.Env{LocalID: node}), Topic: Topic})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.BecomeLeader(replica.PartitionState{Leader: node, LeaderEpoch: epoch, PartitionEpoch: epoch, Replicas: []int32{node}, ISR: []int32{node}}); err != nil {
		t.Fatal(err)
	}
	return r
}

// keyIn finds a share partition's state key that lives in state
// partition want of n.
func keyIn(t *testing.T, want, n int) []byte {
	for i := range 1000 {
		k, err := RecordKey(share.StateKey{Group: fmt.Sprintf("g%d", i), Partition: 0})
		if err != nil {
			t.Fatal(err)
		}
		if PartitionFor(k, n) == want {
			return k
		}
	}
	t.Fatal("no key found")
	return nil
}

func snapshot(t *testing.T, start int64, stateEpoch int32) []byte {
	t.Helper()
	r := share.New(share.Config{}, start).Snapshot()
	r.StateEpoch = stateEpoch
	v, err := r.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// startNodes makes node 1 leading state partition 0 and node 2 leading
// partition 1, each partition's log in its own directory of dirs.
func startNodes(t *testing.T, dirs [2]string) (a, b *testNode) {
	leaders := map[int]int32{0: 1, 1: 2}
	a = &testNode{id: 1, leaders: leaders, reps: map[int]*replica.Replica{0: leaderOf(t, dirs[0], 1, 3)}}
	b = &testNode{id: 2, leaders: leaders, reps: map[int]*replica.Replica{1: leaderOf(t, dirs[1], 2, 3)}}
	a.svc = New(Config{NodeID: 1, Partitions: 2, LogRecords: 1000}, a)
	b.svc = New(Config{NodeID: 2, Partitions: 2, LogRecords: 1000}, b)
	a.peer, b.peer = b.svc, a.svc
	for _, n := range []*testNode{a, b} {
		if err := n.svc.Start(); err != nil {
			t.Fatal(err)
		}
	}
	return a, b
}

func startOf(t *testing.T, recs []share.StateRecord) int64 {
	t.Helper()
	p, err := share.Restore(share.Config{}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return p.StartOffset()
}

// TestServiceWritesAndReadsWhereverTheCoordinatorIs: a leader's writes
// reach the key's coordinator in process or over the network, are
// fenced there, survive the coordinator's restart, and read back the same
// through either route.
func TestServiceWritesAndReadsWhereverTheCoordinatorIs(t *testing.T) {
	dirs := [2]string{t.TempDir(), t.TempDir()}
	a, b := startNodes(t, dirs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	local, remote := keyIn(t, 0, 2), keyIn(t, 1, 2)

	for _, k := range [][]byte{local, remote} {
		if err := a.svc.Write(k, snapshot(t, 7, 0), true, Fence{LeaderEpoch: 4}).Wait(ctx); err != nil {
			t.Fatalf("write: %v", err)
		}
		recs, err := a.svc.Read(ctx, k, 4)
		if err != nil || startOf(t, recs) != 7 {
			t.Fatalf("read back: %v, %+v", err, recs)
		}
	}
	// A new leader of the data partition reads at epoch 5: the old one's
	// writes are fenced from then on, here and through the network.
	for _, k := range [][]byte{local, remote} {
		if _, err := a.svc.Read(ctx, k, 5); err != nil {
			t.Fatal(err)
		}
		err := a.svc.Write(k, snapshot(t, 9, 0), true, Fence{LeaderEpoch: 4}).Wait(ctx)
		if !errors.Is(err, kerr.FencedLeaderEpoch) {
			t.Fatalf("deposed leader's write: %v, want FENCED_LEADER_EPOCH", err)
		}
		if err := a.svc.Write(k, snapshot(t, 9, 0), true, Fence{LeaderEpoch: 5}).Wait(ctx); err != nil {
			t.Fatalf("new leader's write: %v", err)
		}
	}
	// A deletion and a delta-free key read as no state.
	if err := a.svc.Write(local, nil, true, Fence{LeaderEpoch: -1}).Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if recs, err := a.svc.Read(ctx, local, 5); err != nil || len(recs) != 0 {
		t.Fatalf("after the deletion: %v, %+v", err, recs)
	}
	// Both nodes restart over the same logs: the coordinators replay them.
	a.svc.Close()
	b.svc.Close()
	a2, _ := startNodes(t, dirs)
	defer a2.svc.Close()
	defer a2.peer.Close()
	recs, err := a2.svc.Read(ctx, remote, 5)
	if err != nil || startOf(t, recs) != 9 {
		t.Fatalf("after restart: %v, %+v", err, recs)
	}
	if recs, err := a2.svc.Read(ctx, local, 5); err != nil || len(recs) != 0 {
		t.Fatalf("deleted state came back after restart: %v, %+v", err, recs)
	}
	// The fence is replayed too.
	if err := a2.svc.Write(remote, snapshot(t, 1, 0), true, Fence{LeaderEpoch: 4}).Wait(ctx); !errors.Is(err, kerr.FencedLeaderEpoch) {
		t.Fatalf("deposed leader's write after restart: %v", err)
	}
}

// A closed service fails writes to another node at once instead of
// leaving them waiting.
func TestServiceCloseFailsQueuedRemoteWrites(t *testing.T) {
	a, b := startNodes(t, [2]string{t.TempDir(), t.TempDir()})
	defer b.svc.Close()
	a.svc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := a.svc.Write(keyIn(t, 1, 2), snapshot(t, 1, 0), true, Fence{}).Wait(ctx)
	if !errors.Is(err, kerr.CoordinatorNotAvailable) {
		t.Fatalf("write after close: %v, want COORDINATOR_NOT_AVAILABLE", err)
	}
}

// TestServiceDefaultLogRecords: a service made without LogRecords keeps
// DefaultLogRecords records before it compacts, so writes well below it
// append each record once and leave the log start where it was (with no
// limit at all every write rewrote every key's records and moved the
// start, a checkpoint written and fsynced each time).
func TestServiceDefaultLogRecords(t *testing.T) {
	n := &testNode{id: 1, leaders: map[int]int32{0: 1}, reps: map[int]*replica.Replica{0: leaderOf(t, t.TempDir(), 1, 3)}}
	n.svc = New(Config{NodeID: 1, Partitions: 1}, n)
	defer n.svc.Close()
	if err := n.svc.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	k := keyIn(t, 0, 1)
	const writes = 20
	for i := range writes {
		if err := n.svc.Write(k, snapshot(t, int64(i), 0), i == 0, Fence{LeaderEpoch: 4}).Wait(ctx); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	l := n.reps[0].Log()
	if start, end := l.StartOffset(), l.EndOffset(); start != 0 || end != writes {
		t.Errorf("state log [%d, %d) after %d writes, want [0, %d)", start, end, writes, writes)
	}
}

// Settled says, without blocking, whether a ticket is over and how.
func TestTicketSettled(t *testing.T) {
	if done, err := (*Ticket)(nil).Settled(); !done || err != nil {
		t.Fatalf("nil ticket: %v %v, want over without error", done, err)
	}
	ok, finish := PendingTicket()
	if done, _ := ok.Settled(); done {
		t.Fatal("a pending ticket reads as over")
	}
	finish(nil)
	if done, err := ok.Settled(); !done || err != nil {
		t.Fatalf("completed ticket: %v %v", done, err)
	}
	bad, fail := PendingTicket()
	boom := errors.New("boom")
	fail(boom)
	if done, err := bad.Settled(); !done || !errors.Is(err, boom) {
		t.Fatalf("failed ticket: %v %v", done, err)
	}
}
