package metadata

import (
	"bytes"
	"reflect"
	"testing"
)

// recordsBody is the records part of a batch: what decodeRecords reads,
// without the frame and checksum a fuzzer would rarely get right.
func recordsBody(recs []Record) []byte {
	b := EncodeBatch(recs)
	return b[4 : len(b)-4]
}

func addRecordSeeds(f *testing.F) {
	all := sampleRecords()
	f.Add(recordsBody(all))
	for _, r := range all {
		f.Add(recordsBody([]Record{r}))
	}
	f.Add(recordsBody([]Record{
		&TopicRecord{Name: "c", ID: topicID(3)},
		&PartitionRecord{TopicID: topicID(3), Replicas: []int32{0, 1}, ISR: []int32{1}, Leader: 1},
		change(topicID(1), 0, 2, []int32{2}, 1, 1),
		&RemoveTopicRecord{ID: topicID(2)},
	}))
}

// FuzzDecodeBatch: no input makes the decoder panic, and what it accepts
// encodes and decodes back to the same records.
func FuzzDecodeBatch(f *testing.F) {
	f.Add(EncodeBatch(sampleRecords()))
	f.Add(EncodeBatch(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := DecodeBatch(b)
		if err != nil {
			return
		}
		again, err := DecodeBatch(EncodeBatch(recs))
		if err != nil || !reflect.DeepEqual(again, recs) {
			t.Fatalf("re-encoding %v: %v, %v", recs, again, err)
		}
	})
}

// FuzzDecodeRecords is FuzzDecodeBatch past the checksum.
func FuzzDecodeRecords(f *testing.F) {
	addRecordSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := decodeRecords(b)
		if err != nil {
			return
		}
		again, err := decodeRecords(recordsBody(recs))
		if err != nil || !reflect.DeepEqual(again, recs) {
			t.Fatalf("re-encoding %v: %v, %v", recs, again, err)
		}
	})
}

// FuzzApply applies decoded records to an image: whatever they are, the
// result is refused or is an image that satisfies every invariant and
// survives a snapshot round trip.
func FuzzApply(f *testing.F) {
	addRecordSeeds(f)
	base := securityImage(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := decodeRecords(b)
		if err != nil {
			return
		}
		next, d, err := base.Apply(base.Offset()+1, recs)
		if err != nil {
			return
		}
		if err := imageInvariants(next); err != nil {
			t.Fatalf("after %v: %v", recs, err)
		}
		if d.Offset != next.Offset() {
			t.Fatalf("delta offset %d", d.Offset)
		}
		var buf bytes.Buffer
		if err := WriteSnapshot(&buf, next); err != nil {
			t.Fatal(err)
		}
		loaded, err := ReadSnapshot(&buf)
		if err != nil || !loaded.Equal(next) {
			t.Fatalf("snapshot of the image after %v: %v", recs, err)
		}
	})
}

// FuzzReadSnapshot: no input makes the loader panic, and an image it
// accepts satisfies every invariant and writes back to an equal image.
func FuzzReadSnapshot(f *testing.F) {
	for _, img := range []*Image{Empty(), baseImage(f), securityImage(f)} {
		var buf bytes.Buffer
		if err := WriteSnapshot(&buf, img); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		img, err := ReadSnapshot(bytes.NewReader(b))
		if err != nil {
			return
		}
		if err := imageInvariants(img); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := WriteSnapshot(&buf, img); err != nil {
			t.Fatal(err)
		}
		again, err := ReadSnapshot(&buf)
		if err != nil || !again.Equal(img) {
			t.Fatalf("rewritten snapshot: %v", err)
		}
	})
}
