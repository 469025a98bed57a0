package producer

import (
	"bytes"
	"testing"

	"weir/internal/log"
)

// FuzzLoadSnapshot loads arbitrary producer snapshots: no panic, a
// refused one leaves the state empty, and an accepted one encodes back to
// the same bytes, with its ongoing transactions in first-offset order.
func FuzzLoadSnapshot(f *testing.F) {
	s := NewState(Options{})
	h := header(1, 2, 0, 3)
	h.Attributes = 0x10
	h.BaseOffset = 5
	s.Apply(&h, nil)
	h2 := header(2, 0, 0, 1)
	s.Apply(&h2, nil)
	m := log.BatchHeader{Magic: 2, Attributes: 0x30, ProducerID: 2, BaseOffset: 9, BaseSequence: -1}
	s.Apply(&m, &log.Marker{Type: log.ControlCommit, CoordinatorEpoch: 4})
	f.Add(s.AppendSnapshot(nil))
	f.Add(NewState(Options{}).AppendSnapshot(nil))
	f.Add([]byte{1, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		s := NewState(Options{})
		if err := s.LoadSnapshot(b); err != nil {
			if s.Len() != 0 || s.FirstUnstableOffset() != -1 {
				t.Fatalf("refused snapshot left %d producers", s.Len())
			}
			return
		}
		if !bytes.Equal(s.AppendSnapshot(nil), b) {
			t.Fatalf("accepted snapshot does not encode back")
		}
		first := int64(-1)
		for _, e := range s.Entries() {
			if e.TxnFirstOffset >= 0 && (first < 0 || e.TxnFirstOffset < first) {
				first = e.TxnFirstOffset
			}
		}
		if s.FirstUnstableOffset() != first {
			t.Fatalf("first unstable offset %d, entries say %d", s.FirstUnstableOffset(), first)
		}
	})
}
