package metadata

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Image is an immutable snapshot of the cluster metadata: brokers, topics,
// partitions, configs, ACLs, SCRAM credentials, client quotas and the
// producer-id high-water mark, as of the
// metadata log offset Offset. Every method is safe for concurrent use;
// nothing reachable from an Image ever changes. Apply returns a new Image
// that shares everything it did not change with the old one.
type Image struct {
	offset      int64
	brokerEpoch int64 // the highest broker epoch ever registered
	nextPID     int64

	brokers map[int32]*Broker // replaced, never modified, when a broker changes
	topics  pmap[TopicID, *Topic, idHash]
	names   pmap[string, TopicID, seeded[string]]
	configs pmap[ConfigResource, map[string]string, seeded[ConfigResource]] // maps replaced, never modified
	// features are the finalized feature levels recorded (replaced,
	// never modified).
	features map[string]int16

	acls   *ACLs                         // nil: none; replaced, never modified
	scram  map[scramKey]*ScramCredential // replaced, never modified
	quotas *ClientQuotas                 // nil: none; replaced, never modified

	partitions   int
	offline      int // partitions without a leader
	notPreferred int // partitions led by another replica than their first
	reassigning  int // partitions with adding or removing replicas
}

// Empty is the image of a new cluster.
func Empty() *Image { return &Image{offset: -1} }

// FeatureLevels returns the finalized feature levels the log recorded,
// by name (a copy). Features it does not name run at their defaults.
func (img *Image) FeatureLevels() map[string]int16 { return maps.Clone(img.features) }

// Broker is a broker registration as the image holds it: the fields of
// the record that registered it, as later records changed them. Never
// modify one.
type Broker RegisterBrokerRecord

// Active reports whether the broker may lead partitions and join ISRs:
// it is neither fenced nor shutting down.
func (b *Broker) Active() bool { return !b.Fenced && !b.InControlledShutdown }

// ConfigResource names a resource that has configs.
type ConfigResource struct {
	Type ResourceType
	Name string
}

// Topic is a topic and its partitions. Never modify one.
type Topic struct {
	name   string
	id     TopicID
	n      int32
	chunks []*chunk // chunkSize partitions each, the last one possibly fewer
	owner  *edit
}

// Name is the topic's name.
func (t *Topic) Name() string { return t.name }

// ID is the topic's id.
func (t *Topic) ID() TopicID { return t.id }

// NumPartitions is the number of partitions; they are numbered from 0.
func (t *Topic) NumPartitions() int32 { return t.n }

// Partition returns partition p.
func (t *Topic) Partition(p int32) (Partition, bool) {
	if p < 0 || p >= t.n {
		return Partition{}, false
	}
	return t.chunks[p>>chunkBits].view(int(p & (chunkSize - 1))), true
}

// EachPartition calls fn for every partition in index order until fn
// returns false, and reports whether it went through all of them.
func (t *Topic) EachPartition(fn func(p int32, s Partition) bool) bool {
	for ci, c := range t.chunks {
		for i := range c.parts {
			if !fn(int32(ci<<chunkBits+i), c.view(i)) {
				return false
			}
		}
	}
	return true
}

// Partition is one partition: its replicas (the first is the
// preferred leader), in-sync replicas, the replicas a reassignment is
// adding and removing, its leader and its epochs. The lists share one
// array, which is part of an image: the slices the accessors return must
// not be modified. A Partition is a small value: copy it freely.
type Partition struct {
	nodes          []int32 // replicas, isr, adding, removing
	nReplicas      uint16
	nISR           uint16
	nAdding        uint16
	leaderRecovery int8
	leader         int32
	leaderEpoch    int32
	partitionEpoch int32
}

// MaxReplicas bounds every replica list (Kafka's replication factor is an
// int16).
const MaxReplicas = 1<<15 - 1

func (p Partition) bounds() (r, i, a int) {
	r = int(p.nReplicas)
	i = r + int(p.nISR)
	a = i + int(p.nAdding)
	return
}

// Replicas are the partition's replicas, preferred leader first.
func (p Partition) Replicas() []int32 {
	r, _, _ := p.bounds()
	return p.nodes[:r:r]
}

// ReplicasAndISR are Replicas then ISR, in one slice.
func (p Partition) ReplicasAndISR() []int32 {
	_, i, _ := p.bounds()
	return p.nodes[:i:i]
}

