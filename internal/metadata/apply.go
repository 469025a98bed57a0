package metadata

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// ErrInvalidRecord: a record that does not apply to the image (unknown
// topic, stale epoch, an ISR outside the replicas, ...). A batch that
// holds one is refused whole.
var ErrInvalidRecord = errors.New("metadata: invalid record")

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidRecord}, args...)...)
}

// Apply applies one batch of records, the entry at offset of the metadata
// log, and returns the new image and what changed. It is a pure function:
// img is not modified and stays valid, and the new image shares every
// topic, partition chunk and config it did not change with img. The batch
// applies whole or not at all: on an error the result is nil.
//
// offset may equal img.Offset(): the controller applies its own records
// before they are committed, at the offset of its last committed image.
func (img *Image) Apply(offset int64, recs []Record) (*Image, *Delta, error) {
	if offset < img.offset {
		return nil, nil, fmt.Errorf("%w: offset %d is below the image's %d", ErrInvalidRecord, offset, img.offset)
	}
	b := newBuilder(img, len(recs))
	for i, r := range recs {
		if err := b.Apply(r); err != nil {
			return nil, nil, fmt.Errorf("record %d of %d: %w", i, len(recs), err)
		}
	}
	b.img.offset = offset
	next := b.Image()
	return next, b.t.finish(next), nil
}

// Builder applies records one at a time to a private copy of an image,
// changing the nodes it already copied in place, so that a batch of many
// records copies each touched topic and chunk once. It is what Apply and
// the snapshot loader use, and what the controller uses to see the
// effect of the records it is deciding. A Builder is not safe for
// concurrent use; the images it returns are.
type Builder struct {
	e            *edit
	img          Image
	brokersOwned bool
	// aclsOwned, scramOwned and quotasOwned: the builder made img's
	// set itself and may change it in place.
	aclsOwned, scramOwned, quotasOwned bool
	t                                  *tracker // nil when changes are not tracked
}

// NewBuilder starts from base, which it never modifies.
func NewBuilder(base *Image) *Builder { return newBuilder(base, -1) }

// newBuilder tracks changes for a Delta when expect, the number of
// records expected, is not negative.
func newBuilder(base *Image, expect int) *Builder {
	b := &Builder{e: new(edit), img: *base}
	if expect >= 0 {
		b.t = newTracker(expect)
	}
	return b
}

// Image returns the state built so far as an immutable image. The
// builder stays usable; later records copy what they change again.
func (b *Builder) Image() *Image {
	img := b.img
	b.e = new(edit)
	b.brokersOwned, b.aclsOwned, b.scramOwned, b.quotasOwned = false, false, false, false
	return &img
}

// Broker returns a broker of the state being built.
func (b *Builder) Broker(id int32) (*Broker, bool) { return b.img.Broker(id) }

// TopicByName returns a topic of the state being built. The topic may
// change with the builder's next record.
func (b *Builder) TopicByName(name string) (*Topic, bool) { return b.img.TopicByName(name) }

// Topic returns a topic by id, as TopicByName.
func (b *Builder) Topic(id TopicID) (*Topic, bool) { return b.img.Topic(id) }

// ACLs returns the ACLs of the state being built. The set may change
// with the builder's next record.
func (b *Builder) ACLs() *ACLs { return b.img.ACLs() }

// ClientQuotas returns the client quotas of the state being built, as
// ACLs.
func (b *Builder) ClientQuotas() *ClientQuotas { return b.img.ClientQuotas() }

// Partition returns a partition's state being built.
func (b *Builder) Partition(topic TopicID, p int32) (Partition, bool) {
	return b.img.Partition(topic, p)
}

