package share

import (
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var wireRecord = StateRecord{Kind: Delta, StateEpoch: 3, LeaderEpoch: 7, StartOffset: 100, Batches: []StateBatch{
	{First: 100, Last: 103, State: Acknowledged, DeliveryCount: 1},
	{First: 104, Last: 106, State: Available, DeliveryCount: 1},
	{First: 110, Last: 110, State: Archived, DeliveryCount: 5},
}}

// writeRequest is a version 1 WriteShareGroupState request of one
// partition.
func writeRequest(partition int32, rec StateRecord) *kmsg.WriteShareGroupStateRequest {
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.Version = 1
	tp := kmsg.NewWriteShareGroupStateRequestTopic()
	tp.Partitions = append(tp.Partitions, WriteStateOf(partition, rec))
	req.Topics = append(req.Topics, tp)
	return req
}

// readResponse is a ReadShareGroupState response of one partition.
func readResponse(partition int32, snap StateRecord) *kmsg.ReadShareGroupStateResponse {
	resp := kmsg.NewPtrReadShareGroupStateResponse()
	tp := kmsg.NewReadShareGroupStateResponseTopic()
	tp.Partitions = append(tp.Partitions, ReadStateOf(partition, snap))
	resp.Topics = append(resp.Topics, tp)
	return resp
}

// TestWriteStateRoundTrip: a delta goes through a WriteShareGroupState
// request, encoded and decoded by kmsg, unchanged.
func TestWriteStateRoundTrip(t *testing.T) {
	for _, rec := range []StateRecord{wireRecord, {Kind: Delta, StartOffset: 5}} {
		req := writeRequest(4, rec)
		back := kmsg.NewPtrWriteShareGroupStateRequest()
		back.Version = 1
		if err := back.ReadFrom(req.AppendTo(nil)); err != nil {
			t.Fatal(err)
		}
		p := &back.Topics[0].Partitions[0]
		got, err := StateOfWrite(p)
		if err != nil {
			t.Fatal(err)
		}
		if p.Partition != 4 || !reflect.DeepEqual(got, rec) {
			t.Errorf("partition %d, record %+v, want 4, %+v", p.Partition, got, rec)
		}
	}
}

// TestReadStateRoundTrip: a snapshot goes through a ReadShareGroupState
// response unchanged, with the reader's leader epoch.
func TestReadStateRoundTrip(t *testing.T) {
	snap := wireRecord
	snap.Kind = Snapshot
	resp := readResponse(2, snap)
	back := kmsg.NewPtrReadShareGroupStateResponse()
	if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	got, err := StateOfRead(&back.Topics[0].Partitions[0], 7)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, snap) {
		t.Errorf("got %+v, want %+v", got, snap)
	}
	if _, err := Restore(Config{}, []StateRecord{got}); err != nil {
		t.Errorf("restore from what a read returns: %v", err)
	}
}

// TestWireRejects: what does not make a valid record is refused.
func TestWireRejects(t *testing.T) {
	batch := func(first, last int64, state int8, count int16) kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch {
		b := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount = first, last, state, count
		return b
	}
	for name, tc := range map[string]struct {
		start   int64
		batches []kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch
	}{
		"negative start":     {-1, nil},
		"batch before start": {10, []kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{batch(5, 12, 0, 1)}},
		"last before first":  {0, []kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{batch(5, 4, 0, 1)}},
		"overlap":            {0, []kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{batch(0, 4, 0, 1), batch(4, 6, 2, 1)}},
		"unknown state":      {0, []kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{batch(0, 4, 3, 1)}},
		"negative count":     {0, []kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{batch(0, 4, 0, -1)}},
	} {
		p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		p.StartOffset, p.StateBatches = tc.start, tc.batches
		if _, err := StateOfWrite(&p); !errors.Is(err, kerr.InvalidRequest) {
			t.Errorf("%s: write accepted or wrong error: %v", name, err)
		}
		rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
		rp.StartOffset = tc.start
		for _, b := range tc.batches {
			rp.StateBatches = append(rp.StateBatches, kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch(b))
		}
		if _, err := StateOfRead(&rp, 0); err == nil {
			t.Errorf("%s: read accepted", name)
		}
	}
	rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
	rp.ErrorCode, rp.ErrorMessage = kerr.CoordinatorLoadInProgress.Code, kmsg.StringPtr("loading")
	if _, err := StateOfRead(&rp, 0); !errors.Is(err, kerr.CoordinatorLoadInProgress) {
		t.Errorf("read with an error code: %v", err)
	}
}

