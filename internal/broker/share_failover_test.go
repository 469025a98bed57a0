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
			reassign := kmsg.NewPtrAlterPartitionAssignmentsRequest()
			rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			rt.Topic = "sf"
			rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			rp.Partition, rp.Replicas = 0, next
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
			et.Topic, et.Partitions = "sf", []int32{0}
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

			m := &shareMember{t: t, c: newClient(t, seeds[0], kgo.SeedBrokers(seeds...)), group: group, id: "m1", coord: coord, leader: leader}
			m.join(ctx, "sf")
			var got []delivered
			eventually(t, 20*time.Second, func() error {
				got = append(got, records(t, m.fetch(ctx, fetchOpts{maxWait: 100 * time.Millisecond}))...)
				if len(got) < 10 {
					return fmt.Errorf("%d records acquired", len(got))
				}
				return nil
			})
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
			var again []delivered
			eventually(t, 20*time.Second, func() error {
				resp := m.fetch(ctx, fetchOpts{maxWait: 100 * time.Millisecond})
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
				again = append(again, records(t, resp)...)
				if len(again) < 6 {
					return fmt.Errorf("%d records acquired on the new leader: %+v", len(again), again)
				}
				return nil
			})
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
