package group

import (
	"errors"
	"fmt"
)

// The coordinator's durable state is a sequence of key/value records kept in
// the broker's __consumer_offsets log. Like that log, the records are meant
// to be compacted: for every key only the latest value matters, and a nil
// value (a tombstone) deletes the key. Every value written for a key is
// therefore self-sufficient; no record depends on an older value of the
// same key.
//
// Layout. A key starts with an int16 record type, followed by the fields
// that identify the entity. A value starts with an int16 value version.
// Integers are big-endian; strings and byte slices carry an int32 length,
// -1 for null; arrays carry an int32 count. A decoder refuses unknown record
// types and value versions rather than guess.
//
//	type 0 offset commit         key: group, topic, partition
//	type 1 classic group         key: group
//	type 2 consumer group        key: group
//	type 3 consumer group member key: group, member id
//	type 4 consumer group regex  key: group, regex
//	type 5 streams group         key: group
//	type 6 streams group member  key: group, member id
//
// The values of types 5 and 6 are internal/streamsgroup's own encoding,
// carried as one byte string after the value version.

const (
	recOffset         int16 = 0
	recClassicGroup   int16 = 1
	recConsumerGroup  int16 = 2
	recConsumerMember int16 = 3
	// recConsumerRegex: what a subscription regex of a consumer group
	// resolved to (Kafka's ConsumerGroupRegularExpression record).
	recConsumerRegex int16 = 4
	recStreamsGroup  int16 = 5
	recStreamsMember int16 = 6
	// recShareGroup: a share group exists (key: group; value: the value
	// version alone). The broker's share coordinator writes and reads
	// these; this package keeps them apart from its own groups.
	recShareGroup int16 = 10
)

// valueV0 is the only value version written today.
const valueV0 int16 = 0

// ErrUnknownRecord is returned when a record's type or version is not one
// this code can read; the store was written by a newer build.
var ErrUnknownRecord = errors.New("group: unknown record type or version")

type topicID = [16]byte

type offsetValue struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitMs    int64 // when the commit was applied
	expireMs    int64 // explicit expiry from OffsetCommit v2-v4 retention, -1 if none
	topicID     topicID
	// seq orders the offset records of the shard as they were written
	// (or replayed); not stored.
	seq uint64
}

type protocolValue struct {
	name     string
	metadata []byte
}

type classicMemberValue struct {
	memberID           string
	instanceID         *string
	clientID           string
	clientHost         string
	rebalanceTimeoutMs int32
	sessionTimeoutMs   int32
	protocols          []protocolValue
	assignment         []byte
}

type classicGroupValue struct {
	protocolType string
	generation   int32
	protocol     *string
	leader       *string
	stateMs      int64 // when the group entered its current state
	members      []classicMemberValue
}

type consumerGroupValue struct {
	epoch           int32
	assignmentEpoch int32
}

type partitionEpoch struct {
	partition int32
	epoch     int32
}

type epochTopic struct {
	id         topicID
	partitions []partitionEpoch
}

type targetTopic struct {
	id         topicID
	partitions []int32
}

type consumerMemberValue struct {
	instanceID         *string
	rackID             *string
	clientID           string
	clientHost         string
	rebalanceTimeoutMs int32
	subscribedNames    []string
	regex              *string
	assignor           *string
	epoch              int32
	prevEpoch          int32
	state              int8
	assigned           []epochTopic
	pending            []epochTopic
	target             []targetTopic
}

// regexValue is a subscription regex's resolution: the topics it matched
// that the resolving member's principal may describe, sorted, and when it
// was resolved.
type regexValue struct {
	topics     []string
	resolvedMs int64
}

// decodedRecord is one record read back. Exactly one value pointer is set,
// unless the record is a tombstone, in which case all are nil.
type decodedRecord struct {
	kind      int16
	group     string
	topic     string // offset records
	partition int32  // offset records
	member    string // consumer member records
	regex     string // consumer group regex records

	offset   *offsetValue
	classic  *classicGroupValue
	consumer *consumerGroupValue
	cmember  *consumerMemberValue
	resolved *regexValue
	// streams groups: streamsgroup's encoded values
	sgroup  []byte
	smember []byte
}

func (r decodedRecord) tombstone() bool {
	return r.offset == nil && r.classic == nil && r.consumer == nil && r.cmember == nil && r.resolved == nil &&
		r.sgroup == nil && r.smember == nil
}