func TestFence(t *testing.T) {
	for _, tc := range []struct {
		heldState, heldLeader, state, leader int32
		want                                 error
	}{
		{0, 0, 0, 0, nil},
		{2, 5, 2, 5, nil},
		{2, 5, 3, 6, nil},
		{2, 5, 1, 9, kerr.FencedStateEpoch},
		{2, 5, 2, 4, kerr.FencedLeaderEpoch},
		{2, 5, 2, -1, nil},
	} {
		if err := Fence(tc.heldState, tc.heldLeader, tc.state, tc.leader); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%+v: %v", tc, err)
		}
	}
}

// FuzzStateOfWrite: whatever request bytes kmsg accepts, StateOfWrite
// never panics, and what it accepts validates and converts back to the
// same partition.
func FuzzStateOfWrite(f *testing.F) {
	f.Add(writeRequest(0, wireRecord).AppendTo(nil))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		req := kmsg.NewPtrWriteShareGroupStateRequest()
		req.Version = 1
		if req.ReadFrom(b) != nil {
			return
		}
		for _, tp := range req.Topics {
			for i := range tp.Partitions {
				p := &tp.Partitions[i]
				rec, err := StateOfWrite(p)
				if err != nil {
					continue
				}
				if err := rec.Validate(); err != nil {
					t.Fatalf("accepted record does not validate: %v", err)
				}
				again := WriteStateOf(p.Partition, rec)
				if again.StartOffset != p.StartOffset || len(again.StateBatches) != len(p.StateBatches) {
					t.Fatalf("round trip changed the partition: %+v / %+v", again, *p)
				}
				for j := range again.StateBatches {
					x, y := again.StateBatches[j], p.StateBatches[j]
					if x.FirstOffset != y.FirstOffset || x.LastOffset != y.LastOffset || x.DeliveryState != y.DeliveryState || x.DeliveryCount != y.DeliveryCount {
						t.Fatalf("round trip changed batch %d: %+v / %+v", j, again.StateBatches[j], p.StateBatches[j])
					}
				}
			}
		}
	})
}

// FuzzStateOfRead: the same for ReadShareGroupState responses (Restore is
// not run here: a valid snapshot may span a huge range of offsets, which
// TestReadStateRoundTrip's restore does not need).
func FuzzStateOfRead(f *testing.F) {
	snap := wireRecord
	snap.Kind = Snapshot
	f.Add(readResponse(0, snap).AppendTo(nil))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		resp := kmsg.NewPtrReadShareGroupStateResponse()
		if resp.ReadFrom(b) != nil {
			return
		}
		for _, tp := range resp.Topics {
			for i := range tp.Partitions {
				p := &tp.Partitions[i]
				rec, err := StateOfRead(p, 1)
				if err != nil {
					continue
				}
				if err := rec.Validate(); err != nil || rec.Kind != Snapshot {
					t.Fatalf("accepted record %+v is no valid snapshot: %v", rec, err)
				}
				again := ReadStateOf(p.Partition, rec)
				if again.StateEpoch != p.StateEpoch || again.StartOffset != p.StartOffset || len(again.StateBatches) != len(p.StateBatches) {
					t.Fatalf("round trip changed the partition: %+v / %+v", again, *p)
				}
			}
		}
	})
}
