package broker

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// DescribeTopicPartitions v0 (KIP-966), used by the Java admin client to
// describe topics. An empty topic list means every topic. Topics come in
// name order and pages hold at most ResponsePartitionLimit partitions
// (default 2000), continued from Cursor. There are no eligible leader
// replicas (no ELR on a single node), so those lists are empty.
var _ = register(handler{key: 75, min: 0, max: 0, serve: (*Broker).handleDescribeTopicPartitions})

func (b *Broker) handleDescribeTopicPartitions(_ context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.DescribeTopicPartitionsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	limit := int(r.ResponsePartitionLimit)
	if limit <= 0 {
		limit = 2000
	}
	var names []string
	b.mu.RLock()
	if len(r.Topics) == 0 {
		for n := range b.topics {
			names = append(names, n)
		}
	} else {
		for _, rt := range r.Topics {
			names = append(names, rt.Topic)
		}
	}
	b.mu.RUnlock()
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
		b.mu.RLock()
		t := b.topics[name]
		if t == nil {
			b.mu.RUnlock()
			st.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.TopicID, st.IsInternal = t.id, t.internal
		parts := t.partitions
		b.mu.RUnlock()
		for _, p := range parts[min(int(first), len(parts)):] {
			if limit == 0 {
				resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: p.index}
				break
			}
			sp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			sp.Partition = p.index
			sp.LeaderID = b.cfg.NodeID
			sp.LeaderEpoch = p.leaderEpoch.Load()
			sp.Replicas = []int32{b.cfg.NodeID}
			sp.ISR = []int32{b.cfg.NodeID}
			// Empty, not null: the Java admin client streams these lists.
			sp.EligibleLeaderReplicas, sp.LastKnownELR, sp.OfflineReplicas = []int32{}, []int32{}, []int32{}
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
