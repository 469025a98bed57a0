package kraft

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"weir/internal/metadata"
)

func brokerRec(id int32) *metadata.RegisterBrokerRecord {
	return &metadata.RegisterBrokerRecord{ID: id, Incarnation: [16]byte{byte(id)}, Epoch: int64(id),
		Endpoints: []metadata.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: uint16(9000 + id)}}}
}

func topicRecs(name string, id byte, parts int32, replicas ...int32) []metadata.Record {
	tid := metadata.TopicID{id, 1}
	recs := []metadata.Record{&metadata.TopicRecord{Name: name, ID: tid}}
	for p := range parts {
		recs = append(recs, &metadata.PartitionRecord{TopicID: tid, Partition: p, Replicas: replicas, ISR: replicas, Leader: replicas[0]})
	}
	return recs
}

func TestFSMApply(t *testing.T) {
	f := NewMetadataFSM(nil)
	sub := f.Subscribe(0)
	defer sub.Close()

	type step struct {
		name     string
		index    uint64
		data     []byte
		wantErr  bool
		topics   int
		brokers  int
		changed  bool // the delta is not empty
		errCount int64
	}
	steps := []step{
		{name: "brokers", index: 3, data: metadata.EncodeBatch([]metadata.Record{brokerRec(1), brokerRec(2)}), brokers: 2, changed: true},
		{name: "topic", index: 4, data: metadata.EncodeBatch(topicRecs("a", 1, 4, 1, 2)), brokers: 2, topics: 1, changed: true},
		// A partition of an unknown topic: the batch is refused whole.
		{name: "refused", index: 7, data: metadata.EncodeBatch(append(topicRecs("b", 2, 1, 1), &metadata.PartitionRecord{TopicID: metadata.TopicID{9}, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1})),
			wantErr: true, brokers: 2, topics: 1, errCount: 1},
		{name: "corrupt", index: 8, data: []byte{1, 2, 3}, wantErr: true, brokers: 2, topics: 1, errCount: 2},
		{name: "empty bytes", index: 9, data: nil, wantErr: true, brokers: 2, topics: 1, errCount: 3},
		{name: "after errors", index: 10, data: metadata.EncodeBatch(topicRecs("c", 3, 2, 2)), brokers: 2, topics: 2, changed: true, errCount: 3},
	}
	first, err := sub.Next(context.Background())
	if err != nil || !first.Resync || first.Image.Offset() != -1 {
		t.Fatalf("first update %+v, %v: want a resync of the empty image", first, err)
	}
	for _, s := range steps {
		changed := f.Changed()
		res := f.Apply(s.index, s.data).(*Applied)
		img := f.Image()
		switch {
		case (res.Err != nil) != s.wantErr:
			t.Fatalf("%s: err %v, want error %v", s.name, res.Err, s.wantErr)
		case img != res.Image || img.Offset() != int64(s.index):
			t.Fatalf("%s: image offset %d, want %d (published %v)", s.name, img.Offset(), s.index, img == res.Image)
		case img.NumTopics() != s.topics || img.NumBrokers() != s.brokers:
			t.Fatalf("%s: %d topics %d brokers, want %d %d", s.name, img.NumTopics(), img.NumBrokers(), s.topics, s.brokers)
		case res.Delta.Empty() == s.changed:
			t.Fatalf("%s: delta empty %v", s.name, res.Delta.Empty())
		case f.ApplyErrors() != s.errCount:
			t.Fatalf("%s: %d apply errors, want %d", s.name, f.ApplyErrors(), s.errCount)
		}
		select {
		case <-changed:
		default:
			t.Fatalf("%s: Changed not closed", s.name)
		}
		u, err := sub.Next(context.Background())
		if err != nil || u.Resync || u.Image != img || u.Delta != res.Delta {
			t.Fatalf("%s: update %+v %v, want the applied delta", s.name, u, err)
		}
	}
}

