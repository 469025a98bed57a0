package metadata

import "slices"

// Delta is what one Apply changed, for the owners of local state (a
// broker's replicas, its caches) to react without diffing images. Lists
// are in the order the batch touched them.
type Delta struct {
	// Offset is the new image's offset.
	Offset int64
	// Brokers registered, changed or unregistered.
	Brokers []BrokerDelta
	// TopicsCreated are topics of the new image created by the batch.
	TopicsCreated []*Topic
	// TopicsDeleted are topics of the old image the batch removed, as
	// they were (with their partitions).
	TopicsDeleted []*Topic
	// Partitions created or changed, of topics the new image holds.
	Partitions []PartitionDelta
	// Configs are the resources whose configs changed.
	Configs []ConfigResource
	// ProducerIDs reports that a producer-id block was handed out.
	ProducerIDs bool
	// ACLs reports that ACLs were added or removed.
	ACLs bool
	// Scram reports that SCRAM credentials were set or removed.
	Scram bool
	// ClientQuotas are the entities whose client quotas changed.
	ClientQuotas []QuotaEntity
	// Features reports that a finalized feature level changed.
	Features bool
}

// BrokerDelta is a broker before and after: Old is nil for a new broker,
// New for an unregistered one.
type BrokerDelta struct {
	ID       int32
	Old, New *Broker
}

// PartitionDelta is a partition before and after the batch. Old is the
// zero state when Created.
type PartitionDelta struct {
	Topic     *Topic // in the new image
	Partition int32
	Created   bool
	Old, New  Partition
}

// LeaderChanged reports whether the leader or its epoch changed, or the
// partition is new.
func (d *PartitionDelta) LeaderChanged() bool {
	return d.Created || d.Old.leader != d.New.leader || d.Old.leaderEpoch != d.New.leaderEpoch
}

// Empty reports whether the batch changed nothing but the offset.
func (d *Delta) Empty() bool {
	return len(d.Brokers) == 0 && len(d.TopicsCreated) == 0 && len(d.TopicsDeleted) == 0 &&
		len(d.Partitions) == 0 && len(d.Configs) == 0 && !d.ProducerIDs && !d.ACLs && !d.Scram && len(d.ClientQuotas) == 0 &&
		!d.Features
}

// LocalChanges is what a delta asks of one broker's replicas.
type LocalChanges struct {
	// Lead are partitions the broker leads after the batch that are new,
	// or whose leader, leader epoch, ISR or partition epoch changed: a
	// leader needs the partition epoch of its next ISR change request.
	Lead []PartitionDelta
	// Follow are partitions the broker replicates but does not lead after
	// the batch that are new to it, or whose leader or leader epoch
	// changed: the broker (re)starts fetching from the leader.
	Follow []PartitionDelta
	// Stop are partitions the broker no longer replicates: reassigned
	// away, or of a deleted topic (Deleted).
	Stop []StoppedReplica
}

// StoppedReplica is a partition a broker no longer replicates.
type StoppedReplica struct {
	TopicID   TopicID
	TopicName string
	Partition int32
	Deleted   bool // the topic was deleted: the replica's data can go
}

// Local returns the changes that concern broker node.
func (d *Delta) Local(node int32) LocalChanges {
	var lc LocalChanges
	for _, t := range d.TopicsDeleted {
		t.EachPartition(func(p int32, s Partition) bool {
			if slices.Contains(s.Replicas(), node) {
				lc.Stop = append(lc.Stop, StoppedReplica{TopicID: t.id, TopicName: t.name, Partition: p, Deleted: true})
			}
			return true
		})
	}
	for _, pd := range d.Partitions {
		was := !pd.Created && slices.Contains(pd.Old.Replicas(), node)
		is := slices.Contains(pd.New.Replicas(), node)
		switch {
		case pd.New.leader == node:
			lc.Lead = append(lc.Lead, pd)
		case is && (!was || pd.LeaderChanged()):
			lc.Follow = append(lc.Follow, pd)
		case was && !is:
			lc.Stop = append(lc.Stop, StoppedReplica{TopicID: pd.Topic.id, TopicName: pd.Topic.name, Partition: pd.Partition})
		}
	}
	return lc
}

