package alterpartition

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzResults: whatever AlterPartition answer arrives (topics by id, by
// name, unknown, repeated; partitions in any order, with or without
// errors, or left out), every proposal of the batch gets exactly one
// result, and one without an error is an entry of the answer for that
// very partition. Each 4 bytes of the input make one answered
// partition: its topic, whether the topic carries its id, the partition
// and its error.
func FuzzResults(f *testing.F) {
	a0 := &fakePartition{topic: "a", id: [16]byte{'a'}, index: 0}
	a1 := &fakePartition{topic: "a", id: [16]byte{'a'}, index: 1}
	b0 := &fakePartition{topic: "b", id: [16]byte{'b'}, index: 0}
	batch := []item{{p: a0}, {p: a1}, {p: b0}}
	f.Add([]byte{0, 1, 0, 0, 0, 1, 1, 0, 1, 0, 0, 0})
	f.Add([]byte{0, 0, 1, 3, 2, 1, 0, 0, 0, 1, 1, 0})
	f.Add([]byte{})
	topics := []struct {
		name string
		id   [16]byte
	}{{"a", [16]byte{'a'}}, {"b", [16]byte{'b'}}, {"c", [16]byte{'c'}}}
	codes := []int16{0, kerr.FencedLeaderEpoch.Code, kerr.InvalidUpdateVersion.Code, kerr.OperationNotAttempted.Code}
	f.Fuzz(func(t *testing.T, b []byte) {
		resp := kmsg.NewPtrAlterPartitionResponse()
		for i := 0; i+4 <= len(b) && i < 4*64; i += 4 {
			tp := topics[int(b[i])%len(topics)]
			rt := kmsg.NewAlterPartitionResponseTopic()
			rt.Topic = tp.name
			if b[i+1]&1 == 1 {
				rt.TopidID = tp.id
			}
			rp := kmsg.NewAlterPartitionResponseTopicPartition()
			rp.Partition = int32(b[i+2] % 3)
			rp.ErrorCode = codes[int(b[i+3])%len(codes)]
			rp.PartitionEpoch = int32(i) // tells the entries apart
			rt.Partitions = append(rt.Partitions, rp)
			resp.Topics = append(resp.Topics, rt)
		}
		got := results(batch, resp)
		if len(got) != len(batch) {
			t.Fatalf("%d results for %d proposals", len(got), len(batch))
		}
		for i, res := range got {
			if res.Err != nil {
				continue
			}
			p := batch[i].p
			found := false
			for _, rt := range resp.Topics {
				if rt.TopidID != p.TopicID() && (rt.TopidID != [16]byte{} || rt.Topic != p.Topic()) {
					continue
				}
				for _, rp := range rt.Partitions {
					found = found || (rp.Partition == p.Partition() && rp.ErrorCode == 0 && rp.PartitionEpoch == res.PartitionEpoch)
				}
			}
			if !found {
				t.Fatalf("%s/%d: result %+v is no entry of the answer", p.Topic(), p.Partition(), res)
			}
		}
	})
}
