// These tests state issue 8's requirement that a share partition's state
// survives a move of its data partition's leadership: the state lives in
// the replicated __share_group_state, with the share coordinator that
// leads the key's state partition.
package broker

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/share"
	"weir/internal/sharestate"
)

// TestShareStateFailover: a member acquires ten records on the data
// partition's leader, accepts 0-3, releases 4-6 and keeps 7-9 acquired;
// then the leadership moves (a preferred-leader election after a
// reassignment, or the leader stopped without a controlled shutdown). The
// new leader delivers 4-9 again, 4-6 for the second time, and never 0-3.
func TestShareStateFailover(t *testing.T) {
	for _, tc := range []struct {
		name string
		move func(t *testing.T, ctx context.Context, c *testCluster, adm *kgo.Client, leader int32, replicas []int32) int32
	}{
		{"elect", func(t *testing.T, ctx context.Context, c *testCluster, adm *kgo.Client, leader int32, replicas []int32) int32 {
			next := slices.Concat(replicas[1:], replicas[:1])
			moveLeader(t, ctx, adm, "sf", next)
			return next[0]
		}},
		{"kill", func(t *testing.T, ctx context.Context, c *testCluster, adm *kgo.Client, leader int32, replicas []int32) int32 {
			c.brokers[leader-1].stop()
			return 0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startCluster(t, 3, shortShareLocks)
			ctx := testCtx(t)
			// Every client is seeded with all brokers, so it outlives one.
			var seeds []string
			for _, b := range c.brokers {
				seeds = append(seeds, b.addr)
			}
			adm := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.RetryTimeout(10*time.Second))
			group := "failover-" + tc.name
			fc := kmsg.NewPtrFindCoordinatorRequest()
			fc.CoordinatorType, fc.CoordinatorKeys = 0, []string{group}
			var coord int32
			eventually(t, 30*time.Second, func() error {
				fr := request[*kmsg.FindCoordinatorResponse](t, ctx, adm, fc)
				coord = fr.Coordinators[0].NodeID
				return kerr.ErrorForCode(fr.Coordinators[0].ErrorCode)
			})
			// The data partition's leader is not the group coordinator, so
			// stopping it leaves the group in place.
			leader := coord%3 + 1
			replicas := []int32{leader, leader%3 + 1, (leader+1)%3 + 1}
			c.createAssigned(t, ctx, adm, "sf", replicas)
			produceN(t, ctx, newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("sf"), kgo.RecordPartitioner(kgo.ManualPartitioner())), "sf", 0, 0, 10, 10)
			setGroupConfigs(t, ctx, adm, group, "share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "60000")

			m := joinAndAcquire(t, ctx, seeds, group, "sf", coord, leader, 10)
			acks := map[int32][]ack{0: {{0, 3, []int8{1}}, {4, 6, []int8{2}}}}
			if resp := m.acknowledge(ctx, acks, false); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
				t.Fatalf("acknowledge: %+v", resp)
			}

			next := tc.move(t, ctx, c, adm, leader, replicas)
			live := c.brokers[coord-1].b
			eventually(t, 30*time.Second, func() error {
				pm, ok := live.node.Image().Partition(topicIDOf(t, c.brokers[coord-1], "sf"), 0)
				if !ok || pm.Leader() == leader || pm.Leader() < 0 || (next != 0 && pm.Leader() != next) {
					return fmt.Errorf("leader still %d", pm.Leader())
				}
				next = pm.Leader()
				return nil
			})

			// A new share session on the new leader.
			m.leader, m.session = next, 0
			again := acquireOnNewLeader(t, ctx, m, 6)
			for i, d := range again {
				// 4-6 were released after one delivery; 7-9 were only
				// acquired, which is not durable (share.StateRecord's
				// WithoutLocks), so they come back with the count the
				// state holds, none, and are delivered as for the first
				// time.
				want := int16(2)
				if d.offset >= 7 {
					want = 1
				}
				if d.offset != int64(4+i) || d.count != want {
					t.Errorf("new leader delivered %+v, want offset %d with delivery count %d", d, 4+i, want)
				}
			}
			if len(again) != 6 {
				t.Errorf("new leader delivered %d records, want 6 (offsets 4-9)", len(again))
			}
		})
	}
}