type partKey struct {
	topic TopicID
	p     int32
}

// tracker records, during a batch, the first state of everything the
// batch touches; finish compares with the end state. The builder calls
// partition once per partition (chunk.written remembers which).
type tracker struct {
	partList     []partEntry
	brokers      map[int32]*Broker
	brokerOrder  []int32
	created      map[TopicID]bool
	createdOrder []TopicID
	deleted      []*Topic
	configs      map[ConfigResource]bool
	configOrder  []ConfigResource
	pids         bool
	acls, scram  bool
	quotas       map[QuotaEntity]bool
	quotaOrder   []QuotaEntity
	features     bool
}

type partEntry struct {
	key     partKey
	old     Partition
	created bool
}

// newTracker sizes its partition index for n records: most records of a
// large batch are partition changes.
func newTracker(n int) *tracker {
	return &tracker{
		partList: make([]partEntry, 0, n), brokers: make(map[int32]*Broker),
		created: make(map[TopicID]bool), configs: make(map[ConfigResource]bool),
	}
}

func (t *tracker) broker(id int32, old *Broker) {
	if _, seen := t.brokers[id]; !seen {
		t.brokers[id] = old
		t.brokerOrder = append(t.brokerOrder, id)
	}
}

func (t *tracker) partition(tp *Topic, p int32, old Partition, created bool) {
	t.partList = append(t.partList, partEntry{key: partKey{tp.id, p}, old: old, created: created})
}

func (t *tracker) removed(tp *Topic) {
	if t.created[tp.id] {
		delete(t.created, tp.id)
		return
	}
	t.deleted = append(t.deleted, tp)
}

func (t *tracker) config(r ConfigResource) {
	if !t.configs[r] {
		t.configs[r] = true
		t.configOrder = append(t.configOrder, r)
	}
}

func (t *tracker) quota(e QuotaEntity) {
	if t.quotas == nil {
		t.quotas = make(map[QuotaEntity]bool)
	}
	if !t.quotas[e] {
		t.quotas[e] = true
		t.quotaOrder = append(t.quotaOrder, e)
	}
}

func (t *tracker) finish(next *Image) *Delta {
	d := &Delta{Offset: next.offset, TopicsDeleted: t.deleted, Configs: t.configOrder, ProducerIDs: t.pids,
		ACLs: t.acls, Scram: t.scram, ClientQuotas: t.quotaOrder, Features: t.features}
	for _, id := range t.brokerOrder {
		o, n := t.brokers[id], next.brokers[id]
		if o != nil && n != nil && brokerEqual(o, n) {
			continue
		}
		d.Brokers = append(d.Brokers, BrokerDelta{ID: id, Old: o, New: n})
	}
	for _, id := range t.createdOrder {
		if tp, ok := next.topics.get(id); ok && t.created[id] {
			d.TopicsCreated = append(d.TopicsCreated, tp)
		}
	}
	if len(t.partList) > 0 {
		d.Partitions = make([]PartitionDelta, 0, len(t.partList))
	}
	for _, e := range t.partList {
		tp, ok := next.topics.get(e.key.topic)
		if !ok {
			continue
		}
		// A topic created by this batch is new whole: the changes of an
		// older topic of the same id, removed earlier in the batch, are
		// not its own.
		if t.created[e.key.topic] && !e.created {
			continue
		}
		created := e.created
		s, ok := tp.Partition(e.key.p)
		if !ok || !created && s.Equal(e.old) {
			continue
		}
		old := e.old
		if created {
			old = Partition{}
		}
		d.Partitions = append(d.Partitions, PartitionDelta{Topic: tp, Partition: e.key.p, Created: created, Old: old, New: s})
	}
	return d
}
