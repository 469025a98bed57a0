package broker

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
	"weir/internal/server"
)

// DescribeTopicPartitions v0 (KIP-966), used by the Java admin client to
// describe topics, answered from this node's metadata image like
// Metadata. An empty topic list means every topic. Topics come in name
// order and pages hold at most ResponsePartitionLimit partitions (default
// 2000), continued from Cursor. weir keeps no eligible leader replicas
// (ELR), so those lists are empty.
var _ = register(handler{key: 75, min: 0, max: 0, serve: (*Broker).handleDescribeTopicPartitions})

func (b *Broker) handleDescribeTopicPartitions(_ context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.DescribeTopicPartitionsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	img := b.image()
	limit := int(r.ResponsePartitionLimit)
	if limit <= 0 {
		limit = 2000
	}
	var names []string
	if len(r.Topics) == 0 {
		img.EachTopic(func(t *metadata.Topic) bool {
			names = append(names, t.Name())
			return true
		})
	} else {
		for _, rt := range r.Topics {
			names = append(names, rt.Topic)
		}
	}
	sort.Strings(names)
	startPart := int32(0)
	if r.Cursor != nil {
		i := sort.SearchStrings(names, r.Cursor.Topic)
		names = names[i:]
		startPart = r.Cursor.Partition
	}
	for i, name := range names {
		first := int32(0)
		if i == 0 {
			first = startPart
		}
		if limit == 0 {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: first}
			break
		}
		st := kmsg.NewDescribeTopicPartitionsResponseTopic()
		n := name
		st.Topic = &n
		t, ok := img.TopicByName(name)
		if !ok {
			st.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.TopicID, st.IsInternal = t.ID(), metadata.InternalTopic(name)
		for p := max(first, 0); p < t.NumPartitions(); p++ {
			if limit == 0 {
				resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: p}
				break
			}
			s, _ := t.Partition(p)
			sp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			sp.Partition = p
			sp.LeaderID, sp.LeaderEpoch = s.Leader(), s.LeaderEpoch()
			sp.Replicas, sp.ISR = s.Replicas(), s.ISR()
			// Empty, not null: the Java admin client streams these lists.
			sp.EligibleLeaderReplicas, sp.LastKnownELR, sp.OfflineReplicas = []int32{}, []int32{}, []int32{}
			for _, id := range s.Replicas() {
				if br, ok := img.Broker(id); !ok || br.Fenced {
					sp.OfflineReplicas = append(sp.OfflineReplicas, id)
				}
			}
			if s.Leader() < 0 {
				sp.ErrorCode = kerr.LeaderNotAvailable.Code
			}
			st.Partitions = append(st.Partitions, sp)
			limit--
		}
		resp.Topics = append(resp.Topics, st)
		if resp.NextCursor != nil {
			break
		}
	}
	return server.Ready(resp)
}