// Apply applies one record. A record that does not apply changes nothing
// and returns an error wrapping ErrInvalidRecord.
func (b *Builder) Apply(r Record) error {
	switch r := r.(type) {
	case *RegisterBrokerRecord:
		return b.registerBroker(r)
	case *UnregisterBrokerRecord:
		return b.changeBroker(r.ID, r.Epoch, r.Kind(), func(*Broker) *Broker { return nil })
	case *FenceBrokerRecord:
		return b.changeBroker(r.ID, r.Epoch, r.Kind(), func(x *Broker) *Broker { x.Fenced = true; return x })
	case *UnfenceBrokerRecord:
		return b.changeBroker(r.ID, r.Epoch, r.Kind(), func(x *Broker) *Broker {
			x.Fenced, x.InControlledShutdown = false, false
			return x
		})
	case *ControlledShutdownRecord:
		return b.changeBroker(r.ID, r.Epoch, r.Kind(), func(x *Broker) *Broker { x.InControlledShutdown = true; return x })
	case *TopicRecord:
		return b.createTopic(r)
	case *PartitionRecord:
		return b.createPartition(r)
	case *PartitionChangeRecord:
		return b.changePartition(r)
	case *RemoveTopicRecord:
		return b.removeTopic(r)
	case *ConfigRecord:
		return b.config(r)
	case *ProducerIDsRecord:
		if r.BrokerID < 0 || r.Next <= b.img.nextPID {
			return invalidf("producer ids: next %d for broker %d does not pass %d", r.Next, r.BrokerID, b.img.nextPID)
		}
		b.img.nextPID = r.Next
		if b.t != nil {
			b.t.pids = true
		}
		return nil
	case *AccessControlEntryRecord:
		return b.addACL(r)
	case *RemoveAccessControlEntryRecord:
		return b.removeACL(r)
	case *UserScramCredentialRecord:
		return b.scramCredential(r)
	case *RemoveUserScramCredentialRecord:
		return b.removeScram(r)
	case *ClientQuotaRecord:
		return b.clientQuota(r)
	case *FeatureLevelRecord:
		if r.Name == "" {
			return invalidf("feature level without a name")
		}
		b.img.features = maps.Clone(b.img.features)
		if b.img.features == nil {
			b.img.features = map[string]int16{}
		}
		b.img.features[r.Name] = r.Level
		if b.t != nil {
			b.t.features = true
		}
		return nil
	case nil:
		return invalidf("nil record")
	}
	return invalidf("unknown record %T", r)
}

func (b *Builder) setBroker(id int32, nb *Broker) {
	if b.t != nil {
		b.t.broker(id, b.img.brokers[id])
	}
	if !b.brokersOwned {
		b.img.brokers = maps.Clone(b.img.brokers)
		if b.img.brokers == nil {
			b.img.brokers = make(map[int32]*Broker)
		}
		b.brokersOwned = true
	}
	if nb == nil {
		delete(b.img.brokers, id)
	} else {
		b.img.brokers[id] = nb
	}
}

func (b *Builder) registerBroker(r *RegisterBrokerRecord) error {
	if r.ID < 0 {
		return invalidf("broker id %d", r.ID)
	}
	old, ok := b.img.brokers[r.ID]
	amend := ok && old.Incarnation == r.Incarnation && old.Epoch == r.Epoch
	if !amend && (r.Epoch <= 0 || ok && r.Epoch <= old.Epoch) {
		return invalidf("broker %d registers with epoch %d", r.ID, r.Epoch)
	}
	nb := Broker(*r)
	nb.Endpoints = slices.Clone(r.Endpoints)
	b.setBroker(r.ID, &nb)
	b.img.brokerEpoch = max(b.img.brokerEpoch, r.Epoch)
	return nil
}

// changeBroker applies a record that names a registration by broker id
// and epoch; fn returns the changed copy, or nil to unregister.
func (b *Builder) changeBroker(id int32, epoch int64, k Kind, fn func(*Broker) *Broker) error {
	old, ok := b.img.brokers[id]
	if !ok {
		return invalidf("%s: broker %d is not registered", k, id)
	}
	if old.Epoch != epoch {
		return invalidf("%s: broker %d has epoch %d, not %d", k, id, old.Epoch, epoch)
	}
	c := *old
	b.setBroker(id, fn(&c))
	return nil
}

