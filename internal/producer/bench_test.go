package producer

import (
	"testing"

	"weir/internal/log"
)

// BenchmarkCheckRecord is the per-append cost on the produce path: Check
// then Record of an in-order batch, spread over 100 producers.
func BenchmarkCheckRecord(b *testing.B) {
	s := NewState(Options{})
	const producers = 100
	var seqs [producers]int32
	h := log.BatchHeader{Magic: 2, NumRecords: 10, LastOffsetDelta: 9, MaxTimestamp: testTs}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		pid := i % producers
		h.ProducerID, h.BaseSequence, h.BaseOffset = int64(pid), seqs[pid], int64(i)*10
		if err := s.Check(&h); err != nil {
			b.Fatal(err)
		}
		s.Record(&h)
		seqs[pid] += 10
	}
}

// BenchmarkCheckDuplicate is the cost of recognising a retry.
func BenchmarkCheckDuplicate(b *testing.B) {
	s := NewState(Options{})
	for i := range BatchesRetained {
		h := header(1, 0, int32(10*i), 10)
		h.BaseOffset = int64(10 * i)
		s.Record(&h)
	}
	retry := header(1, 0, 0, 10)
	b.ReportAllocs()
	for b.Loop() {
		if s.Check(&retry) == nil {
			b.Fatal("retry accepted")
		}
	}
}

// BenchmarkNextID is the cost of an InitProducerId id, one fsync'd
// reservation per DefaultBlockSize ids included.
func BenchmarkNextID(b *testing.B) {
	r, err := OpenFileReserver(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	a := NewAllocator(r, DefaultBlockSize)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.NextID(); err != nil {
			b.Fatal(err)
		}
	}
}
