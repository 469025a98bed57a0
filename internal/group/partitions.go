package group

import (
	"bytes"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// tps is a set of partitions by topic id. For a member's assigned and
// revoking partitions the value is the epoch the partition was assigned
// at (KIP-1251); for a target assignment it is unused.
type tps map[topicID]map[int32]int32

func (t tps) has(id topicID, p int32) bool {
	_, ok := t[id][p]
	return ok
}

func (t tps) add(id topicID, p, v int32) {
	ps := t[id]
	if ps == nil {
		ps = make(map[int32]int32)
		t[id] = ps
	}
	ps[p] = v
}

func (t tps) count() int {
	n := 0
	for _, ps := range t {
		n += len(ps)
	}
	return n
}

func (t tps) clone() tps {
	c := make(tps, len(t))
	for id, ps := range t {
		cp := make(map[int32]int32, len(ps))
		for p, v := range ps {
			cp[p] = v
		}
		c[id] = cp
	}
	return c
}

// sameKeys reports whether both hold the same partitions, ignoring values.
func (t tps) sameKeys(o tps) bool {
	if t.count() != o.count() {
		return false
	}
	for id, ps := range t {
		for p := range ps {
			if !o.has(id, p) {
				return false
			}
		}
	}
	return true
}

// partitionLists returns sorted partition lists per topic.
func (t tps) partitionLists() map[topicID][]int32 {
	out := make(map[topicID][]int32, len(t))
	for id, ps := range t {
		if len(ps) == 0 {
			continue
		}
		l := make([]int32, 0, len(ps))
		for p := range ps {
			l = append(l, p)
		}
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
		out[id] = l
	}
	return out
}

func sortedTopicIDs[V any](m map[topicID]V) []topicID {
	ids := make([]topicID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return bytes.Compare(ids[i][:], ids[j][:]) < 0 })
	return ids
}

func (t tps) epochTopics() []epochTopic {
	var out []epochTopic
	for _, id := range sortedTopicIDs(t) {
		ps := t[id]
		if len(ps) == 0 {
			continue
		}
		et := epochTopic{id: id}
		for _, p := range sortedKeys(ps) {
			et.partitions = append(et.partitions, partitionEpoch{partition: p, epoch: ps[p]})
		}
		out = append(out, et)
	}
	return out
}

func (t tps) targetTopics() []targetTopic {
	var out []targetTopic
	lists := t.partitionLists()
	for _, id := range sortedTopicIDs(lists) {
		out = append(out, targetTopic{id: id, partitions: lists[id]})
	}
	return out
}

func tpsFromEpochTopics(ts []epochTopic) tps {
	out := make(tps)
	for _, t := range ts {
		for _, p := range t.partitions {
			out.add(t.id, p.partition, p.epoch)
		}
	}
	return out
}

func tpsFromTargetTopics(ts []targetTopic) tps {
	out := make(tps)
	for _, t := range ts {
		for _, p := range t.partitions {
			out.add(t.id, p, 0)
		}
	}
	return out
}

func tpsFromLists(m map[topicID][]int32) tps {
	out := make(tps, len(m))
	for id, ps := range m {
		for _, p := range ps {
			out.add(id, p, 0)
		}
	}
	return out
}

func sortedKeys(m map[int32]int32) []int32 {
	out := make([]int32, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// heartbeatAssignment renders partitions for a ConsumerGroupHeartbeat
// response.
func heartbeatAssignment(t tps) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	a := &kmsg.ConsumerGroupHeartbeatResponseAssignment{Topics: []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}}
	lists := t.partitionLists()
	for _, id := range sortedTopicIDs(lists) {
		at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		at.TopicID = id
		at.Partitions = lists[id]
		a.Topics = append(a.Topics, at)
	}
	return a
}

// ownedSet converts the partitions a member reports owning. nil stays nil:
// the member did not say.
func ownedSet(ts []kmsg.ConsumerGroupHeartbeatRequestTopic) tps {
	if ts == nil {
		return nil
	}
	out := make(tps)
	for _, t := range ts {
		for _, p := range t.Partitions {
			out.add(t.TopicID, p, 0)
		}
	}
	return out
}
