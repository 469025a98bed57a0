package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// DescribeProducers v0: the producers each partition led here knows
// (their epoch, last sequence and timestamp, coordinator epoch and the
// first offset of an ongoing transaction), from its log's producer state;
// kafka-transactions.sh find-hanging and describe-producers read it.
var _ = register(handler{key: 61, min: 0, max: 0, serve: (*Broker).handleDescribeProducers})

func (b *Broker) handleDescribeProducers(_ context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.DescribeProducersRequest)
	resp := r.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range r.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		t := b.lookupTopic(rt.Topic)
		for _, i := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = i
			p, err := b.partitionOf(t, i)
			if err != nil {
				sp.ErrorCode, sp.ErrorMessage = errCode(err), errMessage(err)
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			for _, info := range p.log().DescribeProducers() {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID, ap.ProducerEpoch = info.ProducerID, int32(info.ProducerEpoch)
				ap.LastSequence, ap.LastTimestamp = info.LastSequence, info.LastTimestamp
				ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = info.CoordinatorEpoch, info.CurrentTxnStartOffset
				sp.ActiveProducers = append(sp.ActiveProducers, ap)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return server.Ready(resp)
}
