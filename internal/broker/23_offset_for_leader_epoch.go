package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// OffsetForLeaderEpoch v2-4: the end offset of the requested leader epoch,
// which consumers use to detect truncation after a leader change (KIP-320).
// A single node's partitions have lived under one leader epoch, so the
// answer for that epoch (or any earlier one) is the log end offset and a
// later epoch is unknown (-1, -1), as Kafka answers. ReplicaID (v3+) only
// matters to followers.
var _ = register(handler{key: 23, min: 2, max: 4, serve: (*Broker).handleOffsetForLeaderEpoch})

func (b *Broker) handleOffsetForLeaderEpoch(_ context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := r.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range r.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		t := b.lookupTopic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			p, perr := b.partitionOf(t, rp.Partition)
			if perr != nil {
				sp.ErrorCode = errCode(perr)
			} else {
				end, err := p.rep.EndOffsetForEpoch(rp.CurrentLeaderEpoch, rp.LeaderEpoch, true)
				if err != nil {
					sp.ErrorCode = errCode(err)
				} else {
					sp.LeaderEpoch, sp.EndOffset = end.Epoch, end.EndOffset
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return server.Ready(resp)
}
