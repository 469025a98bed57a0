package share

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The inter-broker share-state APIs (ReadShareGroupState, key 84, and
// WriteShareGroupState, key 85) carry a StateRecord's fields: these
// convert between the two, for a share-partition leader that keeps its
// state with a share coordinator on another broker. A write is a Delta
// (the coordinator merges it and decides when to store a snapshot, as in
// Kafka); a read answers with the whole state, a Snapshot.

// WriteStateOf is r as one partition of a WriteShareGroupState request.
func WriteStateOf(partition int32, r StateRecord) kmsg.WriteShareGroupStateRequestTopicPartition {
	p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	p.Partition, p.StateEpoch, p.LeaderEpoch, p.StartOffset = partition, r.StateEpoch, r.LeaderEpoch, r.StartOffset
	p.StateBatches = wireBatches(r.Batches)
	return p
}

// wireBatches are batches as WriteShareGroupState carries them (a
// ReadShareGroupState batch has the same fields).
func wireBatches(bs []StateBatch) []kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch {
	out := make([]kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch, len(bs))
	for i, b := range bs {
		out[i] = kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		out[i].FirstOffset, out[i].LastOffset, out[i].DeliveryState, out[i].DeliveryCount = b.First, b.Last, int8(b.State), b.DeliveryCount
	}
	return out
}

// stateBatches is the inverse of wireBatches.
func stateBatches(bs []kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch) []StateBatch {
	var out []StateBatch
	for _, b := range bs {
		out = append(out, StateBatch{First: b.FirstOffset, Last: b.LastOffset, State: RecordState(b.DeliveryState), DeliveryCount: b.DeliveryCount})
	}
	return out
}

// StateOfWrite is the Delta a WriteShareGroupState partition carries. It
// never panics, and what it returns passes Validate; a partition that
// does not (batches out of order, an unknown state) is INVALID_REQUEST.
func StateOfWrite(p *kmsg.WriteShareGroupStateRequestTopicPartition) (StateRecord, error) {
	r := StateRecord{Kind: Delta, StateEpoch: p.StateEpoch, LeaderEpoch: p.LeaderEpoch, StartOffset: p.StartOffset, Batches: stateBatches(p.StateBatches)}
	if err := r.Validate(); err != nil {
		return StateRecord{}, fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
	}
	return r, nil
}

// ReadStateOf is a partition's whole state (a Snapshot) as one partition
// of a ReadShareGroupState response.
func ReadStateOf(partition int32, snap StateRecord) kmsg.ReadShareGroupStateResponseTopicPartition {
	p := kmsg.NewReadShareGroupStateResponseTopicPartition()
	p.Partition, p.StateEpoch, p.StartOffset = partition, snap.StateEpoch, snap.StartOffset
	for _, b := range wireBatches(snap.Batches) {
		p.StateBatches = append(p.StateBatches, kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch(b))
	}
	return p
}

// StateOfRead is the Snapshot a ReadShareGroupState partition carries,
// stamped with the reader's leader epoch; the partition's error if it has
// one. It never panics, and what it returns passes Validate.
func StateOfRead(p *kmsg.ReadShareGroupStateResponseTopicPartition, leaderEpoch int32) (StateRecord, error) {
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		if p.ErrorMessage != nil {
			return StateRecord{}, fmt.Errorf("%w: %s", err, *p.ErrorMessage)
		}
		return StateRecord{}, err
	}
	ws := make([]kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch, len(p.StateBatches))
	for i, b := range p.StateBatches {
		ws[i] = kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch(b)
	}
	r := StateRecord{Kind: Snapshot, StateEpoch: p.StateEpoch, LeaderEpoch: leaderEpoch, StartOffset: p.StartOffset, Batches: stateBatches(ws)}
	if err := r.Validate(); err != nil {
		return StateRecord{}, err
	}
	return r, nil
}

// Fence is the share coordinator's check of a write or read against the
// epochs it holds for the partition: an older state epoch is
// FENCED_STATE_EPOCH (the state was re-initialised since), an older
// leader epoch FENCED_LEADER_EPOCH (a newer leader of the data partition
// has read or written the state, so this one is stale). A leader epoch of
// -1 is not checked.
func Fence(heldState, heldLeader, stateEpoch, leaderEpoch int32) error {
	switch {
	case stateEpoch < heldState:
		return fmt.Errorf("%w: state epoch %d, the coordinator holds %d", kerr.FencedStateEpoch, stateEpoch, heldState)
	case leaderEpoch != -1 && leaderEpoch < heldLeader:
		return fmt.Errorf("%w: leader epoch %d, the coordinator holds %d", kerr.FencedLeaderEpoch, leaderEpoch, heldLeader)
	}
	return nil
}