// ISR is the in-sync replica set.
func (p Partition) ISR() []int32 {
	r, i, _ := p.bounds()
	return p.nodes[r:i:i]
}

// Adding are the replicas an ongoing reassignment adds.
func (p Partition) Adding() []int32 {
	_, i, a := p.bounds()
	return p.nodes[i:a:a]
}

// Removing are the replicas an ongoing reassignment removes.
func (p Partition) Removing() []int32 {
	_, _, a := p.bounds()
	return p.nodes[a:len(p.nodes):len(p.nodes)]
}

// Leader is the leader's broker id, or NoLeader.
func (p Partition) Leader() int32 { return p.leader }

// LeaderEpoch grows with every leader change.
func (p Partition) LeaderEpoch() int32 { return p.leaderEpoch }

// PartitionEpoch grows with every change of the partition.
func (p Partition) PartitionEpoch() int32 { return p.partitionEpoch }

// LeaderRecovery is Recovered or Recovering.
func (p Partition) LeaderRecovery() int8 { return p.leaderRecovery }

// Reassigning reports whether a reassignment is in progress.
func (p Partition) Reassigning() bool { return int(p.nReplicas)+int(p.nISR) < len(p.nodes) }

// PreferredLeader is the first replica.
func (p Partition) PreferredLeader() int32 {
	if p.nReplicas == 0 {
		return NoLeader
	}
	return p.nodes[0]
}

// Record returns the Partition record that creates this state.
func (p Partition) Record(topic TopicID, index int32) *PartitionRecord {
	return &PartitionRecord{
		TopicID: topic, Partition: index,
		Replicas: slices.Clone(p.Replicas()), ISR: slices.Clone(p.ISR()),
		Adding: nilIfEmpty(p.Adding()), Removing: nilIfEmpty(p.Removing()),
		Leader: p.leader, LeaderEpoch: p.leaderEpoch, PartitionEpoch: p.partitionEpoch,
		LeaderRecovery: p.leaderRecovery,
	}
}

func nilIfEmpty(ids []int32) []int32 {
	if len(ids) == 0 {
		return nil
	}
	return slices.Clone(ids)
}

// Equal reports whether two states are the same.
func (p Partition) Equal(q Partition) bool {
	return p.nReplicas == q.nReplicas && p.nISR == q.nISR && p.nAdding == q.nAdding &&
		p.leader == q.leader && p.leaderEpoch == q.leaderEpoch && p.partitionEpoch == q.partitionEpoch &&
		p.leaderRecovery == q.leaderRecovery && slices.Equal(p.nodes, q.nodes)
}

// String formats the state on one line.
func (p Partition) String() string {
	var b strings.Builder
	b.WriteString("replicas=" + FormatIDs(p.Replicas()) + " isr=" + FormatIDs(p.ISR()))
	if p.Reassigning() {
		b.WriteString(" adding=" + FormatIDs(p.Adding()) + " removing=" + FormatIDs(p.Removing()))
	}
	fmt.Fprintf(&b, " leader=%d leader_epoch=%d partition_epoch=%d", p.leader, p.leaderEpoch, p.partitionEpoch)
	if p.leaderRecovery == Recovering {
		b.WriteString(" recovering")
	}
	return b.String()
}

// Offset is the metadata log offset of the last batch applied, -1 for
// the empty image.
func (img *Image) Offset() int64 { return img.offset }

// HighestBrokerEpoch is the highest broker epoch ever registered; a new
// registration gets a higher one.
func (img *Image) HighestBrokerEpoch() int64 { return img.brokerEpoch }

// NextProducerID is the first producer id never handed out.
func (img *Image) NextProducerID() int64 { return img.nextPID }

// Broker returns a broker's registration.
func (img *Image) Broker(id int32) (*Broker, bool) {
	b, ok := img.brokers[id]
	return b, ok
}

// Brokers returns every registration, by id.
func (img *Image) Brokers() []*Broker {
	out := slices.Collect(maps.Values(img.brokers))
	slices.SortFunc(out, func(a, b *Broker) int { return int(a.ID) - int(b.ID) })
	return out
}

// NumBrokers is the number of registered brokers.
func (img *Image) NumBrokers() int { return len(img.brokers) }

// Topic returns a topic by id.
func (img *Image) Topic(id TopicID) (*Topic, bool) { return img.topics.get(id) }

