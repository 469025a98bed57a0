package broker

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
	"weir/internal/share"
)

// DescribeShareGroupOffsets v0-1 (v1 adds Lag: the records from the start
// offset up to the high watermark not yet acknowledged or archived). Null
// Topics means every share partition of the group with state (an unknown
// group is GROUP_ID_NOT_FOUND); named topics are answered whether or not
// the group exists, as Kafka does: an unknown topic or a partition
// without state has start offset -1.
var _ = register(handler{key: 90, min: 0, max: 1, serve: (*Broker).handleDescribeShareGroupOffsets})

func (b *Broker) handleDescribeShareGroupOffsets(_ context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	c := b.shares
	for _, rg := range r.Groups {
		g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		g.GroupID = rg.GroupID
		type want struct {
			name string
			id   [16]byte
			ok   bool
			ps   []int32
		}
		var wants []want
		if rg.Topics == nil {
			keys, ok := c.initializedParts(rg.GroupID)
			if !ok {
				g.ErrorCode = kerr.GroupIDNotFound.Code
				g.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Group %s not found.", rg.GroupID))
				resp.Groups = append(resp.Groups, g)
				continue
			}
			byTopic := map[[16]byte][]int32{}
			for _, k := range keys {
				byTopic[k.TopicID] = append(byTopic[k.TopicID], k.Partition)
			}
			for id, ps := range byTopic {
				if t := b.lookupTopicID(id); t != nil {
					slices.Sort(ps)
					wants = append(wants, want{t.name, id, true, ps})
				}
			}
			slices.SortFunc(wants, func(a, b want) int { return cmp.Compare(a.name, b.name) })
		} else {
			for _, rt := range rg.Topics {
				w := want{name: rt.Topic, ps: rt.Partitions}
				if t := b.lookupTopic(rt.Topic); t != nil {
					w.id, w.ok = t.id, true
				}
				wants = append(wants, w)
			}
		}
		for _, w := range wants {
			t := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			t.Topic, t.TopicID = w.name, w.id
			for _, p := range w.ps {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.StartOffset, rp.LeaderEpoch = p, -1, -1
				if w.ok {
					o := c.describeOffset(share.StateKey{Group: rg.GroupID, TopicID: w.id, Partition: p})
					rp.StartOffset, rp.LeaderEpoch = o.start, o.epoch
					if r.Version >= 1 {
						rp.Lag = o.lag
					}
				}
				t.Partitions = append(t.Partitions, rp)
			}
			g.Topics = append(g.Topics, t)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return server.Ready(resp)
}
