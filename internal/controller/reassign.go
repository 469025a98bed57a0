package controller

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// AlterPartitionReassignments handles AlterPartitionReassignments (API
// 45). A reassignment to target replicas goes in stages, as in Kafka:
//
//  1. One change makes the replicas the target followed by the current
//     replicas not in it, marks the new ones adding and the dropped ones
//     removing. The leader stays. The new replicas start fetching.
//  2. Leaders add the new replicas to the ISR as they catch up
//     (AlterPartition).
//  3. The change that puts the last target replica in the ISR also ends
//     the reassignment: the removed replicas leave replicas and ISR, a new
//     leader is elected if the old one left, and the leader epoch grows.
//
// A target that is already the replica list, or whose replicas are all
// in the ISR already, completes at once. Null replicas cancel an ongoing
// reassignment: the replicas it was adding go, the ones it was removing
// stay (NO_REASSIGNMENT_IN_PROGRESS if none is ongoing). A new target
// replaces an ongoing one. The changes of one request are one batch.
func (c *Controller) AlterPartitionReassignments(req *kmsg.AlterPartitionAssignmentsRequest) (*kmsg.AlterPartitionAssignmentsResponse, []metadata.Record) {
	resp := kmsg.NewPtrAlterPartitionAssignmentsResponse()
	resp.Version = req.Version
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	allowRF := req.Version < 1 || req.AllowReplicationFactorChange
	t := c.begin()
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.ErrorCode, sp.ErrorMessage = codeAndMessage(t.reassign(rt.Topic, rp.Partition, rp.Replicas, allowRF))
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	recs, err := t.commit()
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = codeAndMessage(err)
		resp.Topics = nil
		return resp, nil
	}
	return resp, recs
}

func (t *txn) reassign(topic string, p int32, target []int32, allowRF bool) error {
	tp, ok := t.b.TopicByName(topic)
	if !ok {
		return apiErr(kerr.UnknownTopicOrPartition, "Unable to find a topic named %s.", topic)
	}
	ch, ok := t.change(tp.ID(), p)
	if !ok {
		return apiErr(kerr.UnknownTopicOrPartition, "Unable to find partition %s:%d.", topic, p)
	}
	cur := &ch.cur
	adding := func(id int32) bool { return slices.Contains(cur.Adding(), id) }
	if target == nil {
		if !cur.Reassigning() {
			return apiErr(kerr.NoReassignmentInProgress, "No partition reassignment is in progress.")
		}
		ch.replicas = without(cur.Replicas(), adding)
		ch.isr = without(cur.ISR(), adding)
		ch.election = electOnline
		if len(ch.isr) == 0 {
			if t.onlineElection(topic) != electUnclean {
				return apiErr(kerr.InvalidReplicaAssignment, "Unable to revert partition assignment for %s:%d because it would require an unclean leader election.", topic, p)
			}
			ch.isr, ch.election = ch.replicas[:1], electUnclean
		}
		ch.adding, ch.removing = []int32{}, []int32{}
	} else {
		if err := t.validAssignment(target, -1); err != nil {
			return err
		}
		if original := len(cur.Replicas()) - len(cur.Adding()); !allowRF && len(target) != original {
			return apiErr(kerr.InvalidReplicationFactor, "The replication factor is changed from %d to %d but AllowReplicationFactorChange is false.", original, len(target))
		}
		inTarget := func(id int32) bool { return slices.Contains(target, id) }
		inCur := func(id int32) bool { return slices.Contains(cur.Replicas(), id) }
		removing := slices.Sorted(slices.Values(without(cur.Replicas(), inTarget)))
		ch.replicas = append(slices.Clone(target), removing...)
		ch.adding = slices.Sorted(slices.Values(without(target, inCur)))
		ch.removing = removing
		ch.election = t.onlineElection(topic)
	}
	if rec := t.build(&ch); rec != nil {
		t.add(rec)
	}
	return nil
}

// ListPartitionReassignments handles ListPartitionReassignments (API 46)
// from the committed image: the listed partitions (all, when no topic is
// listed) that are being reassigned, with their replicas and the ones
// being added and removed. Unknown topics and partitions are left out.
func (c *Controller) ListPartitionReassignments(req *kmsg.ListPartitionReassignmentsRequest) *kmsg.ListPartitionReassignmentsResponse {
	resp := kmsg.NewPtrListPartitionReassignmentsResponse()
	resp.Version = req.Version
	img := c.committed
	list := func(tp *metadata.Topic, parts []int32) {
		st := kmsg.NewListPartitionReassignmentsResponseTopic()
		st.Topic = tp.Name()
		add := func(p int32, s metadata.Partition) {
			if !s.Reassigning() {
				return
			}
			sp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			sp.Partition = p
			sp.Replicas = slices.Clone(s.Replicas())
			sp.AddingReplicas = slices.Clone(s.Adding())
			sp.RemovingReplicas = slices.Clone(s.Removing())
			st.Partitions = append(st.Partitions, sp)
		}
		if parts == nil {
			tp.EachPartition(func(p int32, s metadata.Partition) bool { add(p, s); return true })
		}
		for _, p := range parts {
			if s, ok := tp.Partition(p); ok {
				add(p, s)
			}
		}
		if len(st.Partitions) > 0 {
			resp.Topics = append(resp.Topics, st)
		}
	}
	if req.Topics == nil {
		if img.ReassigningPartitions() > 0 {
			for _, tp := range img.Topics() {
				list(tp, nil)
			}
		}
		return resp
	}
	for _, rt := range req.Topics {
		if tp, ok := img.TopicByName(rt.Topic); ok {
			list(tp, append(make([]int32, 0, len(rt.Partitions)), rt.Partitions...))
		}
	}
	return resp
}
