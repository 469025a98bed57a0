package metadata

import (
	"encoding/binary"
	"fmt"
	"testing"
)

func mustApply(t testing.TB, img *Image, recs ...Record) (*Image, *Delta) {
	t.Helper()
	next, d, err := img.Apply(img.Offset()+1, recs)
	if err != nil {
		t.Fatal(err)
	}
	checkImage(t, next)
	return next, d
}

func topicID(i int) TopicID {
	var id TopicID
	binary.BigEndian.PutUint64(id[:8], uint64(i)+1)
	binary.BigEndian.PutUint64(id[8:], 0x5eed)
	return id
}

func registerRecs(n int) []Record {
	var recs []Record
	for i := range n {
		recs = append(recs, &RegisterBrokerRecord{ID: int32(i), Incarnation: [16]byte{byte(i) + 1}, Epoch: int64(i) + 1,
			Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: uint16(9092 + i)}}})
	}
	return recs
}

// topicRecs creates a topic of n partitions with replication factor rf
// over brokers 0..brokers-1, led by their first replica.
func topicRecs(name string, id TopicID, n, rf, brokers int) []Record {
	recs := []Record{&TopicRecord{Name: name, ID: id}}
	for p := range n {
		replicas := make([]int32, rf)
		for r := range replicas {
			replicas[r] = int32((p + r) % brokers)
		}
		recs = append(recs, &PartitionRecord{TopicID: id, Partition: int32(p), Replicas: replicas, ISR: replicas, Leader: replicas[0]})
	}
	return recs
}

// checkImage checks what every image must satisfy: its counters match a
// recount, names and ids agree, every partition is a valid state.
func checkImage(t testing.TB, img *Image) {
	t.Helper()
	if err := imageInvariants(img); err != nil {
		t.Fatal(err)
	}
}

func imageInvariants(img *Image) error {
	var parts, offline, notPreferred, reassigning int
	var err error
	img.EachTopic(func(tp *Topic) bool {
		if id, ok := img.names.get(tp.name); !ok || id != tp.id {
			err = fmt.Errorf("topic %s: name maps to %v, %v", tp.name, id, ok)
			return false
		}
		tp.EachPartition(func(p int32, s Partition) bool {
			parts++
			if s.leader == NoLeader {
				offline++
			}
			if s.leader != s.PreferredLeader() {
				notPreferred++
			}
			if s.Reassigning() {
				reassigning++
			}
			if e := validState(s.Replicas(), s.ISR(), s.Adding(), s.Removing(), s.leader, s.leaderEpoch, s.partitionEpoch, s.leaderRecovery); e != nil {
				err = fmt.Errorf("%s-%d: %v", tp.name, p, e)
			}
			return err == nil
		})
		return err == nil
	})
	if err != nil {
		return err
	}
	if img.names.len() != img.topics.len() {
		return fmt.Errorf("%d names for %d topics", img.names.len(), img.topics.len())
	}
	if parts != img.partitions || offline != img.offline || notPreferred != img.notPreferred || reassigning != img.reassigning {
		return fmt.Errorf("counters partitions=%d offline=%d not_preferred=%d reassigning=%d, recount %d %d %d %d",
			img.partitions, img.offline, img.notPreferred, img.reassigning, parts, offline, notPreferred, reassigning)
	}
	for id, b := range img.brokers {
		if b.ID != id || b.Epoch > img.brokerEpoch {
			return fmt.Errorf("broker %d: %+v, highest epoch %d", id, b, img.brokerEpoch)
		}
	}
	return nil
}
