package metadata

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"reflect"
	"strings"
	"testing"
)

var (
	tidA = TopicID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	tidB = TopicID{0xb0, 1}
)

// sampleRecords holds every kind, with every optional field used.
func sampleRecords() []Record {
	return []Record{
		&RegisterBrokerRecord{ID: 1, Incarnation: [16]byte{9, 9}, Epoch: 7, Rack: "r1",
			Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}, {Listener: "SSL", Host: "h", Port: 65535, SecurityProtocol: 1}}},
		&RegisterBrokerRecord{ID: 2, Epoch: 8, Fenced: true, InControlledShutdown: true},
		&UnregisterBrokerRecord{ID: 3, Epoch: 1},
		&FenceBrokerRecord{ID: 1, Epoch: 7},
		&UnfenceBrokerRecord{ID: 1, Epoch: 7},
		&ControlledShutdownRecord{ID: 1, Epoch: 7},
		&TopicRecord{Name: "orders", ID: tidA},
		&PartitionRecord{TopicID: tidA, Partition: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 9},
		&PartitionRecord{TopicID: tidA, Partition: 1, Replicas: []int32{4, 1, 2, 3}, ISR: []int32{1}, Adding: []int32{4}, Removing: []int32{3},
			Leader: NoLeader, LeaderEpoch: 1 << 30, PartitionEpoch: 1, LeaderRecovery: Recovering},
		&PartitionChangeRecord{TopicID: tidA, Partition: 0, Leader: NoLeaderChange, ISR: []int32{1, 2, 3}, LeaderRecovery: NoRecoveryChange, LeaderEpoch: 4, PartitionEpoch: 10},
		&PartitionChangeRecord{TopicID: tidA, Partition: 1, Leader: 4, ISR: []int32{4}, Replicas: []int32{4, 1, 2}, Adding: []int32{}, Removing: []int32{},
			LeaderRecovery: Recovered, LeaderEpoch: 5, PartitionEpoch: 11},
		&RemoveTopicRecord{ID: tidB},
		&ConfigRecord{Resource: ResourceTopic, Name: "orders", Key: "retention.ms", Value: "1000"},
		&ConfigRecord{Resource: ResourceBroker, Name: "", Key: "log.retention.ms", Delete: true},
		&ProducerIDsRecord{BrokerID: 2, BrokerEpoch: 8, Next: 1 << 40},
		&AccessControlEntryRecord{ID: [16]byte{7, 1}, ResourceType: 2, ResourceName: "orders", PatternType: 4,
			Principal: "User:alice", Host: "*", Operation: 3, PermissionType: 3},
		&RemoveAccessControlEntryRecord{ID: [16]byte{7, 2}},
		&UserScramCredentialRecord{Name: "alice", Mechanism: ScramSHA512, Salt: []byte("salt"),
			StoredKey: make([]byte, 64), ServerKey: make([]byte, 64), Iterations: 8192},
		&RemoveUserScramCredentialRecord{Name: "bob", Mechanism: ScramSHA256},
		&ClientQuotaRecord{Entity: QuotaEntity{User: Named("alice"), ClientID: DefaultName}, Key: "producer_byte_rate", Value: 1048576},
		&ClientQuotaRecord{Entity: QuotaEntity{IP: Named("10.0.0.1")}, Key: "connection_creation_rate", Remove: true},
		&FeatureLevelRecord{Name: "transaction.version", Level: 2},
	}
}

func TestBatchRoundTrip(t *testing.T) {
	long := &ConfigRecord{Resource: ResourceBroker, Name: "1", Key: "k", Value: strings.Repeat("v", 20000)}
	tests := []struct {
		name string
		recs []Record
	}{
		{"empty", []Record{}},
		{"every kind", sampleRecords()},
		// Bodies of 128 bytes and more need a longer length prefix, which
		// the encoder makes room for after writing the body.
		{"long bodies", []Record{long, sampleRecords()[0], long}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := EncodeBatch(tt.recs)
			got, err := DecodeBatch(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.recs) {
				t.Fatalf("round trip:\n got %v\nwant %v", got, tt.recs)
			}
		})
	}
}

