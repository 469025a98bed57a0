package log

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"
)

// FuzzParseMarker feeds arbitrary bytes to the control-batch decoders
// (ParseMarker for stored batches, ValidateBatch for appended ones): they
// must never panic, must agree on every batch ValidateBatch accepts, and
// a marker they accept must survive MarkerBatch's re-encoding.
func FuzzParseMarker(f *testing.F) {
	f.Add(MarkerBatch(7, 3, Marker{Type: ControlAbort, CoordinatorEpoch: 9}, 1_700_000_000_000))
	f.Add(MarkerBatch(1, 0, Marker{Type: ControlCommit, CoordinatorEpoch: -1}, 0))
	unknown := MarkerBatch(1, 0, Marker{Type: 5}, 0)
	fixBatchCRC(unknown)
	f.Add(unknown)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMarker(b)
		info, verr := ValidateBatch(b, nil, time.UnixMilli(0))
		if verr == nil && info.IsControl() {
			if err != nil || m != info.Marker {
				t.Fatalf("ValidateBatch accepted marker %+v, ParseMarker %+v, %v", info.Marker, m, err)
			}
		}
		if err != nil {
			return
		}
		if m.Type != ControlAbort && m.Type != ControlCommit {
			t.Fatalf("accepted control type %d", m.Type)
		}
		again, err := ParseMarker(MarkerBatch(1, 1, m, 0))
		if err != nil || again != m {
			t.Fatalf("re-encoded marker %+v: %+v, %v", m, again, err)
		}
	})
}

// FuzzTxnIndex decodes arbitrary aborted-transaction index files: no
// panic, every accepted entry within the segment's offsets, in marker
// order, and what is accepted encodes back to the same bytes.
func FuzzTxnIndex(f *testing.F) {
	f.Add(encodeTxnIndex([]AbortedTxn{{ProducerID: 1, FirstOffset: 3, LastOffset: 10, LastStableOffset: 4}, {ProducerID: 2, FirstOffset: 5, LastOffset: 12, LastStableOffset: 13}}), int64(0), int64(20))
	f.Add(encodeTxnIndex([]AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 100, LastStableOffset: 101}}), int64(100), int64(101))
	f.Add([]byte{0, 1}, int64(0), int64(1))
	f.Fuzz(func(t *testing.T, b []byte, base, next int64) {
		entries, err := decodeTxnIndex(b, base, next)
		if err != nil {
			return
		}
		for i, e := range entries {
			if e.LastOffset < base || e.LastOffset >= next || e.FirstOffset > e.LastOffset || e.LastStableOffset > e.LastOffset+1 || (i > 0 && e.LastOffset <= entries[i-1].LastOffset) {
				t.Fatalf("accepted entry %d %+v in [%d, %d)", i, e, base, next)
			}
		}
		if !bytes.Equal(encodeTxnIndex(entries), b) {
			t.Fatalf("accepted index does not encode back")
		}
	})
}

// FuzzSnapshotFrame decodes arbitrary producer snapshot files: no panic,
// and an accepted frame carries the offset it is named after and a
// payload that frames back to the same bytes.
func FuzzSnapshotFrame(f *testing.F) {
	f.Add(encodeSnapshot(42, []byte("state")), int64(42))
	f.Add(encodeSnapshot(0, nil), int64(0))
	f.Add([]byte{0, 1, 0, 0}, int64(3))
	f.Fuzz(func(t *testing.T, b []byte, offset int64) {
		state, err := decodeSnapshot(b, offset)
		if err != nil {
			return
		}
		if int64(binary.BigEndian.Uint64(b[6:])) != offset || !bytes.Equal(encodeSnapshot(offset, state), b) {
			t.Fatalf("accepted snapshot does not frame back")
		}
	})
}
