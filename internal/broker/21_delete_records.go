package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// DeleteRecords v0-2: raise a partition's log start offset. Offset -1
// means the high watermark; past it is OFFSET_OUT_OF_RANGE. Whole
// segments below the new start are deleted at once. TimeoutMillis is
// unused: nothing waits for replicas on a single node.
var _ = register(handler{key: 21, min: 0, max: 2, serve: (*Broker).handleDeleteRecords})

func (b *Broker) handleDeleteRecords(_ context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.DeleteRecordsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, rt := range r.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		t := b.lookupTopic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LowWatermark = -1
			p, perr := b.partitionOf(t, rp.Partition)
			switch {
			case perr != nil:
				sp.ErrorCode = errCode(perr)
			case t.internal:
				sp.ErrorCode = kerr.InvalidTopicException.Code
			default:
				hw := p.highWatermark()
				off := rp.Offset
				if off == -1 {
					off = hw
				}
				if off < 0 {
					sp.ErrorCode = kerr.OffsetOutOfRange.Code
					break
				}
				low, err := p.rep.AdvanceStartOffset(off)
				sp.LowWatermark = low
				sp.ErrorCode = errCode(err)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return server.Ready(resp)
}
