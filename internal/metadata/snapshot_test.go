package metadata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// richImage uses every part of an image: brokers fenced, shutting down
// and with racks, more partitions than one chunk and one snapshot frame,
// a reassignment, a recovering leader, configs and producer ids.
func richImage(t testing.TB) *Image {
	recs := registerRecs(4)
	recs[1].(*RegisterBrokerRecord).Rack = "r1"
	recs = append(recs, topicRecs("wide", topicID(1), 5000, 3, 4)...)
	recs = append(recs, topicRecs("narrow", topicID(2), 3, 1, 4)...)
	recs = append(recs,
		&FenceBrokerRecord{ID: 2, Epoch: 3},
		&ControlledShutdownRecord{ID: 3, Epoch: 4},
		&PartitionChangeRecord{TopicID: topicID(1), Partition: 7, Leader: NoLeaderChange, Replicas: []int32{3, 0, 1, 2}, Adding: []int32{2},
			Removing: []int32{}, LeaderRecovery: NoRecoveryChange, LeaderEpoch: 0, PartitionEpoch: 1},
		&PartitionChangeRecord{TopicID: topicID(2), Partition: 1, Leader: NoLeaderChange, LeaderRecovery: Recovering, LeaderEpoch: 3, PartitionEpoch: 4},
		&ConfigRecord{Resource: ResourceTopic, Name: "wide", Key: "cleanup.policy", Value: "compact"},
		&ConfigRecord{Resource: ResourceTopic, Name: "wide", Key: "retention.ms", Value: "-1"},
		&ConfigRecord{Resource: ResourceBroker, Name: "", Key: "auto.leader.rebalance.enable", Value: "false"},
		&ConfigRecord{Resource: ResourceBroker, Name: "2", Key: "weir.fault.produce.response.delay.ms", Value: "20"},
		&ProducerIDsRecord{BrokerID: 1, BrokerEpoch: 2, Next: 5000},
		&FeatureLevelRecord{Name: "group.version", Level: 1},
		&FeatureLevelRecord{Name: "transaction.version", Level: 0},
		&UnregisterBrokerRecord{ID: 0, Epoch: 1}, // the highest epoch outlives its broker
	)
	img, _ := mustApply(t, Empty(), recs...)
	img, _ = mustApply(t, img, &RegisterBrokerRecord{ID: 9, Epoch: 77}, &UnregisterBrokerRecord{ID: 9, Epoch: 77})
	return img
}

func writeSnapshot(t testing.TB, img *Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteSnapshot(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSnapshotRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		name string
		img  *Image
	}{{"empty", Empty()}, {"rich", richImage(t)}} {
		t.Run(tt.name, func(t *testing.T) {
			snap := writeSnapshot(t, tt.img)
			got, err := ReadSnapshot(bytes.NewReader(snap))
			if err != nil {
				t.Fatal(err)
			}
			checkImage(t, got)
			if !got.Equal(tt.img) {
				t.Fatal("loaded image differs")
			}
			// The loaded image goes on like the original.
			if tt.img.NumPartitions() > 0 {
				rec := change(topicID(1), 3, NoLeaderChange, []int32{3, 0}, 0, 1)
				a, _ := mustApply(t, tt.img, rec)
				b, _ := mustApply(t, got, rec)
				if !a.Equal(b) {
					t.Fatal("images diverge after the same batch")
				}
			}
		})
	}
}

func TestSnapshotEqualNoticesDifferences(t *testing.T) {
	img := richImage(t)
	for _, rec := range []Record{
		change(topicID(1), 4000, NoLeaderChange, nil, 0, 1),
		&ConfigRecord{Resource: ResourceTopic, Name: "wide", Key: "retention.ms", Value: "1"},
		&UnfenceBrokerRecord{ID: 2, Epoch: 3},
		&ProducerIDsRecord{BrokerID: 1, Next: 5001},
	} {
		next, _, err := img.Apply(img.Offset(), []Record{rec})
		if err != nil {
			t.Fatal(err)
		}
		if next.Equal(img) || img.Equal(next) {
			t.Errorf("Equal misses %s", rec)
		}
	}
}

func TestReadSnapshotRejects(t *testing.T) {
	img := richImage(t)
	snap := writeSnapshot(t, img)
	// Every strict prefix is refused.
	for _, n := range []int{0, 5, 9, 10, 12, 100, len(snap) / 2, len(snap) - 2, len(snap) - 1} {
		if _, err := ReadSnapshot(bytes.NewReader(snap[:n])); !errors.Is(err, ErrCorrupt) {
			t.Errorf("prefix of %d bytes: %v", n, err)
		}
	}
	small := writeSnapshot(t, baseImage(t))
	// withFrame is a snapshot at offset 0, highest broker epoch 0, of
	// recs in one frame.
	withFrame := func(recs ...Record) []byte {
		b := append([]byte(snapshotMagic), snapshotVersion, 0, 0, byte(len(recs)))
		batch := EncodeBatch(recs)
		b = binary.AppendUvarint(b, uint64(len(batch)))
		return append(append(b, batch...), 0)
	}
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"magic", append([]byte("WEIRSNAQ"), small[8:]...), ErrCorrupt},
		{"version", append(append([]byte("WEIRSNAP"), 1), small[9:]...), ErrUnsupportedVersion},
		{"trailing byte", append(append([]byte(nil), small...), 0), ErrCorrupt},
		{"record count", countTwo(withFrame(&ConfigRecord{Resource: ResourceBroker, Key: "k", Value: "v"})), ErrCorrupt},
		{"change record", withFrame(&RegisterBrokerRecord{ID: 1, Epoch: 1}, &FenceBrokerRecord{ID: 1, Epoch: 1}), ErrInvalidRecord},
		{"config deletion", withFrame(&ConfigRecord{Resource: ResourceBroker, Key: "k", Delete: true}), ErrInvalidRecord},
		{"invalid partition", withFrame(&TopicRecord{Name: "t", ID: tidA}, &PartitionRecord{TopicID: tidA, Replicas: []int32{1}, ISR: []int32{2}}), ErrInvalidRecord},
		{"epoch below a registration", withFrame(&RegisterBrokerRecord{ID: 1, Epoch: 5}), ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadSnapshot(bytes.NewReader(tt.b))
			if !errors.Is(err, tt.want) || got != nil {
				t.Fatalf("ReadSnapshot = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	// A failing reader is an I/O error, not corruption.
	boom := errors.New("disk on fire")
	_, err := ReadSnapshot(io.MultiReader(bytes.NewReader(snap[:100]), iotest.ErrReader(boom)))
	if !errors.Is(err, boom) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("failing reader: %v", err)
	}
}

// countTwo makes a snapshot's header claim two records.
func countTwo(b []byte) []byte {
	b[len(snapshotMagic)+3] = 2
	return b
}
