package producer

import (
	"testing"

	"weir/internal/log"
)

// TestStateMakesTablesOnFirstWrite checks that a partition's state stays
// the bare settings through everything that only reads it (a batch
// without a producer id is applied without one), and that the first
// write makes its tables and then behaves as before: a second state
// replaying the same snapshot must agree.
func TestStateMakesTablesOnFirstWrite(t *testing.T) {
	s := NewState(Options{})
	noPID := log.BatchHeader{Magic: 2, ProducerID: -1, BaseSequence: -1, NumRecords: 1}
	reads := []struct {
		name string
		run  func()
	}{
		{"Check", func() { _ = s.Check(&noPID) }},
		{"Apply without producer", func() { s.Apply(&noPID, nil) }},
		{"FirstUnstableOffset", func() { _ = s.FirstUnstableOffset() }},
		{"Entry", func() { _, _ = s.Entry(7) }},
		{"Describe", func() { _ = s.Describe() }},
		{"AppendSnapshot", func() { _ = s.AppendSnapshot(nil) }},
		{"ExpireProducers", func() { _ = s.ExpireProducers() }},
		{"Reset", s.Reset},
		{"LoadSnapshot of none", func() {
			if err := s.LoadSnapshot(NewState(Options{}).AppendSnapshot(nil)); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, r := range reads {
		r.run()
		if s.t != nil {
			t.Fatalf("%s made the tables of a state without producers", r.name)
		}
	}
	if noTables.producers != nil || noTables.ongoing != nil || noTables.verifications != nil || noTables.lastGuard != 0 {
		t.Fatalf("the shared empty tables were written: %+v", noTables)
	}

	h := header(5, 0, 0, 2)
	h.BaseOffset = 10
	h.Attributes |= 0x10 // transactional
	s.Apply(&h, nil)
	if s.t == nil || s.Len() != 1 || s.FirstUnstableOffset() != 10 {
		t.Fatalf("after the first write: tables %v, %d producers, first unstable %d", s.t != nil, s.Len(), s.FirstUnstableOffset())
	}
	if g := s.StartVerification(6, 0); g == NoVerification {
		t.Fatal("a verification of a producer with no transaction here was skipped")
	}
	copied := NewState(Options{})
	if err := copied.LoadSnapshot(s.AppendSnapshot(nil)); err != nil {
		t.Fatal(err)
	}
	if copied.FirstUnstableOffset() != 10 || copied.Len() != 1 {
		t.Fatalf("snapshot replayed: %d producers, first unstable %d", copied.Len(), copied.FirstUnstableOffset())
	}
}