func TestSubscriptionCollapsesWhenFull(t *testing.T) {
	f := NewMetadataFSM(nil)
	slow := f.Subscribe(3)
	defer slow.Close()
	fast := f.Subscribe(100)
	defer fast.Close()
	for i := range 10 {
		f.Apply(uint64(i+1), metadata.EncodeBatch([]metadata.Record{brokerRec(int32(i + 1))}))
	}
	// The slow one holds at most 3: a resync, then the deltas after it.
	got := slow.Drain()
	if len(got) == 0 || len(got) > 3 || !got[0].Resync {
		t.Fatalf("slow subscriber got %d updates: want a resync and at most 2 deltas", len(got))
	}
	for i, u := range got[1:] {
		if u.Resync || u.Delta.Offset != got[0].Image.Offset()+int64(i)+1 {
			t.Fatalf("slow update %d: %+v does not follow the resync at %d", i+1, u, got[0].Image.Offset())
		}
	}
	if last := got[len(got)-1]; last.Image.Offset() != 10 || last.Image.NumBrokers() != 10 {
		t.Fatalf("slow subscriber ends at offset %d", last.Image.Offset())
	}
	if slow.Collapsed() == 0 {
		t.Fatal("collapse not counted")
	}
	all := fast.Drain()
	if len(all) != 11 || !all[0].Resync {
		t.Fatalf("fast subscriber got %d updates, want the initial resync and 10 deltas", len(all))
	}
	for i, u := range all[1:] {
		if u.Resync || u.Delta.Offset != int64(i+1) {
			t.Fatalf("update %d: %+v out of order", i, u)
		}
	}
	slow.Close()
	if _, err := slow.Next(context.Background()); !errors.Is(err, errSubscriptionClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
	f.Apply(11, metadata.EncodeBatch(nil)) // a closed subscription is no longer fed
}

func TestFSMSnapshotRestore(t *testing.T) {
	f := NewMetadataFSM(nil)
	f.Apply(1, metadata.EncodeBatch([]metadata.Record{brokerRec(1), brokerRec(2), brokerRec(3)}))
	for i := range 20 {
		f.Apply(uint64(i+2), metadata.EncodeBatch(topicRecs(fmt.Sprint("t", i), byte(i+1), 16, 1, 2, 3)))
	}
	write, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	want := f.Image()
	// Later applies do not change what the captured snapshot writes.
	f.Apply(100, metadata.EncodeBatch(topicRecs("late", 99, 1, 1)))
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		t.Fatal(err)
	}

	g := NewMetadataFSM(nil)
	sub := g.Subscribe(0)
	defer sub.Close()
	sub.Drain()
	if err := g.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if !g.Image().Equal(want) || g.RestoredOffset() != want.Offset() || g.Restores() != 1 {
		t.Fatalf("restored image at %d (restores %d) differs from the snapshot at %d", g.Image().Offset(), g.Restores(), want.Offset())
	}
	if u := sub.Drain(); len(u) != 1 || !u[0].Resync || u[0].Image != g.Image() {
		t.Fatalf("restore updates %+v: want one resync", u)
	}
	// A damaged snapshot is refused and leaves the image alone.
	bad := append([]byte(nil), buf.Bytes()...)
	bad[len(bad)/2] ^= 0xff
	before := g.Image()
	if err := g.Restore(bytes.NewReader(bad)); err == nil {
		t.Fatal("damaged snapshot restored")
	}
	if g.Image() != before {
		t.Fatal("a refused snapshot replaced the image")
	}
}

func TestWaitForOffset(t *testing.T) {
	f := NewMetadataFSM(nil)
	done := make(chan error, 1)
	go func() {
		_, err := f.WaitForOffset(context.Background(), 5)
		done <- err
	}()
	for i := uint64(1); i <= 5; i++ {
		select {
		case err := <-done:
			t.Fatalf("returned at offset %d: %v", f.Offset(), err)
		default:
		}
		f.Apply(i, metadata.EncodeBatch(nil))
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitForOffset did not return at offset 5")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.WaitForOffset(ctx, 99); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
}

// FuzzFSMApply: whatever the bytes of an entry, Apply never panics,
// advances the offset to the entry's index and keeps a valid image
// (snapshots of it load back equal).
func FuzzFSMApply(f *testing.F) {
	f.Add(metadata.EncodeBatch([]metadata.Record{brokerRec(1)}), metadata.EncodeBatch(topicRecs("a", 1, 3, 1)))
	f.Add([]byte{}, []byte{0xff})
	f.Add(metadata.EncodeBatch(topicRecs("x", 2, 2, 7)), metadata.EncodeBatch([]metadata.Record{&metadata.RemoveTopicRecord{ID: metadata.TopicID{2, 1}}}))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		fsm := NewMetadataFSM(nil)
		fsm.Apply(1, metadata.EncodeBatch([]metadata.Record{brokerRec(1), brokerRec(2)}))
		for i, data := range [][]byte{a, b} {
			idx := uint64(i + 2)
			fsm.Apply(idx, data)
			if fsm.Offset() != int64(idx) {
				t.Fatalf("offset %d after entry %d", fsm.Offset(), idx)
			}
		}
		var buf bytes.Buffer
		if err := metadata.WriteSnapshot(&buf, fsm.Image()); err != nil {
			t.Fatal(err)
		}
		img, err := metadata.ReadSnapshot(&buf)
		if err != nil || !img.Equal(fsm.Image()) {
			t.Fatalf("image does not survive a snapshot: %v", err)
		}
	})
}