// TopicByName returns a topic by name.
func (img *Image) TopicByName(name string) (*Topic, bool) {
	id, ok := img.names.get(name)
	if !ok {
		return nil, false
	}
	return img.topics.get(id)
}

// NumTopics is the number of topics.
func (img *Image) NumTopics() int { return img.topics.len() }

// EachTopic calls fn for every topic until fn returns false, in an order
// that depends only on the topic ids (not on the process or on the order
// of creation): decisions that scan topics are reproducible.
func (img *Image) EachTopic(fn func(*Topic) bool) bool {
	return img.topics.each(func(_ TopicID, t *Topic) bool { return fn(t) })
}

// Topics returns every topic, by name.
func (img *Image) Topics() []*Topic {
	out := make([]*Topic, 0, img.topics.len())
	img.EachTopic(func(t *Topic) bool { out = append(out, t); return true })
	slices.SortFunc(out, func(a, b *Topic) int { return strings.Compare(a.name, b.name) })
	return out
}

// Partition returns a partition's state.
func (img *Image) Partition(topic TopicID, p int32) (Partition, bool) {
	t, ok := img.topics.get(topic)
	if !ok {
		return Partition{}, false
	}
	return t.Partition(p)
}

// NumPartitions is the number of partitions of all topics.
func (img *Image) NumPartitions() int { return img.partitions }

// OfflinePartitions is the number of partitions without a leader.
func (img *Image) OfflinePartitions() int { return img.offline }

// NotPreferredPartitions is the number of partitions whose leader is not
// their preferred (first) replica, leaderless ones included.
func (img *Image) NotPreferredPartitions() int { return img.notPreferred }

// ReassigningPartitions is the number of partitions being reassigned.
func (img *Image) ReassigningPartitions() int { return img.reassigning }

// Config returns one config value of a resource.
func (img *Image) Config(res ConfigResource, key string) (string, bool) {
	m, ok := img.configs.get(res)
	if !ok {
		return "", false
	}
	v, ok := m[key]
	return v, ok
}

// Configs returns a copy of a resource's configs (nil when it has none).
func (img *Image) Configs(res ConfigResource) map[string]string {
	m, _ := img.configs.get(res)
	return maps.Clone(m)
}

// ConfigResources returns every resource that has configs, sorted by
// type and name.
func (img *Image) ConfigResources() []ConfigResource {
	out := make([]ConfigResource, 0, img.configs.len())
	img.configs.each(func(r ConfigResource, _ map[string]string) bool { out = append(out, r); return true })
	slices.SortFunc(out, func(a, b ConfigResource) int {
		if a.Type != b.Type {
			return int(a.Type) - int(b.Type)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// Equal reports whether two images hold the same metadata at the same
// offset. It walks both images: use it in tests and checks, not on a hot
// path.
func (img *Image) Equal(o *Image) bool {
	if img.offset != o.offset || img.brokerEpoch != o.brokerEpoch || img.nextPID != o.nextPID ||
		!maps.Equal(img.features, o.features) ||
		img.partitions != o.partitions || img.offline != o.offline || img.notPreferred != o.notPreferred ||
		img.reassigning != o.reassigning || len(img.brokers) != len(o.brokers) ||
		img.topics.len() != o.topics.len() || img.names.len() != o.names.len() ||
		img.configs.len() != o.configs.len() {
		return false
	}
	for id, b := range img.brokers {
		ob, ok := o.brokers[id]
		if !ok || !brokerEqual(b, ob) {
			return false
		}
	}
	return img.topics.each(func(id TopicID, t *Topic) bool {
		ot, ok := o.topics.get(id)
		if !ok || ot.name != t.name || ot.n != t.n {
			return false
		}
		if oid, ok := o.names.get(t.name); !ok || oid != id {
			return false
		}
		return t.EachPartition(func(p int32, s Partition) bool {
			os, _ := ot.Partition(p)
			return s.Equal(os)
		})
	}) && img.configs.each(func(r ConfigResource, m map[string]string) bool {
		om, ok := o.configs.get(r)
		return ok && maps.Equal(m, om)
	}) && img.securityEqual(o)
}

func brokerEqual(a, b *Broker) bool {
	return a.ID == b.ID && a.Incarnation == b.Incarnation && a.Epoch == b.Epoch &&
		slices.Equal(a.Endpoints, b.Endpoints) && a.Rack == b.Rack && a.Fenced == b.Fenced &&
		a.InControlledShutdown == b.InControlledShutdown
}