// encodeRecord is the inverse of decodeRecord.
func encodeRecord(r decodedRecord) Record {
	var k encoder
	k.i16(r.kind)
	k.str(r.group)
	switch r.kind {
	case recOffset:
		k.str(r.topic)
		k.i32(r.partition)
	case recConsumerMember, recStreamsMember:
		k.str(r.member)
	case recConsumerRegex:
		k.str(r.regex)
	}
	rec := Record{Key: k.b}
	if r.tombstone() {
		return rec
	}
	var v encoder
	v.i16(valueV0)
	switch {
	case r.offset != nil:
		encodeOffset(&v, r.offset)
	case r.classic != nil:
		encodeClassic(&v, r.classic)
	case r.consumer != nil:
		v.i32(r.consumer.epoch)
		v.i32(r.consumer.assignmentEpoch)
	case r.cmember != nil:
		encodeConsumerMember(&v, r.cmember)
	case r.resolved != nil:
		v.i32(int32(len(r.resolved.topics)))
		for _, t := range r.resolved.topics {
			v.str(t)
		}
		v.i64(r.resolved.resolvedMs)
	case r.sgroup != nil:
		v.bytes(r.sgroup)
	case r.smember != nil:
		v.bytes(r.smember)
	}
	rec.Value = v.b
	return rec
}

func encodeOffset(e *encoder, o *offsetValue) {
	e.i64(o.offset)
	e.i32(o.leaderEpoch)
	e.str(o.metadata)
	e.i64(o.commitMs)
	e.i64(o.expireMs)
	e.uuid(o.topicID)
}

func encodeClassic(e *encoder, g *classicGroupValue) {
	e.str(g.protocolType)
	e.i32(g.generation)
	e.nstr(g.protocol)
	e.nstr(g.leader)
	e.i64(g.stateMs)
	e.i32(int32(len(g.members)))
	for i := range g.members {
		m := &g.members[i]
		e.str(m.memberID)
		e.nstr(m.instanceID)
		e.str(m.clientID)
		e.str(m.clientHost)
		e.i32(m.rebalanceTimeoutMs)
		e.i32(m.sessionTimeoutMs)
		e.i32(int32(len(m.protocols)))
		for _, p := range m.protocols {
			e.str(p.name)
			e.bytes(p.metadata)
		}
		e.bytes(m.assignment)
	}
}

func encodeEpochTopics(e *encoder, ts []epochTopic) {
	e.i32(int32(len(ts)))
	for _, t := range ts {
		e.uuid(t.id)
		e.i32(int32(len(t.partitions)))
		for _, p := range t.partitions {
			e.i32(p.partition)
			e.i32(p.epoch)
		}
	}
}

func encodeConsumerMember(e *encoder, m *consumerMemberValue) {
	e.nstr(m.instanceID)
	e.nstr(m.rackID)
	e.str(m.clientID)
	e.str(m.clientHost)
	e.i32(m.rebalanceTimeoutMs)
	e.i32(int32(len(m.subscribedNames)))
	for _, s := range m.subscribedNames {
		e.str(s)
	}
	e.nstr(m.regex)
	e.nstr(m.assignor)
	e.i32(m.epoch)
	e.i32(m.prevEpoch)
	e.i8(m.state)
	encodeEpochTopics(e, m.assigned)
	encodeEpochTopics(e, m.pending)
	e.i32(int32(len(m.target)))
	for _, t := range m.target {
		e.uuid(t.id)
		e.i32(int32(len(t.partitions)))
		for _, p := range t.partitions {
			e.i32(p)
		}
	}
}

// decodeRecord parses a record written by encodeRecord. A nil value is a
// tombstone for the key.
func decodeRecord(key, value []byte) (decodedRecord, error) {
	var r decodedRecord
	k := decoder{b: key}
	r.kind = k.i16()
	r.group = k.str()
	switch r.kind {
	case recOffset:
		r.topic = k.str()
		r.partition = k.i32()
	case recClassicGroup, recConsumerGroup, recStreamsGroup:
	case recConsumerMember, recStreamsMember:
		r.member = k.str()
	case recConsumerRegex:
		r.regex = k.str()
	case recShareGroup:
		if err := k.done(); err != nil {
			return r, fmt.Errorf("group: record key: %w", err)
		}
		return r, nil
	default:
		if k.err == nil {
			return r, fmt.Errorf("%w: record type %d", ErrUnknownRecord, r.kind)
		}
	}
	if err := k.done(); err != nil {
		return r, fmt.Errorf("group: record key: %w", err)
	}
	if value == nil {
		return r, nil
	}
	d := decoder{b: value}
	if v := d.i16(); d.err == nil && v != valueV0 {
		return r, fmt.Errorf("%w: type %d value version %d", ErrUnknownRecord, r.kind, v)
	}
	switch r.kind {
	case recOffset:
		r.offset = decodeOffset(&d)
	case recClassicGroup:
		r.classic = decodeClassic(&d)
	case recConsumerGroup:
		r.consumer = &consumerGroupValue{epoch: d.i32(), assignmentEpoch: d.i32()}
	case recConsumerMember:
		r.cmember = decodeConsumerMember(&d)
	case recConsumerRegex:
		rv := &regexValue{}
		n := d.count(4)
		for range n {
			rv.topics = append(rv.topics, d.str())
		}
		rv.resolvedMs = d.i64()
		r.resolved = rv
	case recStreamsGroup:
		r.sgroup = nonNil(d.bytes())
	case recStreamsMember:
		r.smember = nonNil(d.bytes())
	}
	if err := d.done(); err != nil {
		return decodedRecord{}, fmt.Errorf("group: record value (type %d): %w", r.kind, err)
	}
	return r, nil
}

