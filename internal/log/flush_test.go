package log

import (
	"errors"
	"os"
	"reflect"
	"testing"
)

// txnState is the least ProducerState the aborted-transaction index
// needs: each producer's ongoing transaction (its first offset), ended by
// a marker. It keeps no sequences or epochs and writes no snapshots
// (LoadSnapshot refuses), so recovery replays the whole log.
type txnState struct{ open map[int64]int64 }

func (s *txnState) Apply(h *BatchHeader, m *Marker) (CompletedTxn, bool) {
	first, ok := s.open[h.ProducerID]
	if m != nil {
		delete(s.open, h.ProducerID)
		return CompletedTxn{ProducerID: h.ProducerID, FirstOffset: first, LastOffset: h.BaseOffset, Aborted: m.Aborted()}, ok
	}
	if h.IsTransactional() && !ok {
		if s.open == nil {
			s.open = map[int64]int64{}
		}
		s.open[h.ProducerID] = h.BaseOffset
	}
	return CompletedTxn{}, false
}

func (s *txnState) FirstUnstableOffset() int64 {
	first := int64(-1)
	for _, f := range s.open {
		if first < 0 || f < first {
			first = f
		}
	}
	return first
}

func (s *txnState) Reset()                           { s.open = nil }
func (s *txnState) AppendSnapshot(dst []byte) []byte { return dst }
func (s *txnState) LoadSnapshot([]byte) error        { return errors.New("txnState keeps no snapshots") }
func (s *txnState) ExpireProducers() int             { return 0 }
func (s *txnState) Describe() []ProducerInfo         { return nil }

// appendTxn appends a one-record transactional batch of producer pid.
func appendTxn(t *testing.T, l *Log, clock *fakeClock, pid int64) {
	t.Helper()
	b := makeBatch(t, batchSpec{records: []testRecord{{value: []byte("v")}}, baseTs: clock.now().UnixMilli(), producer: pid, attrExtra: attrTransactional})
	if _, err := l.Append(b, AppendOptions{LeaderEpoch: 1}); err != nil {
		t.Fatalf("Append: %v", err)
	}
}

// checkTrusted checks what recovery relies on: the checkpoint's recovery
// point does not pass the fsynced data, and every segment wholly below it
// has on disk the aborted-transaction index the log holds in memory.
func checkTrusted(t *testing.T, l *Log, dir string) int64 {
	t.Helper()
	ck, ok := readCheckpoint(dir)
	if !ok {
		t.Fatal("no checkpoint")
	}
	if d := l.DurableOffset(); ck.recoveryPoint > d {
		t.Fatalf("recovery point %d passes the durable offset %d", ck.recoveryPoint, d)
	}
	l.mu.Lock()
	segs := l.segs
	mem := make([][]AbortedTxn, len(segs))
	next := make([]int64, len(segs))
	for i, s := range segs {
		mem[i], next[i] = s.ix.aborted, s.next
	}
	l.mu.Unlock()
	for i, s := range segs {
		if next[i] > ck.recoveryPoint {
			break
		}
		disk, err := loadTxnIndex(s.prefix, s.base, next[i])
		if err != nil {
			t.Fatalf("segment %d below the recovery point %d: %v", s.base, ck.recoveryPoint, err)
		}
		if len(disk) != 0 || len(mem[i]) != 0 {
			if !reflect.DeepEqual(disk, mem[i]) {
				t.Fatalf("segment %d [%d, %d) below the recovery point %d: .txnindex %+v, log %+v", s.base, s.base, next[i], ck.recoveryPoint, disk, mem[i])
			}
		}
	}
	return ck.recoveryPoint
}

