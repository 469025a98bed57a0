package replica

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	wlog "weir/internal/log"
)

const waitLong = 20 * time.Second // bounds a hang; never a performance assertion

// converged waits until every node's log is byte for byte the leader's
// and every high watermark equals the leader's.
func (c *memCluster) converged(leader int32, ids ...int32) {
	c.t.Helper()
	ln := c.nodes[leader]
	eventually(c.t, waitLong, "followers to converge", func() bool {
		want := ln.log.EndOffset()
		for _, id := range ids {
			n := c.nodes[id]
			if n.log.EndOffset() != want || n.replica.HighWatermark() != ln.replica.HighWatermark() {
				return false
			}
		}
		return ln.replica.HighWatermark() == want
	})
	want := readAll(c.t, ln.log)
	for _, id := range ids {
		if got := readAll(c.t, c.nodes[id].log); !bytes.Equal(got, want) {
			c.t.Fatalf("node %d log differs from leader %d (%d vs %d bytes)", id, leader, len(got), len(want))
		}
		if got, want := c.nodes[id].replica.EpochCache().Entries(), ln.replica.EpochCache().Entries(); !slices.Equal(got, want) {
			c.t.Fatalf("node %d epoch cache %v, leader %v", id, got, want)
		}
	}
}

func TestReplicationConvergesAndCommitsOnlyReplicatedData(t *testing.T) {
	c := newMemCluster(t, 1, 2, 3)
	c.elect(1, 1, []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{2, 3})
	// Four producers with acks=all at once: their waits share wake-ups.
	errs := make(chan error, 4)
	for p := range 4 {
		go func() {
			for i := range 15 {
				res, err := c.produce(1, batch(fmt.Sprint("p", p, "-", i), 1+i%5), -1)
				if err != nil {
					errs <- fmt.Errorf("producer %d batch %d: %w", p, i, err)
					return
				}
				// acks=all returned: every ISR member has the batch.
				for _, id := range []int32{2, 3} {
					if leo := c.nodes[id].log.EndOffset(); leo <= res.LastOffset {
						errs <- fmt.Errorf("batch acknowledged at %d but node %d ends at %d", res.LastOffset, id, leo)
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	c.converged(1, 2, 3)
	// Every copied batch went through OnFollowerAppend once, in order.
	var bases []int64
	if err := c.nodes[1].log.ScanHeaders(0, func(h wlog.BatchHeader) bool { bases = append(bases, h.BaseOffset); return true }); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int32{2, 3} {
		if copied, truncated := c.nodes[id].hooks(); !slices.Equal(copied, bases) || len(truncated) != 0 {
			t.Fatalf("node %d hooks: copied %v truncated %v; leader batches %v", id, copied, truncated, bases)
		}
	}
	if hw, leo := c.nodes[2].replica.HighWatermark(), c.nodes[2].log.EndOffset(); hw > leo {
		t.Fatalf("follower high watermark %d above its log end %d", hw, leo)
	}
}

func TestStoppedFollowerLeavesISRAndReturns(t *testing.T) {
	c := newMemCluster(t, 1, 2, 3)
	c.elect(1, 1, []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{2, 3})
	if _, err := c.produce(1, batch("before", 3), -1); err != nil {
		t.Fatal(err)
	}
	leader := c.nodes[1].replica

	// Node 3 stops fetching. Node 2 gets new data; the high watermark
	// stays where node 3 is, because node 3 is still in the ISR.
	c.nodes[3].manager.Close()
	stuck := leader.HighWatermark()
	res, err := c.produce(1, batch("while-away", 4), 1)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, "node 2 to fetch the new batch", func() bool {
		return c.nodes[2].log.EndOffset() > res.LastOffset && fetchedAt(c, 2, res.LastOffset+1)
	})
	if hw := leader.HighWatermark(); hw != stuck {
		t.Fatalf("high watermark moved to %d while ISR member 3 is at %d", hw, stuck)
	}
	if committed, _ := leader.ISR(); !slices.Equal(committed, []int32{1, 2, 3}) {
		t.Fatalf("ISR %v before the lag time", committed)
	}
	leader.MaybeShrinkISR()
	if _, pending := leader.ISR(); pending != nil {
		t.Fatalf("shrink proposed %v before replica.lag.time.max.ms", pending)
	}

	// Past replica.lag.time.max.ms node 3 leaves; node 2, which has the
	// whole log (its session fetches need not name the partition), stays.
	c.clock.Advance(DefaultMaxLag + time.Second)
	leader.MaybeShrinkISR()
	eventually(t, waitLong, "ISR without node 3", func() bool {
		committed, _ := leader.ISR()
		return slices.Equal(committed, []int32{1, 2})
	})
	if st := leader.Stats(); st.ISRShrinks != 1 || !st.UnderReplicated || st.UnderMinISR {
		t.Fatalf("leader stats %+v, want one shrink, under-replicated, not under min ISR", st)
	}
	// With node 3 out, the batch is committed.
	if err := waitHW(leader, res); err != nil {
		t.Fatalf("acks=all after the shrink: %v", err)
	}

	// Node 3 comes back, catches up and rejoins.
	c.nodes[3].manager = c.newManager(3)
	c.nodes[3].manager.AddPartitions([]Follow{{Replica: c.nodes[3].replica, Leader: 1, LeaderEpoch: 1}})
	eventually(t, waitLong, "node 3 back in the ISR", func() bool {
		committed, _ := leader.ISR()
		return slices.Equal(committed, []int32{1, 2, 3})
	})
	if _, err := c.produce(1, batch("after", 2), -1); err != nil {
		t.Fatal(err)
	}
	c.converged(1, 2, 3)
}

func TestDivergedFollowerTruncatesExactlyTheSuffix(t *testing.T) {
	c := newMemCluster(t, 1, 2, 3)
	c.elect(1, 1, []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{2, 3})
	for i := range 10 {
		if _, err := c.produce(1, batch(fmt.Sprint("common", i), 2), -1); err != nil {
			t.Fatal(err)
		}
	}
	c.converged(1, 2, 3)
	common := c.nodes[1].log.EndOffset()

	// Node 1 is cut off: its followers stop, and it writes a suffix in
	// epoch 1 that nobody else gets (acks=1, never committed).
	for _, id := range []int32{2, 3} {
		c.nodes[id].manager.RemovePartitions([]*Replica{c.nodes[id].replica})
	}
	for i := range 3 {
		if _, err := c.produce(1, batch(fmt.Sprint("lost", i), 3), 1); err != nil {
			t.Fatal(err)
		}
	}
	if c.nodes[1].log.EndOffset() != common+9 {
		t.Fatalf("divergent suffix not written: end %d", c.nodes[1].log.EndOffset())
	}

	// Node 2 leads epoch 2 with node 3; they write a different suffix.
	c.elect(2, 2, []int32{1, 2, 3}, []int32{2, 3}, []int32{3})
	for i := range 5 {
		if _, err := c.produce(2, batch(fmt.Sprint("epoch2-", i), 1), -1); err != nil {
			t.Fatal(err)
		}
	}

	// Node 1 returns as a follower of node 2.
	before := len(c.fetchOffsetsFrom(1))
	c.elect(2, 2, []int32{1, 2, 3}, []int32{2, 3}, []int32{1})
	c.converged(2, 1, 3)
	// It never fetched below the divergence point: it cut exactly the
	// nine offsets of epoch 1 that the new leader does not have.
	offsets := c.fetchOffsetsFrom(1)[before:]
	if slices.Min(offsets) != common || !slices.Contains(offsets, common) {
		t.Fatalf("node 1 fetched from %v after returning; divergence point is %d", offsets, common)
	}
	want := []EpochEntry{{1, 0}, {2, common}}
	if got := c.nodes[1].replica.EpochCache().Entries(); !slices.Equal(got, want) {
		t.Fatalf("epoch cache %v, want %v", got, want)
	}
	if _, truncated := c.nodes[1].hooks(); !slices.Equal(truncated, []int64{common}) {
		t.Fatalf("OnTruncate saw %v, want [%d]", truncated, common)
	}
	if st := c.nodes[1].replica.Stats(); st.Truncations != 1 || st.Role != RoleFollower || st.Leader != 2 {
		t.Fatalf("node 1 stats %+v, want one truncation as follower of 2", st)
	}
	// And rejoins the ISR.
	eventually(t, waitLong, "node 1 in the ISR", func() bool {
		committed, _ := c.nodes[2].replica.ISR()
		return slices.Equal(committed, []int32{1, 2, 3})
	})
	if st := c.nodes[2].replica.Stats(); st.ISRExpands != 1 || st.UnderReplicated || st.ISR != 3 {
		t.Fatalf("leader stats %+v, want one expansion and a full ISR", st)
	}
}

func fetchedAt(c *memCluster, id int32, offset int64) bool {
	return slices.Contains(c.fetchOffsetsFrom(id), offset)
}

func TestRestartedFollowerRecoversAndCatchesUp(t *testing.T) {
	for _, dropEpochs := range []bool{false, true} {
		t.Run(fmt.Sprint("drop-epoch-checkpoint=", dropEpochs), func(t *testing.T) {
			c := newMemCluster(t, 1, 2, 3)
			c.elect(1, 1, []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{2, 3})
			for i := range 5 {
				if _, err := c.produce(1, batch(fmt.Sprint("e1-", i), 2), -1); err != nil {
					t.Fatal(err)
				}
			}
			// A leader change, so the restarted node has two epochs to
			// recover.
			c.elect(2, 2, []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{1, 3})
			for i := range 5 {
				if _, err := c.produce(2, batch(fmt.Sprint("e2-", i), 3), -1); err != nil {
					t.Fatal(err)
				}
			}
			c.converged(2, 1, 3)
			before := c.nodes[3].replica.EpochCache().Entries()

			c.restart(3, dropEpochs)
			n := c.nodes[3]
			if got := n.replica.EpochCache().Entries(); !slices.Equal(got, before) {
				t.Fatalf("recovered epoch cache %v, want %v", got, before)
			}
			// Written while node 3 is away (acks=1: node 3 is still in the
			// ISR, so nothing commits until it is back).
			if _, err := c.produce(2, batch("while-down", 4), 1); err != nil {
				t.Fatal(err)
			}
			st := PartitionState{Leader: 2, LeaderEpoch: 2, PartitionEpoch: 200, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}
			if err := n.replica.BecomeFollower(st); err != nil {
				t.Fatal(err)
			}
			n.manager.AddPartitions([]Follow{{Replica: n.replica, Leader: 2, LeaderEpoch: 2}})
			if _, err := c.produce(2, batch("after", 1), -1); err != nil {
				t.Fatal(err)
			}
			c.converged(2, 1, 3)
			if _, truncated := n.hooks(); len(truncated) != 0 {
				t.Fatalf("restarted follower truncated to %v; its log was a prefix of the leader's", truncated)
			}
		})
	}
}

// TestIdleFollowersFetchNothing: once caught up, followers keep sending
// Fetch requests in their sessions, and the leader reads nothing for
// them while nothing changes; a produce is read once per follower and
// committed.
func TestIdleFollowersFetchNothing(t *testing.T) {
	c := newMemCluster(t, 1, 2, 3)
	c.elect(1, 1, []int32{1, 2, 3}, []int32{1, 2, 3}, []int32{2, 3})
	if _, err := c.produce(1, batch("first", 3), -1); err != nil {
		t.Fatal(err)
	}
	c.converged(1, 2, 3)
	counts := func() (rounds, reads int) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.rounds, len(c.fetches)
	}
	// Let the followers learn the high watermark (one more read each).
	eventually(t, waitLong, "followers at the leader's high watermark", func() bool {
		hw := c.nodes[1].replica.HighWatermark()
		return c.nodes[2].replica.HighWatermark() == hw && c.nodes[3].replica.HighWatermark() == hw
	})
	settled, _ := counts()
	eventually(t, waitLong, "requests in flight answered", func() bool {
		r, _ := counts()
		return r >= settled+4
	})
	rounds, reads := counts()
	eventually(t, waitLong, "ten more idle fetch rounds", func() bool {
		r, _ := counts()
		return r >= rounds+10
	})
	if _, after := counts(); after != reads {
		t.Fatalf("the leader read %d partitions for idle followers", after-reads)
	}
	if _, err := c.produce(1, batch("second", 2), -1); err != nil {
		t.Fatal(err)
	}
	c.converged(1, 2, 3)
}