// moveLeader reassigns partition 0 of topic to replicas and elects their
// first, the preferred leader.
func moveLeader(t *testing.T, ctx context.Context, adm *kgo.Client, topic string, replicas []int32) {
	t.Helper()
	reassign := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = 0, replicas
	rt.Partitions = append(rt.Partitions, rp)
	reassign.Topics = append(reassign.Topics, rt)
	resp, err := adm.Request(ctx, reassign)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.AlterPartitionAssignmentsResponse); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("reassign: %+v", r)
	}
	elect := kmsg.NewPtrElectLeadersRequest()
	et := kmsg.NewElectLeadersRequestTopic()
	et.Topic, et.Partitions = topic, []int32{0}
	elect.Topics = append(elect.Topics, et)
	eventually(t, 20*time.Second, func() error {
		resp, err := adm.Request(ctx, elect)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.ElectLeadersResponse)
		if code := r.Topics[0].Partitions[0].ErrorCode; code != 0 && code != kerr.ElectionNotNeeded.Code {
			return kerr.ErrorForCode(code)
		}
		return nil
	})
}

// TestShareStateCoordinatorFailover stops the node coordinating a share
// partition's state (the leader of its __share_group_state partition,
// neither the group's coordinator nor the data partition's leader) after
// some acknowledgements: the member acknowledges the rest through the new
// coordinator, and when the data partition's leadership then moves too,
// the new leader, reading the state from the new coordinator, delivers
// only records produced afterwards.
func TestShareStateCoordinatorFailover(t *testing.T) {
	c := startCluster(t, 3, shortShareLocks, func(c *Config) { c.OffsetsPartitions = 6 })
	ctx := testCtx(t)
	var seeds []string
	for _, b := range c.brokers {
		seeds = append(seeds, b.addr)
	}
	adm := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.RetryTimeout(10*time.Second))
	c.createAssigned(t, ctx, adm, "sc", []int32{1, 2, 3})
	first := c.brokers[0].b
	if err := first.shareState.Ensure(); err != nil {
		t.Fatal(err)
	}
	topicID := topicIDOf(t, c.brokers[0], "sc")
	// A cluster makes __consumer_offsets on the first FindCoordinator.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKeys = 0, []string{"any"}
	eventually(t, 30*time.Second, func() error {
		fr := request[*kmsg.FindCoordinatorResponse](t, ctx, adm, fc)
		return kerr.ErrorForCode(fr.Coordinators[0].ErrorCode)
	})
	// A group whose coordinator is not node 1 (the data leader) and whose
	// state partition is led by the third node.
	var group string
	var coord, stateNode int32
	stateIndex := -1
	eventually(t, 30*time.Second, func() error {
		sh := shareStateHost{first}
		for i := range 1000 {
			g := fmt.Sprintf("scf-%d", i)
			p, ok := first.coordinatorPartition(g)
			if !ok {
				return fmt.Errorf("no %s yet", offsetsTopic)
			}
			gc := p.leader()
			rkey, err := sharestate.RecordKey(share.StateKey{Group: g, TopicID: topicID, Partition: 0})
			if err != nil {
				t.Fatal(err)
			}
			si := sharestate.PartitionFor(rkey, sh.Partitions())
			sn := sh.Leader(si)
			if gc > 1 && sn > 1 && sn != gc {
				group, coord, stateNode, stateIndex = g, gc, sn, si
				return nil
			}
		}
		seen := map[[2]int32]int{}
		for i := range 1000 {
			g := fmt.Sprintf("scf-%d", i)
			p, _ := first.coordinatorPartition(g)
			rkey, _ := sharestate.RecordKey(share.StateKey{Group: g, TopicID: topicID, Partition: 0})
			seen[[2]int32{p.leader(), sh.Leader(sharestate.PartitionFor(rkey, sh.Partitions()))}]++
		}
		return fmt.Errorf("no group name found with its state coordinated by a third node: (group coordinator, state coordinator) counts %v", seen)
	})
	t.Logf("group %s: coordinator %d, data leader 1, state coordinator %d (%s-%d)", group, coord, stateNode, sharestate.Topic, stateIndex)

	produceN(t, ctx, newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("sc"), kgo.RecordPartitioner(kgo.ManualPartitioner())), "sc", 0, 0, 10, 10)
	setGroupConfigs(t, ctx, adm, group, "share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "60000")
	m := joinAndAcquire(t, ctx, seeds, group, "sc", coord, 1, 10)
	if resp := m.acknowledge(ctx, map[int32][]ack{0: {{0, 3, []int8{1}}, {4, 9, []int8{2}}}}, false); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("acknowledge: %+v", resp)
	}

	c.brokers[stateNode-1].stop()
	live := c.brokers[coord-1].b
	stateTopic := live.lookupTopic(sharestate.Topic)
	eventually(t, 30*time.Second, func() error {
		pm, ok := live.node.Image().Partition(stateTopic.id, int32(stateIndex))
		if !ok || pm.Leader() == stateNode || pm.Leader() < 0 {
			return fmt.Errorf("%s-%d still led by %d", sharestate.Topic, stateIndex, pm.Leader())
		}
		return nil
	})

	// Accept 4-9 through the new coordinator. A write the old one did not
	// answer fails the acknowledgement; the records come back and are
	// accepted again.
	accepted := map[int64]bool{}
	var held []delivered
	eventually(t, 30*time.Second, func() error {
		resp := m.fetch(ctx, fetchOpts{maxWait: 100 * time.Millisecond, acks: ackAll(held, 1)})
		ackErr := ackErrors(resp)
		if ackErr == nil {
			for _, d := range held {
				accepted[d.offset] = true
			}
		}
		held = nil
		if err := fetchErr(m, resp); err != nil {
			return err
		}
		held = records(t, resp)
		for _, d := range held {
			if d.offset < 4 {
				t.Fatalf("offset %d delivered again after it was accepted", d.offset)
			}
		}
		if len(accepted) < 6 {
			return fmt.Errorf("accepted %v (acknowledgement error: %v)", accepted, ackErr)
		}
		return nil
	})

	// Now the data partition's leadership moves to the group's
	// coordinator, which reads the state from the new state coordinator.
	moveLeader(t, ctx, adm, "sc", []int32{coord, 1, stateNode})
	eventually(t, 30*time.Second, func() error {
		pm, ok := live.node.Image().Partition(topicID, 0)
		if !ok || pm.Leader() != coord {
			return fmt.Errorf("leader still %d", pm.Leader())
		}
		return nil
	})
	produceN(t, ctx, newClient(t, seeds[0], kgo.SeedBrokers(seeds[coord-1]), kgo.DefaultProduceTopic("sc"), kgo.RecordPartitioner(kgo.ManualPartitioner())), "sc", 0, 10, 5, 5)
	m.leader, m.session = coord, 0
	again := acquireOnNewLeader(t, ctx, m, 5)
	for i, d := range again {
		if d.offset != int64(10+i) || d.count != 1 {
			t.Errorf("new leader delivered %+v, want offset %d for the first time", d, 10+i)
		}
	}
	if len(again) != 5 {
		t.Errorf("new leader delivered %d records, want 5 (offsets 10-14)", len(again))
	}
}

