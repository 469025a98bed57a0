package alterpartition

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/replica"
)

// TestRequest: one AlterPartition v3 for a batch, partitions grouped
// under their topic (by id), each new ISR member with the broker epoch
// its fetch carried or, when that is unknown (-1 or missing), its
// registered epoch, or -1 when the image does not know the broker.
func TestRequest(t *testing.T) {
	h := newFakeHost()
	h.epochs[1] = 10
	h.epochs[2] = 20
	m := New(Config{BrokerID: 1, Host: h})
	a0 := &fakePartition{topic: "a", id: [16]byte{0xa}, index: 0}
	b3 := &fakePartition{topic: "b", id: [16]byte{0xb}, index: 3}
	a1 := &fakePartition{topic: "a", id: [16]byte{0xa}, index: 1}
	req := m.request([]item{
		{a0, replica.ISRChange{LeaderEpoch: 4, PartitionEpoch: 9, NewISR: []int32{1, 2, 3}, BrokerEpochs: []int64{-1, 21, -1}}},
		{b3, replica.ISRChange{LeaderEpoch: 2, PartitionEpoch: 3, NewISR: []int32{1, 2}}},
		{a1, replica.ISRChange{LeaderEpoch: 5, PartitionEpoch: 6, NewISR: []int32{1}, BrokerEpochs: []int64{-1}}},
	})
	if req.Version != 3 || req.BrokerID != 1 || req.BrokerEpoch != 77 {
		t.Fatalf("header v%d broker %d epoch %d, want v3 broker 1 epoch 77", req.Version, req.BrokerID, req.BrokerEpoch)
	}
	type member struct {
		id    int32
		epoch int64
	}
	type part struct {
		topic                     string
		id                        [16]byte
		partition, leader, pEpoch int32
		isr                       []member
	}
	var got []part
	for _, tp := range req.Topics {
		for _, p := range tp.Partitions {
			var isr []member
			for i, e := range p.NewEpochISR {
				if p.NewISR[i] != e.BrokerID {
					t.Fatalf("NewISR %v and NewEpochISR disagree", p.NewISR)
				}
				isr = append(isr, member{e.BrokerID, e.BrokerEpoch})
			}
			got = append(got, part{tp.Topic, tp.TopicID, p.Partition, p.LeaderEpoch, p.PartitionEpoch, isr})
		}
	}
	want := []part{
		{"a", [16]byte{0xa}, 0, 4, 9, []member{{1, 10}, {2, 21}, {3, -1}}},
		{"a", [16]byte{0xa}, 1, 5, 6, []member{{1, 10}}},
		{"b", [16]byte{0xb}, 3, 2, 3, []member{{1, 10}, {2, 20}}},
	}
	if !slices.EqualFunc(got, want, func(a, b part) bool {
		return a.topic == b.topic && a.id == b.id && a.partition == b.partition && a.leader == b.leader &&
			a.pEpoch == b.pEpoch && slices.Equal(a.isr, b.isr)
	}) {
		t.Fatalf("request\n got %+v\nwant %+v", got, want)
	}
}

// TestResults: an answer's partitions go to their proposals whatever
// their order, topics matched by id or, without one, by name; a
// partition's error is its kerr error; a partition the answer leaves out
// has an unknown outcome.
func TestResults(t *testing.T) {
	a0 := &fakePartition{topic: "a", id: [16]byte{0xa}, index: 0}
	a1 := &fakePartition{topic: "a", id: [16]byte{0xa}, index: 1}
	b0 := &fakePartition{topic: "b", id: [16]byte{0xb}, index: 0}
	batch := []item{{p: a0}, {p: a1}, {p: b0}}
	resp := kmsg.NewPtrAlterPartitionResponse()
	ta := kmsg.NewAlterPartitionResponseTopic()
	ta.TopidID = [16]byte{0xa}
	for _, rp := range []struct {
		partition, leader, pEpoch int32
		code                      int16
		isr                       []int32
	}{
		{1, 3, 8, kerr.FencedLeaderEpoch.Code, nil},
		{0, 4, 9, 0, []int32{1, 2}},
	} {
		p := kmsg.NewAlterPartitionResponseTopicPartition()
		p.Partition, p.LeaderEpoch, p.PartitionEpoch, p.ErrorCode, p.ISR = rp.partition, rp.leader, rp.pEpoch, rp.code, rp.isr
		ta.Partitions = append(ta.Partitions, p)
	}
	resp.Topics = append(resp.Topics, ta)
	got := results(batch, resp)
	if r := got[0]; r.Err != nil || r.LeaderEpoch != 4 || r.PartitionEpoch != 9 || !slices.Equal(r.ISR, []int32{1, 2}) {
		t.Fatalf("a/0: %+v", r)
	}
	if r := got[1]; !errors.Is(r.Err, kerr.FencedLeaderEpoch) {
		t.Fatalf("a/1: %+v, want FENCED_LEADER_EPOCH", r)
	}
	if r := got[2]; !errors.Is(r.Err, errMissing) {
		t.Fatalf("b/0 left out: %+v, want unknown", r)
	}

	// An answer without topic ids (before v2) is matched by name.
	tb := kmsg.NewAlterPartitionResponseTopic()
	tb.Topic = "b"
	p := kmsg.NewAlterPartitionResponseTopicPartition()
	p.PartitionEpoch = 12
	tb.Partitions = append(tb.Partitions, p)
	resp.Topics = append(resp.Topics, tb)
	if r := results(batch, resp)[2]; r.Err != nil || r.PartitionEpoch != 12 {
		t.Fatalf("b/0 by name: %+v", r)
	}
}