// TestPartitionChangeNilVersusEmpty: a nil list keeps the current value
// and an empty one clears it, so the encoding must tell them apart.
func TestPartitionChangeNilVersusEmpty(t *testing.T) {
	in := &PartitionChangeRecord{TopicID: tidA, Leader: NoLeaderChange, Adding: []int32{}, LeaderRecovery: NoRecoveryChange, PartitionEpoch: 1}
	got, err := DecodeBatch(EncodeBatch([]Record{in}))
	if err != nil {
		t.Fatal(err)
	}
	pc := got[0].(*PartitionChangeRecord)
	if pc.ISR != nil || pc.Replicas != nil || pc.Removing != nil || pc.Adding == nil || len(pc.Adding) != 0 {
		t.Fatalf("decoded %+v", pc)
	}
}

// reframe replaces a batch's records part and fixes its checksum.
func reframe(records []byte) []byte {
	b := append([]byte{batchMagic0, batchMagic1, batchVersion, 0}, records...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func TestDecodeBatchRejects(t *testing.T) {
	good := EncodeBatch(sampleRecords()[:3])
	flip := func(i int) []byte { b := append([]byte(nil), good...); b[i] ^= 0x40; return b }
	topic := EncodeBatch([]Record{&TopicRecord{Name: "t", ID: tidA}})
	topicBody := topic[4 : len(topic)-4] // count, then the record
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"short", good[:5], ErrCorrupt},
		{"magic", flip(0), ErrCorrupt},
		{"frame version", reframeVersion(good, 1), ErrUnsupportedVersion},
		{"flags", flip(3), ErrCorrupt},
		{"checksum", flip(len(good) - 1), ErrCorrupt},
		{"body byte", flip(8), ErrCorrupt},
		{"truncated", reframe(topicBody[:len(topicBody)-1]), ErrCorrupt},
		{"trailing bytes", reframe(append(append([]byte(nil), topicBody...), 0)), ErrCorrupt},
		{"count too large", reframe([]byte{0x7f, byte(KindTopic), 0, 0}), ErrCorrupt},
		{"unknown kind", reframe([]byte{1, 200, 0, 0}), ErrCorrupt},
		{"record version", reframe([]byte{1, byte(KindRemoveTopic), 1, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}), ErrUnsupportedVersion},
		{"body longer than declared", reframe([]byte{1, byte(KindRemoveTopic), 0, 15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}), ErrCorrupt},
		{"config flags", reframe([]byte{1, byte(KindConfig), 0, 5, 2, 0, 1, 'k', 7}), ErrCorrupt},
		{"int32 overflow", reframe(append([]byte{1, byte(KindFenceBroker), 0, 7}, binary.AppendVarint(nil, 1<<40)...)), ErrCorrupt},
		{"quota entity flags", reframe([]byte{1, byte(KindClientQuota), 0, 4, 0x40, 1, 'k', 1}), ErrCorrupt},
		{"quota default without present", reframe([]byte{1, byte(KindClientQuota), 0, 4, 0x02, 1, 'k', 1}), ErrCorrupt},
		{"quota flags", reframe([]byte{1, byte(KindClientQuota), 0, 4, 0x03, 1, 'k', 2}), ErrCorrupt},
		{"quota value NaN", reframe([]byte{1, byte(KindClientQuota), 0, 14, 0x01, 1, 'u', 1, 'k', 0, 0x7f, 0xf8, 0, 0, 0, 0, 0, 1}), ErrCorrupt},
		{"truncated quota value", reframe([]byte{1, byte(KindClientQuota), 0, 7, 0x03, 1, 'k', 0, 1, 2, 3}), ErrCorrupt},
		{"byte string past the body", reframe([]byte{1, byte(KindScramCredential), 0, 4, 1, 'u', 1, 9}), ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, err := DecodeBatch(tt.b)
			if !errors.Is(err, tt.want) {
				t.Fatalf("DecodeBatch = %v, %v; want %v", recs, err, tt.want)
			}
		})
	}
}

func reframeVersion(b []byte, v byte) []byte {
	c := append([]byte(nil), b[:len(b)-4]...)
	c[2] = v
	return binary.BigEndian.AppendUint32(c, crc32.Checksum(c, castagnoli))
}

func TestRecordStrings(t *testing.T) {
	for _, r := range sampleRecords() {
		s := r.String()
		if !strings.HasPrefix(s, r.Kind().String()) {
			t.Errorf("%T formats as %q, which does not start with its kind %q", r, s, r.Kind())
		}
	}
	pc := sampleRecords()[10].(*PartitionChangeRecord)
	want := "partition-change orders-1 leader=4 isr=[4] replicas=[4,1,2] adding=[] removing=[] recovery=0 leader_epoch=5 partition_epoch=11"
	if got := FormatChange("orders", pc); got != want {
		t.Errorf("FormatChange = %q, want %q", got, want)
	}
}