// fetchErr is a ShareFetch's top-level or partition error, after which
// the member opens a new share session.
func fetchErr(m *shareMember, resp *kmsg.ShareFetchResponse) error {
	if resp.ErrorCode != 0 {
		m.session = 0
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			if p.ErrorCode != 0 {
				m.session = 0
				return kerr.ErrorForCode(p.ErrorCode)
			}
		}
	}
	return nil
}

// acquireOnNewLeader fetches from the member's leader, in a new share
// session, until n records are acquired.
func acquireOnNewLeader(t *testing.T, ctx context.Context, m *shareMember, n int) []delivered {
	t.Helper()
	var got []delivered
	eventually(t, 30*time.Second, func() error {
		resp := m.fetch(ctx, fetchOpts{maxWait: 100 * time.Millisecond})
		if err := fetchErr(m, resp); err != nil {
			return err
		}
		got = append(got, records(t, resp)...)
		if len(got) < n {
			return fmt.Errorf("%d records acquired on the new leader: %+v", len(got), got)
		}
		return nil
	})
	return got
}

// joinAndAcquire joins member m1 of group to topic and fetches from leader
// until n records are acquired.
func joinAndAcquire(t *testing.T, ctx context.Context, seeds []string, group, topic string, coord, leader int32, n int) *shareMember {
	t.Helper()
	m := &shareMember{t: t, c: newClient(t, seeds[0], kgo.SeedBrokers(seeds...)), group: group, id: "m1", coord: coord, leader: leader}
	m.join(ctx, topic)
	var got []delivered
	eventually(t, 20*time.Second, func() error {
		got = append(got, records(t, m.fetch(ctx, fetchOpts{maxWait: 100 * time.Millisecond}))...)
		if len(got) < n {
			return fmt.Errorf("%d records acquired", len(got))
		}
		return nil
	})
	return m
}
