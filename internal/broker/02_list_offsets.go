package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "weir/internal/log"
	"weir/internal/server"
)

// ListOffsets v1-11. Special timestamps: -1 latest (the high watermark,
// which is also the last stable offset without transactions), -2
// earliest, -3 max timestamp (KIP-734), -4 earliest local (KIP-405: all
// data is local, so the log start), -5 earliest pending upload (KIP-1005:
// nothing is tiered, so offset -1). TimeoutMillis (v10+) is unused: the
// answer never waits.
var _ = register(handler{key: 2, min: 1, max: 11, serve: (*Broker).handleListOffsets})

func (b *Broker) handleListOffsets(_ context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.ListOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range r.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		t := b.lookupTopic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset = -1, -1
			p, err := b.partitionOf(t, rp.Partition)
			if err != nil {
				sp.ErrorCode = errCode(err)
			} else {
				sp.ErrorCode = b.listOffset(p, &rp, &sp, r.ReplicaID >= 0, wlog.Isolation(r.IsolationLevel))
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return server.Ready(resp)
}

// listOffset answers one partition; a follower (replica) reads up to the
// log end, a consumer up to the high watermark (read_committed: latest is
// the last stable offset).
func (b *Broker) listOffset(p *partition, rp *kmsg.ListOffsetsRequestTopicPartition, sp *kmsg.ListOffsetsResponseTopicPartition, replica bool, iso wlog.Isolation) int16 {
	epoch := p.leaderEpoch()
	if rp.CurrentLeaderEpoch >= 0 && rp.CurrentLeaderEpoch < epoch {
		return kerr.FencedLeaderEpoch.Code
	}
	if rp.CurrentLeaderEpoch > epoch {
		return kerr.UnknownLeaderEpoch.Code
	}
	sp.LeaderEpoch = epoch
	hw := p.highWatermark()
	if replica {
		hw = p.log().EndOffset()
	}
	switch rp.Timestamp {
	case -1:
		sp.Offset = hw
		if !replica {
			sp.Offset = p.latestOffset(hw, iso)
		}
	case -2, -4:
		sp.Offset = p.log().StartOffset()
	case -5:
		sp.Offset = -1
	case -3:
		res, err := p.log().MaxTimestamp(hw)
		if err != nil {
			return kerr.KafkaStorageError.Code
		}
		sp.Offset, sp.Timestamp = res.Offset, res.Timestamp
	default:
		if rp.Timestamp < 0 {
			return kerr.InvalidRequest.Code
		}
		res, err := p.log().OffsetForTimestamp(rp.Timestamp, hw)
		if err != nil {
			return kerr.KafkaStorageError.Code
		}
		if res.Found {
			sp.Offset, sp.Timestamp = res.Offset, res.Timestamp
		}
	}
	return 0
}
