package replica

import (
	"context"
	"reflect"
	"testing"
	"time"

	wlog "weir/internal/log"
)

// txnBatch is batch(tag, n) from a transactional producer.
func txnBatch(pid int64, epoch int16, seq int32, tag string, n int) []byte {
	b := batch(tag, n)
	wlog.StampProducer(b, pid, epoch, seq, true)
	return b
}

// produceTxn appends a transactional batch to leader as the produce
// handler would after verifying the transaction.
func (c *memCluster) produceTxn(leader int32, b []byte, acks int16) AppendResult {
	c.t.Helper()
	n := c.nodes[leader]
	res, err := n.replica.Append(b, acks, wlog.AppendOptions{Guard: n.state.VerifiedGuard})
	if err != nil {
		c.t.Fatal(err)
	}
	n.signal()
	return res
}

// marker writes a transaction marker on leader as WriteTxnMarkers does;
// with wait it waits for the high watermark to pass it.
func (c *memCluster) marker(leader int32, pid int64, epoch int16, commit, wait bool) {
	c.t.Helper()
	n := c.nodes[leader]
	m := wlog.TxnMarker{ProducerID: pid, ProducerEpoch: epoch, Marker: wlog.Marker{Type: wlog.ControlAbort, CoordinatorEpoch: 1}}
	if commit {
		m.Type = wlog.ControlCommit
	}
	res, err := n.replica.AppendMarker(m, wlog.AppendOptions{Guard: n.state.MarkerGuard(0)})
	if err != nil {
		c.t.Fatal(err)
	}
	n.signal()
	if !wait {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.replica.WaitForHW(ctx, res.LeaderEpoch, res.LastOffset+1); err != nil {
		c.t.Fatal(err)
	}
}

// txnView is what a node shows of the partition's transactions.
type txnView struct {
	LSO       int64
	Aborted   []wlog.AbortedTxn
	Producers []wlog.ProducerInfo
}

func (c *memCluster) txnView(id int32) txnView {
	n := c.nodes[id]
	return txnView{n.replica.LastStableOffset(), n.log.AbortedTransactions(0, n.log.EndOffset()), n.log.DescribeProducers()}
}

// TestFollowersApplyMarkers replicates transactions, commit and abort
// markers to followers and checks that each follower shows the leader's
// last stable offset, aborted-transaction index and producer state; then
// that a deposed leader's divergent suffix (a transaction and its abort
// marker no one else has) is cut with its index entry and producer state,
// and that a marker the new leader writes ends the transaction there too.
func TestFollowersApplyMarkers(t *testing.T) {
	c := newTxnCluster(t, 1, 2, 3)
	c.elect(1, 1, []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{2, 3})
	c.produceTxn(1, txnBatch(100, 0, 0, "a", 2), -1)
	c.produceTxn(1, txnBatch(200, 0, 0, "b", 1), -1)
	c.marker(1, 100, 0, false, true)
	c.produceTxn(1, txnBatch(200, 0, 1, "b", 2), -1)
	c.marker(1, 200, 0, true, true)
	open := c.produceTxn(1, txnBatch(300, 0, 0, "c", 1), -1)
	c.converged(1, 2, 3)
	want := c.txnView(1)
	if want.LSO != open.BaseOffset || len(want.Aborted) != 1 || want.Aborted[0].ProducerID != 100 {
		t.Fatalf("leader shows %+v", want)
	}
	for _, id := range []int32{2, 3} {
		eventually(t, waitLong, "follower's LSO", func() bool { return c.nodes[id].replica.LastStableOffset() == want.LSO })
		if got := c.txnView(id); !reflect.DeepEqual(got, want) {
			t.Fatalf("node %d shows\n%+v\nleader\n%+v", id, got, want)
		}
	}

	// Node 1 is cut off and writes a transaction and its abort alone.
	for _, id := range []int32{2, 3} {
		c.nodes[id].manager.RemovePartitions([]*Replica{c.nodes[id].replica})
	}
	c.produceTxn(1, txnBatch(400, 0, 0, "lost", 2), 1)
	c.marker(1, 400, 0, false, false)
	c.marker(1, 300, 0, false, false)
	if n := len(c.nodes[1].log.AbortedTransactions(0, c.nodes[1].log.EndOffset())); n != 3 {
		t.Fatalf("node 1 indexed %d aborts, want 3", n)
	}

	// Node 2 leads epoch 2 and commits producer 300's transaction.
	c.elect(2, 2, []int32{1, 2, 3}, []int32{2, 3}, []int32{3})
	c.marker(2, 300, 0, true, true)
	c.elect(2, 2, []int32{1, 2, 3}, []int32{2, 3}, []int32{1})
	c.converged(2, 1, 3)
	want = c.txnView(2)
	if want.LSO != c.nodes[2].log.EndOffset() || len(want.Aborted) != 1 {
		t.Fatalf("new leader shows %+v", want)
	}
	for _, id := range []int32{1, 3} {
		eventually(t, waitLong, "follower's LSO", func() bool { return c.nodes[id].replica.LastStableOffset() == want.LSO })
		if got := c.txnView(id); !reflect.DeepEqual(got, want) {
			t.Fatalf("node %d shows\n%+v\nleader\n%+v", id, got, want)
		}
	}
	// Restarted from disk, the deposed leader shows the same.
	c.nodes[1].manager.RemovePartitions([]*Replica{c.nodes[1].replica})
	c.restart(1, false)
	if got := c.txnView(1); !reflect.DeepEqual(got.Aborted, want.Aborted) || !reflect.DeepEqual(got.Producers, want.Producers) {
		t.Fatalf("restarted node 1 shows\n%+v\nleader\n%+v", got, want)
	}
}
