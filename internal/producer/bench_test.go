package producer

import (
	"encoding/binary"
	"hash/crc32"
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

// BenchmarkTxnCycle is the state's cost of one transaction on a
// partition: a verified check and Apply of a transactional batch, a
// marker check and the marker's Apply, with 100 producers taking turns.
func BenchmarkTxnCycle(b *testing.B) {
	s := NewState(Options{})
	const producers = 100
	var seqs [producers]int32
	h := log.BatchHeader{Magic: 2, Attributes: 0x10, NumRecords: 10, LastOffsetDelta: 9, MaxTimestamp: testTs}
	mh := log.BatchHeader{Magic: 2, Attributes: 0x30, NumRecords: 1, BaseSequence: -1, MaxTimestamp: testTs}
	m := log.Marker{Type: log.ControlCommit}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		pid := i % producers
		h.ProducerID, h.BaseSequence, h.BaseOffset = int64(pid), seqs[pid], int64(i)*11
		if err := s.CheckVerified(&h); err != nil {
			b.Fatal(err)
		}
		s.Apply(&h, nil)
		seqs[pid] += 10
		mh.ProducerID, mh.BaseOffset = int64(pid), h.BaseOffset+10
		if err := s.CheckMarker(&mh, m, 0); err != nil {
			b.Fatal(err)
		}
		if _, ok := s.Apply(&mh, &m); !ok {
			b.Fatal("no transaction ended")
		}
	}
}

// BenchmarkAppendWithState is an append of a 10-record idempotent batch
// to a log that drives the State (log.Options.Producers), against one
// that runs it through the Guard and Appended hooks only.
func BenchmarkAppendWithState(b *testing.B) {
	for _, driven := range []bool{false, true} {
		name := "hooks"
		if driven {
			name = "log-driven"
		}
		b.Run(name, func(b *testing.B) {
			cfg := log.DefaultConfig()
			cfg.BackgroundSync = false
			s := NewState(Options{})
			opts := log.Options{}
			if driven {
				opts.Producers = func() log.ProducerState { return s }
			}
			l, err := log.Open(b.TempDir(), cfg, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			aopts := log.AppendOptions{Guard: s.Guard}
			if !driven {
				aopts.Appended = s.Appended
			}
			src := encodeBatch(7, 0, 0, 10, testTs)
			buf := make([]byte, len(src))
			seq := int32(0)
			b.ReportAllocs()
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				copy(buf, src)
				setSequence(buf, seq)
				if _, err := l.Append(buf, aopts); err != nil {
					b.Fatal(err)
				}
				seq += 10
			}
		})
	}
}

// setSequence rewrites a batch's base sequence and its CRC.
func setSequence(b []byte, seq int32) {
	binary.BigEndian.PutUint32(b[53:], uint32(seq))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crcTable))
}
