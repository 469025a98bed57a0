package group

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// sampleRecords returns one record of every kind, plus tombstones.
func sampleRecords() []decodedRecord {
	inst := kmsg.StringPtr("inst")
	return []decodedRecord{
		{kind: recOffset, group: "g", topic: "t", partition: 3, offset: &offsetValue{
			offset: 42, leaderEpoch: 7, metadata: "md", commitMs: 1700000000000, expireMs: -1, topicID: tid(9)}},
		{kind: recOffset, group: "g", topic: "t", partition: 3},
		{kind: recClassicGroup, group: "g", classic: &classicGroupValue{
			protocolType: "consumer", generation: 5, protocol: kmsg.StringPtr("range"), leader: kmsg.StringPtr("m1"), stateMs: 99,
			members: []classicMemberValue{
				{memberID: "m1", instanceID: inst, clientID: "c", clientHost: "/1.2.3.4", rebalanceTimeoutMs: 30000, sessionTimeoutMs: 10000,
					protocols: []protocolValue{{name: "range", metadata: []byte{0, 1}}, {name: "rr", metadata: []byte{}}}, assignment: []byte{9}},
				{memberID: "m2", clientID: "c2", clientHost: "h", protocols: []protocolValue{{name: "range", metadata: nil}}, assignment: []byte{}},
			}}},
		{kind: recClassicGroup, group: "empty", classic: &classicGroupValue{protocolType: "", generation: 0}},
		{kind: recClassicGroup, group: "g"},
		{kind: recConsumerGroup, group: "cg", consumer: &consumerGroupValue{epoch: 4, assignmentEpoch: 3}},
		{kind: recConsumerGroup, group: "cg"},
		{kind: recConsumerMember, group: "cg", member: "m", cmember: &consumerMemberValue{
			instanceID: inst, rackID: kmsg.StringPtr("r1"), clientID: "c", clientHost: "h", rebalanceTimeoutMs: 45000,
			subscribedNames: []string{"a", "b"}, regex: kmsg.StringPtr("x.*"), assignor: kmsg.StringPtr("uniform"),
			epoch: 4, prevEpoch: 3, state: 1,
			assigned: []epochTopic{{id: tid(1), partitions: []partitionEpoch{{0, 2}, {1, 4}}}},
			pending:  []epochTopic{{id: tid(2), partitions: []partitionEpoch{{5, 3}}}},
			target:   []targetTopic{{id: tid(1), partitions: []int32{0, 1, 2}}},
		}},
		{kind: recConsumerMember, group: "cg", member: "m"},
		{kind: recConsumerRegex, group: "cg", regex: "x.*", resolved: &regexValue{topics: []string{"xa", "xb"}, resolvedMs: 1767225600000}},
		{kind: recConsumerRegex, group: "cg", regex: "none", resolved: &regexValue{resolvedMs: 1}},
		{kind: recConsumerRegex, group: "cg", regex: "x.*"},
		{kind: recStreamsGroup, group: "sg", sgroup: []byte("\x00{\"epoch\":2}")},
		{kind: recStreamsGroup, group: "sg"},
		{kind: recStreamsMember, group: "sg", member: "m", smember: []byte("\x00{}")},
		{kind: recStreamsMember, group: "sg", member: "m"},
	}
}

func TestRecordRoundTrip(t *testing.T) {
	for _, want := range sampleRecords() {
		rec := encodeRecord(want)
		if want.tombstone() != (rec.Value == nil) {
			t.Fatalf("kind %d: tombstone %v but value %v", want.kind, want.tombstone(), rec.Value)
		}
		got, err := decodeRecord(rec.Key, rec.Value)
		if err != nil {
			t.Fatalf("kind %d: %v", want.kind, err)
		}
		again := encodeRecord(got)
		if !bytes.Equal(again.Key, rec.Key) || !bytes.Equal(again.Value, rec.Value) {
			t.Fatalf("kind %d: re-encoding differs", want.kind)
		}
		if got.kind != want.kind || got.group != want.group || got.topic != want.topic || got.partition != want.partition || got.member != want.member {
			t.Fatalf("kind %d: key fields %+v", want.kind, got)
		}
		if want.consumer != nil && !reflect.DeepEqual(got.consumer, want.consumer) {
			t.Fatalf("consumer group value %+v", got.consumer)
		}
		if want.offset != nil && !reflect.DeepEqual(got.offset, want.offset) {
			t.Fatalf("offset value %+v", got.offset)
		}
		if got.regex != want.regex || (want.resolved != nil && !reflect.DeepEqual(got.resolved, want.resolved)) {
			t.Fatalf("regex %q value %+v", got.regex, got.resolved)
		}
	}
}

func TestRecordDecodeErrors(t *testing.T) {
	good := encodeRecord(sampleRecords()[0])
	var unknownKey encoder
	unknownKey.i16(9)
	unknownKey.str("g")
	var futureValue encoder
	futureValue.i16(1)
	for _, tc := range []struct {
		name       string
		key, value []byte
		unknown    bool
	}{
		{"empty key", nil, nil, false},
		{"unknown record type", unknownKey.b, nil, true},
		{"newer value version", good.Key, futureValue.b, true},
		{"truncated value", good.Key, good.Value[:len(good.Value)-3], false},
		{"trailing bytes", good.Key, append(bytes.Clone(good.Value), 0), false},
		{"truncated key", good.Key[:len(good.Key)-1], good.Value, false},
		{"negative string length", []byte{0, 0, 0xff, 0xff, 0xff, 0xfe}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeRecord(tc.key, tc.value)
			if err == nil {
				t.Fatal("decoded garbage without error")
			}
			if errors.Is(err, ErrUnknownRecord) != tc.unknown {
				t.Fatalf("error %v: unknown-record %v, want %v", err, errors.Is(err, ErrUnknownRecord), tc.unknown)
			}
		})
	}
	// A huge array count in a short record must fail, not allocate.
	var big encoder
	big.i16(valueV0)
	big.str("consumer")
	big.i32(1)
	big.nstr(nil)
	big.nstr(nil)
	big.i64(0)
	big.i32(1 << 30)
	if _, err := decodeRecord(encodeRecord(decodedRecord{kind: recClassicGroup, group: "g"}).Key, big.b); err == nil {
		t.Fatal("absurd member count accepted")
	}
}

// FuzzDecodeRecord: decoding never panics, and whatever decodes re-encodes
// to the same bytes (the encoding is canonical).
func FuzzDecodeRecord(f *testing.F) {
	for _, r := range sampleRecords() {
		rec := encodeRecord(r)
		f.Add(rec.Key, rec.Value, rec.Value == nil)
	}
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		} else if value == nil {
			value = []byte{}
		}
		r, err := decodeRecord(key, value)
		if err != nil || r.kind == recShareGroup {
			// A share group's record is the share coordinator's
			// (ShareGroupOf): replay reads its key and leaves it alone.
			return
		}
		again := encodeRecord(r)
		if !bytes.Equal(again.Key, key) {
			t.Fatalf("key re-encodes differently:\n%x\n%x", key, again.Key)
		}
		if !bytes.Equal(again.Value, value) || (again.Value == nil) != (value == nil) {
			t.Fatalf("value re-encodes differently:\n%x\n%x", value, again.Value)
		}
	})
}
