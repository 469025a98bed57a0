package controller

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// AlterPartition handles AlterPartition (API 56): a partition leader asks
// to change its ISR. The checks, in Kafka's order, and their errors:
//
//   - the request's broker epoch is not the leader's registration:
//     STALE_BROKER_EPOCH for the whole request;
//   - unknown topic: UNKNOWN_TOPIC_ID (v2+, by id) or
//     UNKNOWN_TOPIC_OR_PARTITION (by name); unknown partition:
//     UNKNOWN_TOPIC_OR_PARTITION;
//   - leader or partition epoch ahead of the controller's: NOT_CONTROLLER
//     (this controller is behind: the sender should find the new one);
//   - leader epoch behind: FENCED_LEADER_EPOCH; sender not the leader:
//     INVALID_REQUEST; partition epoch behind: INVALID_UPDATE_VERSION (a
//     stale request: the leader must refresh its view first);
//   - an ISR that repeats a broker, has one outside the replicas or lacks
//     the leader, or a leader recovery state that is RECOVERING with more
//     than one ISR member or goes from RECOVERED to RECOVERING:
//     INVALID_REQUEST;
//   - an ISR member that is unregistered, fenced, shutting down or of
//     another broker epoch (v3+): INELIGIBLE_REPLICA (OPERATION_NOT_ATTEMPTED
//     before v2).
//
// An accepted change bumps the partition epoch and is answered with the
// new state. When it completes a reassignment that removes the leader,
// the new leader is elected in the same change and the old one gets
// NEW_LEADER_ELECTED (FENCED_LEADER_EPOCH before v2).
func (c *Controller) AlterPartition(req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, []metadata.Record) {
	resp := kmsg.NewPtrAlterPartitionResponse()
	resp.Version = req.Version
	if _, ok := c.brokerAt(req.BrokerID, req.BrokerEpoch); !ok {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp, nil
	}
	t := c.begin()
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionResponseTopic()
		st.Topic, st.TopidID = rt.Topic, rt.TopicID
		var tp *metadata.Topic
		var ok bool
		if req.Version >= 2 {
			tp, ok = t.b.Topic(rt.TopicID)
		} else {
			tp, ok = t.b.TopicByName(rt.Topic)
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionResponseTopicPartition()
			sp.Partition = rp.Partition
			switch {
			case !ok && req.Version >= 2:
				sp.ErrorCode = kerr.UnknownTopicID.Code
			case !ok:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				t.alterPartition(req, tp, &rp, &sp)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	recs, err := t.commit()
	if err != nil {
		resp.ErrorCode = kerr.UnknownServerError.Code
		resp.Topics = nil
		return resp, nil
	}
	return resp, recs
}

func (t *txn) alterPartition(req *kmsg.AlterPartitionRequest, tp *metadata.Topic, rp *kmsg.AlterPartitionRequestTopicPartition, sp *kmsg.AlterPartitionResponseTopicPartition) {
	type member struct {
		id    int32
		epoch int64
	}
	var isr []member
	if req.Version >= 3 {
		for _, m := range rp.NewEpochISR {
			isr = append(isr, member{m.BrokerID, m.BrokerEpoch})
		}
	} else {
		for _, id := range rp.NewISR {
			isr = append(isr, member{id, -1})
		}
	}
	ids := make([]int32, len(isr))
	for i, m := range isr {
		ids[i] = m.id
	}
	ch, ok := t.change(tp.ID(), rp.Partition)
	if !ok {
		sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return
	}
	cur := &ch.cur
	fail := func(err *kerr.Error) { sp.ErrorCode = err.Code }
	switch {
	case rp.LeaderEpoch > cur.LeaderEpoch() || rp.PartitionEpoch > cur.PartitionEpoch():
		fail(kerr.NotController)
		return
	case rp.LeaderEpoch < cur.LeaderEpoch():
		fail(kerr.FencedLeaderEpoch)
		return
	case req.BrokerID != cur.Leader():
		fail(kerr.InvalidRequest)
		return
	case rp.PartitionEpoch < cur.PartitionEpoch():
		fail(kerr.InvalidUpdateVersion)
		return
	case len(ids) > len(cur.Replicas()) || !distinct(ids) || !subset(ids, cur.Replicas()) || !slices.Contains(ids, cur.Leader()):
		fail(kerr.InvalidRequest)
		return
	case rp.LeaderRecoveryState != metadata.Recovered && rp.LeaderRecoveryState != metadata.Recovering,
		rp.LeaderRecoveryState == metadata.Recovering && len(ids) > 1,
		rp.LeaderRecoveryState == metadata.Recovering && cur.LeaderRecovery() == metadata.Recovered:
		fail(kerr.InvalidRequest)
		return
	}
	for _, m := range isr {
		b, ok := t.b.Broker(m.id)
		if !ok || b.InControlledShutdown || b.Fenced || m.epoch != -1 && m.epoch != b.Epoch {
			if req.Version >= 2 {
				fail(kerr.IneligibleReplica)
			} else {
				fail(kerr.OperationNotAttempted)
			}
			return
		}
	}
	ch.isr = ids
	ch.recovery = rp.LeaderRecoveryState
	ch.election = t.onlineElection(tp.Name())
	if rec := t.build(&ch); rec != nil {
		t.add(rec)
		if rec.Leader != metadata.NoLeaderChange && rec.Leader != req.BrokerID {
			if req.Version >= 2 {
				fail(kerr.NewLeaderElected)
			} else {
				fail(kerr.FencedLeaderEpoch)
			}
			return
		}
	}
	now, _ := t.b.Partition(tp.ID(), rp.Partition)
	sp.LeaderID, sp.LeaderEpoch, sp.PartitionEpoch = now.Leader(), now.LeaderEpoch(), now.PartitionEpoch()
	sp.ISR = slices.Clone(now.ISR())
	sp.LeaderRecoveryState = now.LeaderRecovery()
}

func distinct(ids []int32) bool {
	for i, id := range ids {
		if slices.Contains(ids[i+1:], id) {
			return false
		}
	}
	return true
}
