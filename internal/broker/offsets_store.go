package broker

import (
	"context"

	"weir/internal/group"
	wlog "weir/internal/log"
)

// offsetsTopic holds the group coordinator's records.
const offsetsTopic = group.OffsetsTopic

// groupPartition is the __consumer_offsets partition of a group.
var groupPartition = group.PartitionFor

// offsetsStore is the group coordinator's store over this node's
// __consumer_offsets partitions (group.LogStore).
func (b *Broker) offsetsStore() group.LogStore {
	return group.LogStore{Partitions: b.offsetsPartitions, Now: b.now}
}

// offsetsPartitions are __consumer_offsets's partitions here, in order.
func (b *Broker) offsetsPartitions() []group.LogPartition {
	t := b.lookupTopic(offsetsTopic)
	if t == nil {
		return nil
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]group.LogPartition, len(t.partitions))
	for i, p := range t.partitions {
		out[i] = offsetsPartition{p}
	}
	return out
}

// offsetsPartition is a __consumer_offsets partition for group.LogStore.
type offsetsPartition struct{ p *partition }

func (o offsetsPartition) Index() int32   { return o.p.index }
func (o offsetsPartition) Leading() bool  { return o.p.isLeader() }
func (o offsetsPartition) Log() *wlog.Log { return o.p.log() }
func (o offsetsPartition) AppendCommitted(ctx context.Context, batch []byte, coordinator bool) error {
	var opts wlog.AppendOptions
	if coordinator {
		opts.Guard = o.p.producers().CoordinatorGuard
	}
	_, err := o.p.rep.AppendCommitted(ctx, batch, opts)
	return err
}

// topicsView lets the group coordinator see the broker's topics.
type topicsView struct{ b *Broker }

func (v topicsView) info(t *topic) group.TopicInfo {
	return group.TopicInfo{Name: t.name, ID: t.id, Partitions: int32(len(t.partitions)), Internal: t.internal}
}

func (v topicsView) TopicByName(name string) (group.TopicInfo, bool) {
	v.b.mu.RLock()
	defer v.b.mu.RUnlock()
	t, ok := v.b.topics[name]
	if !ok {
		return group.TopicInfo{}, false
	}
	return v.info(t), true
}

func (v topicsView) TopicByID(id [16]byte) (group.TopicInfo, bool) {
	v.b.mu.RLock()
	defer v.b.mu.RUnlock()
	t, ok := v.b.topicsByID[id]
	if !ok {
		return group.TopicInfo{}, false
	}
	return v.info(t), true
}

func (v topicsView) EachTopic(fn func(group.TopicInfo) bool) {
	v.b.mu.RLock()
	infos := make([]group.TopicInfo, 0, len(v.b.topics))
	for _, t := range v.b.topics {
		infos = append(infos, v.info(t))
	}
	v.b.mu.RUnlock()
	for _, i := range infos {
		if !fn(i) {
			return
		}
	}
}
