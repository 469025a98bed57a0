package txn

import (
	"encoding/hex"
	"reflect"
	"testing"
)

// FuzzDecodeValue: any bytes decode or fail without panicking, within the
// input's size; what decodes encodes back (in its own version) to bytes
// that decode to the same value. The seed corpus (testdata/fuzz) holds
// Kafka 4.3's own encodings.
func FuzzDecodeValue(f *testing.F) {
	for _, g := range goldenValues {
		b, _ := hex.DecodeString(g.hex)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeValue(b)
		if err != nil {
			return
		}
		if n := len(v.Partitions); n > len(b) {
			t.Fatalf("%d partitions from %d bytes", n, len(b))
		}
		again, err := DecodeValue(EncodeValue(&v))
		if err != nil {
			t.Fatalf("re-encoded value does not decode: %v", err)
		}
		if !reflect.DeepEqual(again, v) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", again, v)
		}
	})
}

// FuzzDecodeKey: keys decode or fail without panicking and round-trip.
func FuzzDecodeKey(f *testing.F) {
	f.Add(EncodeKey("t1"))
	f.Add([]byte{0, 0, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := DecodeKey(b)
		if err != nil {
			return
		}
		if got, err := DecodeKey(EncodeKey(id)); err != nil || got != id {
			t.Fatalf("round trip of %q: %q, %v", id, got, err)
		}
	})
}

// FuzzReplay: a __transaction_state partition holding any records loads
// without panicking, and what it loads can be served: every transactional
// id answers Describe, a prepared one asks for its markers, and requests
// against the loaded state get answers.
func FuzzReplay(f *testing.F) {
	for _, g := range goldenValues {
		b, _ := hex.DecodeString(g.hex)
		f.Add(EncodeKey("t1"), b, false, int64(1700000001000))
	}
	f.Add(EncodeKey("t1"), []byte{}, true, int64(0))
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool, now int64) {
		if tombstone {
			value = nil
		} else if value == nil {
			value = []byte{}
		}
		p := NewPartition(Config{IDs: &counterIDs{next: 1}}, 0, 1)
		if err := p.Replay(key, value); err != nil {
			return
		}
		out := p.Loaded(now)
		id, _ := DecodeKey(key)
		if value != nil {
			if d := p.Describe(id); d.Code != 0 && id != "" {
				t.Fatalf("loaded id %q does not describe: %d", id, d.Code)
			}
		}
		for _, w := range out.Writes {
			p.Appended(w.ID, 0, now)
		}
		_ = p.InitProducerID(1, id, 1000, nil, now)
		_ = p.EndTxn(2, id, 0, 0, true, V2, now)
		_ = p.AddPartitions(3, id, 0, 0, []TopicPartition{{"a", 0}}, V2, now)
		_ = p.AbortTimedOut(now + 1<<40)
		_ = p.Expire(now + 1<<40)
	})
}