// ValidTopicName reports why a topic name is not legal in Kafka, or nil:
// 1 to 249 of ASCII letters, digits, '.', '_' and '-', and not "." or "..".
func ValidTopicName(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > 249 {
		return fmt.Errorf("topic name %q is empty, \".\", \"..\" or longer than 249 characters", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("topic name %q holds characters other than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return nil
}

// InternalTopic reports whether a topic is one of Kafka's internal topics
// (Topic.isInternal): __consumer_offsets, __transaction_state and
// __share_group_state. Clients may not write to them nor add their
// partitions to a transaction themselves.
func InternalTopic(name string) bool {
	switch name {
	case "__consumer_offsets", "__transaction_state", "__share_group_state":
		return true
	}
	return false
}

func (b *Builder) createTopic(r *TopicRecord) error {
	if err := ValidTopicName(r.Name); err != nil {
		return invalidf("%v", err)
	}
	if r.ID == (TopicID{}) {
		return invalidf("topic %s has the zero id", r.Name)
	}
	if _, ok := b.img.names.get(r.Name); ok {
		return invalidf("topic %s exists", r.Name)
	}
	if _, ok := b.img.topics.get(r.ID); ok {
		return invalidf("topic id %s exists", r.ID)
	}
	b.img.topics = b.img.topics.set(b.e, r.ID, &Topic{name: r.Name, id: r.ID, owner: b.e})
	b.img.names = b.img.names.set(b.e, r.Name, r.ID)
	if b.t != nil {
		b.t.created[r.ID] = true
		b.t.createdOrder = append(b.t.createdOrder, r.ID)
	}
	return nil
}

// topicForWrite returns the builder's own copy of a topic.
func (b *Builder) topicForWrite(t *Topic) *Topic {
	if t.owner == b.e {
		return t
	}
	c := &Topic{name: t.name, id: t.id, n: t.n, owner: b.e}
	c.chunks = make([]*chunk, len(t.chunks), len(t.chunks)+1)
	copy(c.chunks, t.chunks)
	b.img.topics = b.img.topics.set(b.e, t.id, c)
	return c
}

// chunkForWrite returns the builder's own copy of partition p's chunk,
// and whether the builder had not written partition p before (since its
// last Image).
func (b *Builder) chunkForWrite(t *Topic, p int32) (*chunk, bool) {
	ci := p >> chunkBits
	c := t.chunks[ci]
	if c.owner != b.e {
		c = c.clone(b.e, 0)
		t.chunks[ci] = c
	}
	bit := uint16(1) << (p & (chunkSize - 1))
	first := c.written&bit == 0
	c.written |= bit
	return c, first
}

func (b *Builder) createPartition(r *PartitionRecord) error {
	t, ok := b.img.topics.get(r.TopicID)
	if !ok {
		return invalidf("partition %d of unknown topic %s", r.Partition, r.TopicID)
	}
	if r.Partition != t.n {
		return invalidf("topic %s has %d partitions: cannot create partition %d", t.name, t.n, r.Partition)
	}
	if err := validState(r.Replicas, r.ISR, r.Adding, r.Removing, r.Leader, r.LeaderEpoch, r.PartitionEpoch, r.LeaderRecovery); err != nil {
		return invalidf("%s-%d: %v", t.name, r.Partition, err)
	}
	t = b.topicForWrite(t)
	i := int(t.n & (chunkSize - 1))
	if i == 0 {
		t.chunks = append(t.chunks, &chunk{owner: b.e})
	}
	last := len(t.chunks) - 1
	c := t.chunks[last]
	if c.owner != b.e {
		c = c.clone(b.e, chunkSize-i)
		t.chunks[last] = c
	}
	c.set(i, r.Replicas, r.ISR, r.Adding, r.Removing, r.Leader, r.LeaderEpoch, r.PartitionEpoch, r.LeaderRecovery)
	c.written |= 1 << i
	t.n++
	b.img.partitions++
	s := c.view(i)
	b.count(&s, 1)
	if b.t != nil {
		b.t.partition(t, r.Partition, Partition{}, true)
	}
	return nil
}

// count adds (sign 1) or removes (sign -1) a state's contribution to the
// image's counters.
func (b *Builder) count(s *Partition, sign int) {
	if s.leader == NoLeader {
		b.img.offline += sign
	}
	if s.leader != s.PreferredLeader() {
		b.img.notPreferred += sign
	}
	if s.Reassigning() {
		b.img.reassigning += sign
	}
}

func (b *Builder) changePartition(r *PartitionChangeRecord) error {
	t, ok := b.img.topics.get(r.TopicID)
	if !ok {
		return invalidf("change of partition %d of unknown topic %s", r.Partition, r.TopicID)
	}
	old, ok := t.Partition(r.Partition)
	if !ok {
		return invalidf("change of unknown partition %s-%d", t.name, r.Partition)
	}
	pick := func(v, cur []int32) []int32 {
		if v == nil {
			return cur
		}
		return v
	}
	replicas, isr := pick(r.Replicas, old.Replicas()), pick(r.ISR, old.ISR())
	adding, removing := pick(r.Adding, old.Adding()), pick(r.Removing, old.Removing())
	leader, recovery := old.leader, old.leaderRecovery
	if r.Leader != NoLeaderChange {
		leader = r.Leader
	}
	if r.LeaderRecovery != NoRecoveryChange {
		recovery = r.LeaderRecovery
	}
	switch {
	case r.PartitionEpoch <= old.partitionEpoch:
		return invalidf("%s-%d: partition epoch %d does not pass %d", t.name, r.Partition, r.PartitionEpoch, old.partitionEpoch)
	case r.LeaderEpoch < old.leaderEpoch || leader != old.leader && r.LeaderEpoch == old.leaderEpoch:
		return invalidf("%s-%d: leader %d -> %d with leader epoch %d -> %d", t.name, r.Partition, old.leader, leader, old.leaderEpoch, r.LeaderEpoch)
	}
	if err := validState(replicas, isr, adding, removing, leader, r.LeaderEpoch, r.PartitionEpoch, recovery); err != nil {
		return invalidf("%s-%d: %v", t.name, r.Partition, err)
	}
	t = b.topicForWrite(t)
	c, first := b.chunkForWrite(t, r.Partition)
	if first && b.t != nil {
		b.t.partition(t, r.Partition, old, false)
	}
	b.count(&old, -1)
	i := int(r.Partition & (chunkSize - 1))
	c.set(i, replicas, isr, adding, removing, leader, r.LeaderEpoch, r.PartitionEpoch, recovery)
	s := c.view(i)
	b.count(&s, 1)
	return nil
}

// validState checks what must hold of every partition: replicas are
// distinct broker ids; the ISR is a non-empty subset of them; adding and
// removing are disjoint subsets; the leader is an ISR member or NoLeader.
func validState(replicas, isr, adding, removing []int32, leader, leaderEpoch, partitionEpoch int32, recovery int8) error {
	switch {
	case len(replicas) == 0 || len(replicas) > MaxReplicas:
		return fmt.Errorf("%d replicas", len(replicas))
	case len(isr) == 0:
		return fmt.Errorf("empty ISR")
	case leaderEpoch < 0 || partitionEpoch < 0:
		return fmt.Errorf("negative epoch")
	case recovery != Recovered && recovery != Recovering:
		return fmt.Errorf("leader recovery state %d", recovery)
	case leader != NoLeader && !slices.Contains(isr, leader):
		return fmt.Errorf("leader %d is not in the ISR %v", leader, isr)
	}
	for _, id := range replicas {
		if id < 0 {
			return fmt.Errorf("replica id %d", id)
		}
	}
	if !distinct(replicas) {
		return fmt.Errorf("replicas %v repeat a broker", replicas)
	}
	for _, l := range [...]struct {
		name string
		ids  []int32
	}{{"isr", isr}, {"adding", adding}, {"removing", removing}} {
		if !distinct(l.ids) || !subset(l.ids, replicas) {
			return fmt.Errorf("%s %v is not a set of replicas %v", l.name, l.ids, replicas)
		}
	}
	for _, id := range adding {
		if slices.Contains(removing, id) {
			return fmt.Errorf("broker %d is both added and removed", id)
		}
	}
	return nil
}

func distinct(ids []int32) bool {
	if len(ids) > 16 {
		seen := make(map[int32]struct{}, len(ids))
		for _, id := range ids {
			if _, dup := seen[id]; dup {
				return false
			}
			seen[id] = struct{}{}
		}
		return true
	}
	for i, id := range ids {
		if slices.Contains(ids[i+1:], id) {
			return false
		}
	}
	return true
}

func subset(ids, of []int32) bool {
	for _, id := range ids {
		if !slices.Contains(of, id) {
			return false
		}
	}
	return true
}

func (b *Builder) removeTopic(r *RemoveTopicRecord) error {
	t, ok := b.img.topics.get(r.ID)
	if !ok {
		return invalidf("remove unknown topic %s", r.ID)
	}
	t.EachPartition(func(_ int32, s Partition) bool { b.count(&s, -1); return true })
	b.img.partitions -= int(t.n)
	b.img.topics = b.img.topics.delete(b.e, r.ID)
	b.img.names = b.img.names.delete(b.e, t.name)
	res := ConfigResource{Type: ResourceTopic, Name: t.name}
	if _, ok := b.img.configs.get(res); ok {
		b.img.configs = b.img.configs.delete(b.e, res)
		if b.t != nil {
			b.t.config(res)
		}
	}
	if b.t != nil {
		b.t.removed(t)
	}
	return nil
}

func (b *Builder) config(r *ConfigRecord) error {
	res := ConfigResource{Type: r.Resource, Name: r.Name}
	switch r.Resource {
	case ResourceTopic:
		if _, ok := b.img.names.get(r.Name); !ok {
			return invalidf("config of unknown topic %q", r.Name)
		}
	case ResourceBroker:
		if r.Name != "" {
			if id, err := strconv.ParseInt(r.Name, 10, 32); err != nil || id < 0 || strconv.Itoa(int(id)) != r.Name {
				return invalidf("config of broker %q", r.Name)
			}
		}
	case ResourceGroup:
		if r.Name == "" {
			return invalidf("config of a group without a name")
		}
	default:
		return invalidf("config of resource type %d", r.Resource)
	}
	if r.Key == "" {
		return invalidf("config with an empty key")
	}
	cur, _ := b.img.configs.get(res)
	if r.Delete {
		if _, ok := cur[r.Key]; !ok {
			return nil
		}
	} else if v, ok := cur[r.Key]; ok && v == r.Value {
		return nil
	}
	next := maps.Clone(cur)
	if next == nil {
		next = make(map[string]string, 1)
	}
	if r.Delete {
		delete(next, r.Key)
	} else {
		next[r.Key] = r.Value
	}
	if len(next) == 0 {
		b.img.configs = b.img.configs.delete(b.e, res)
	} else {
		b.img.configs = b.img.configs.set(b.e, res, next)
	}
	if b.t != nil {
		b.t.config(res)
	}
	return nil
}