func decodeOffset(d *decoder) *offsetValue {
	return &offsetValue{
		offset:      d.i64(),
		leaderEpoch: d.i32(),
		metadata:    d.str(),
		commitMs:    d.i64(),
		expireMs:    d.i64(),
		topicID:     d.uuid(),
	}
}

func decodeClassic(d *decoder) *classicGroupValue {
	g := &classicGroupValue{
		protocolType: d.str(),
		generation:   d.i32(),
		protocol:     d.nstr(),
		leader:       d.nstr(),
		stateMs:      d.i64(),
	}
	// A member is at least four string lengths (member, instance, client
	// id and host), two timeouts, a protocol count and an assignment length.
	n := d.count(4*4 + 2*4 + 4 + 4)
	for range n {
		m := classicMemberValue{
			memberID:           d.str(),
			instanceID:         d.nstr(),
			clientID:           d.str(),
			clientHost:         d.str(),
			rebalanceTimeoutMs: d.i32(),
			sessionTimeoutMs:   d.i32(),
		}
		np := d.count(8)
		for range np {
			m.protocols = append(m.protocols, protocolValue{name: d.str(), metadata: d.bytes()})
		}
		m.assignment = d.bytes()
		if d.err != nil {
			return g
		}
		g.members = append(g.members, m)
	}
	return g
}

func decodeEpochTopics(d *decoder) []epochTopic {
	n := d.count(16 + 4)
	var ts []epochTopic
	for range n {
		t := epochTopic{id: d.uuid()}
		np := d.count(8)
		for range np {
			t.partitions = append(t.partitions, partitionEpoch{partition: d.i32(), epoch: d.i32()})
		}
		if d.err != nil {
			return ts
		}
		ts = append(ts, t)
	}
	return ts
}

func decodeConsumerMember(d *decoder) *consumerMemberValue {
	m := &consumerMemberValue{
		instanceID:         d.nstr(),
		rackID:             d.nstr(),
		clientID:           d.str(),
		clientHost:         d.str(),
		rebalanceTimeoutMs: d.i32(),
	}
	n := d.count(4)
	for range n {
		m.subscribedNames = append(m.subscribedNames, d.str())
	}
	m.regex = d.nstr()
	m.assignor = d.nstr()
	m.epoch = d.i32()
	m.prevEpoch = d.i32()
	m.state = d.i8()
	m.assigned = decodeEpochTopics(d)
	m.pending = decodeEpochTopics(d)
	nt := d.count(16 + 4)
	for range nt {
		t := targetTopic{id: d.uuid()}
		np := d.count(4)
		for range np {
			t.partitions = append(t.partitions, d.i32())
		}
		if d.err != nil {
			return m
		}
		m.target = append(m.target, t)
	}
	return m
}

// ShareGroupRecord is the __consumer_offsets record of a share group's
// existence, or its tombstone when the group is deleted.
func ShareGroupRecord(group string, exists bool) Record {
	var k encoder
	k.i16(recShareGroup)
	k.str(group)
	rec := Record{Key: k.b}
	if exists {
		var v encoder
		v.i16(valueV0)
		rec.Value = v.b
	}
	return rec
}

// ShareGroupOf reads a ShareGroupRecord: its group and whether the group
// exists; ok is false for every other record.
func ShareGroupOf(key, value []byte) (group string, exists, ok bool) {
	k := decoder{b: key}
	if k.i16() != recShareGroup || k.err != nil {
		return "", false, false
	}
	group = k.str()
	if k.done() != nil {
		return "", false, false
	}
	return group, value != nil, true
}

// nonNil keeps a present but empty value apart from a tombstone.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