// A truncation into a sealed segment that no flush has covered yet makes
// it the active segment again. A flush in flight then, or any later one,
// must not take it for sealed: a flush claims a sealed segment's end as
// the recovery point once done, and the transaction appended and aborted
// in the segment while the flush ran is in neither the data it fsynced
// nor the .txnindex it wrote. Recovery trusts the index of a segment
// wholly below the recovery point, so after a crash the abort would be
// lost and read_committed readers would see the aborted record. The
// syncer is never started: the flush is run by hand and the appends run
// inside it.
func TestFlushAfterTruncationIntoUnflushedSegment(t *testing.T) {
	want := []AbortedTxn{{ProducerID: 7, FirstOffset: 2, LastOffset: 3, LastStableOffset: 4}}
	for _, tc := range []struct {
		name string
		// checkpoint runs a checkpointing pass after the raced one, which
		// must bring the recovery point to the log end with the index.
		checkpoint bool
	}{
		{name: "crash after the raced flush"},
		{name: "crash after the next checkpoint", checkpoint: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			cfg := DefaultConfig()
			// Four batches fill a segment; after the cut to two, the
			// transactional batch and the marker fit.
			cfg.SegmentBytes = 4 * int64(len(simpleBatch(t, 1, clock.now().UnixMilli(), 10)))
			dir := t.TempDir()
			syncer := newSyncer(1)
			defer syncer.Close()
			l, err := Open(dir, cfg, Options{Now: clock.now, Syncer: syncer, Producers: func() ProducerState { return &txnState{} }})
			if err != nil {
				t.Fatal(err)
			}
			appendN(t, l, clock, 5, 1, 10) // offset 4 rolls: segment 0 sealed, its flush pending
			if err := l.Truncate(2); err != nil {
				t.Fatal(err)
			}
			// The pass the roll asked for (no checkpoint of its own)
			// copies its work; meanwhile producer 7's transaction starts
			// at 2 and is aborted at 3, in segment 0.
			l.flushCopied = func() {
				l.flushCopied = nil
				appendTxn(t, l, clock, 7)
				if _, err := l.AppendMarker(TxnMarker{ProducerID: 7, Marker: Marker{Type: ControlAbort}}, AppendOptions{LeaderEpoch: 1}); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.flush(false, false); err != nil {
				t.Fatal(err)
			}
			if l.flushCopied != nil || len(l.segs) != 1 || l.EndOffset() != 4 {
				t.Fatalf("the flush did not run the appends in flight into segment 0: %d segments, log end %d", len(l.segs), l.EndOffset())
			}
			if got := l.AbortedTransactions(0, l.EndOffset()); !reflect.DeepEqual(got, want) {
				t.Fatalf("aborted %+v, want %+v", got, want)
			}
			checkTrusted(t, l, dir)
			if tc.checkpoint {
				if err := l.flush(true, false); err != nil {
					t.Fatal(err)
				}
				if rp := checkTrusted(t, l, dir); rp != l.EndOffset() {
					t.Fatalf("recovery point %d after a checkpointing flush, want the log end %d", rp, l.EndOffset())
				}
			}
			crash(l)
			l, err = Open(dir, cfg, Options{Now: clock.now, Producers: func() ProducerState { return &txnState{} }})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if got := l.AbortedTransactions(0, l.EndOffset()); !reflect.DeepEqual(got, want) {
				t.Fatalf("after the crash: aborted %+v, want %+v", got, want)
			}
		})
	}
}

// A sealed segment that retention deletes while a flush is writing its
// index keeps no files: the flush skips a segment no longer in the log
// instead of writing its index again after the deletion (an index, or an
// aborted-transaction index, outliving its segment).
func TestFlushSkipsSegmentsDeletedMeanwhile(t *testing.T) {
	clock := newFakeClock()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 4 * int64(len(simpleBatch(t, 1, clock.now().UnixMilli(), 10)))
	cfg.IndexIntervalBytes = 1
	dir := t.TempDir()
	syncer := newSyncer(1)
	defer syncer.Close()
	l, err := Open(dir, cfg, Options{Now: clock.now, Syncer: syncer, Producers: func() ProducerState { return &txnState{} }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendTxn(t, l, clock, 7)
	if _, err := l.AppendMarker(TxnMarker{ProducerID: 7, Marker: Marker{Type: ControlAbort}}, AppendOptions{LeaderEpoch: 1}); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, clock, 4, 1, 10) // segment 0 sealed with an abort indexed, its flush pending
	if len(l.segs) < 2 {
		t.Fatalf("%d segments, want segment 0 sealed", len(l.segs))
	}
	first := l.segs[0]
	l.flushCopied = func() {
		l.flushCopied = nil
		// Retention takes segment 0 while the flush holds its copy.
		if _, err := l.AdvanceStartOffset(l.segs[1].base, l.EndOffset()); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.flush(true, true); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		if _, err := os.Stat(first.prefix + suffix); err == nil {
			t.Errorf("%s%s outlived its deleted segment", first.prefix, suffix)
		}
	}
}
