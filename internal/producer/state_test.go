package producer

import (
	"errors"
	"math"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/log"
)

const testTs = 1_700_000_000_000

// header is the header of a client batch of n records.
func header(pid int64, epoch int16, seq, n int32) log.BatchHeader {
	return log.BatchHeader{Magic: 2, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, NumRecords: n, LastOffsetDelta: n - 1, MaxTimestamp: testTs}
}

// partition plays the part of the log: it assigns offsets to accepted
// batches and keeps their headers as written.
type partition struct {
	s       *State
	next    int64
	written []log.BatchHeader
	ts      int64
	dups    int // batches Check found to be duplicates
	refused int // batches Check refused
}

func newPartition(opts Options) *partition {
	return &partition{s: NewState(opts), ts: testTs}
}

// produce runs Check, and on success stamps and records the batch as an
// append would.
func (p *partition) produce(h log.BatchHeader) (log.BatchHeader, error) {
	if err := p.s.Check(&h); err != nil {
		if errors.As(err, new(*DuplicateError)) {
			p.dups++
		} else {
			p.refused++
		}
		return h, err
	}
	h.BaseOffset = p.next
	h.MaxTimestamp = p.ts
	p.ts++
	p.next = h.NextOffset()
	p.s.Record(&h)
	p.written = append(p.written, h)
	return h, nil
}

// errDup stands for "a DuplicateError" in the table.
var errDup = errors.New("duplicate")

type step struct {
	pid   int64
	epoch int16
	seq   int32
	n     int32
	txn   bool
	want  error // nil, errDup or a kerr error
	dupOf int   // for errDup: the step that wrote the original
}

func TestCheckSequencesAndEpochs(t *testing.T) {
	const max = math.MaxInt32
	fiveOfSix := []step{
		{pid: 1, seq: 0, n: 2}, {pid: 1, seq: 2, n: 2}, {pid: 1, seq: 4, n: 2},
		{pid: 1, seq: 6, n: 2}, {pid: 1, seq: 8, n: 2}, {pid: 1, seq: 10, n: 2},
	}
	var dupSteps []step
	dupSteps = append(dupSteps, fiveOfSix...)
	for i := 5; i >= 1; i-- { // each of the last five, newest first
		dupSteps = append(dupSteps, step{pid: 1, seq: fiveOfSix[i].seq, n: 2, want: errDup, dupOf: i})
	}
	dupSteps = append(dupSteps,
		step{pid: 1, seq: 0, n: 2, want: kerr.OutOfOrderSequenceNumber}, // older than the last five
		step{pid: 1, seq: 12, n: 1},
		step{pid: 1, seq: 2, n: 2, want: kerr.OutOfOrderSequenceNumber}, // pushed out by the append above
		step{pid: 1, seq: 4, n: 2, want: errDup, dupOf: 2},
	)

	cases := []struct {
		name  string
		steps []step
	}{
		{"in order", []step{{pid: 1, seq: 0, n: 3}, {pid: 1, seq: 3, n: 1}, {pid: 1, seq: 4, n: 10}, {pid: 1, seq: 14, n: 1}}},
		{"duplicates of the last five, older is out of order", dupSteps},
		{"gap", []step{
			{pid: 1, seq: 0, n: 1},
			{pid: 1, seq: 2, n: 1, want: kerr.OutOfOrderSequenceNumber},
			{pid: 1, seq: 1, n: 1},
		}},
		{"retry with a different count is out of order", []step{
			{pid: 1, seq: 0, n: 2}, {pid: 1, seq: 2, n: 2},
			{pid: 1, seq: 2, n: 1, want: kerr.OutOfOrderSequenceNumber},
			{pid: 1, seq: 2, n: 3, want: kerr.OutOfOrderSequenceNumber},
			{pid: 1, seq: 1, n: 3, want: kerr.OutOfOrderSequenceNumber},
		}},
		{"unknown producer starts at any sequence", []step{
			{pid: 1, seq: 42, n: 1}, {pid: 1, seq: 43, n: 1},
			{pid: 1, seq: 45, n: 1, want: kerr.OutOfOrderSequenceNumber},
		}},
		{"new epoch at 0", []step{
			{pid: 1, seq: 0, n: 5},
			{pid: 1, epoch: 1, seq: 0, n: 1},
			{pid: 1, epoch: 1, seq: 1, n: 1},
			{pid: 1, epoch: 4, seq: 0, n: 1}, // epochs may skip
		}},
		{"new epoch not at 0", []step{
			{pid: 1, seq: 0, n: 5},
			{pid: 1, epoch: 1, seq: 5, n: 1, want: kerr.OutOfOrderSequenceNumber},
			{pid: 1, epoch: 1, seq: 1, n: 1, want: kerr.OutOfOrderSequenceNumber},
			{pid: 1, seq: 5, n: 1}, // the old epoch is still current
		}},
		{"old epoch", []step{
			{pid: 1, epoch: 3, seq: 0, n: 1},
			{pid: 1, epoch: 2, seq: 1, n: 1, want: kerr.InvalidProducerEpoch},
			{pid: 1, epoch: 2, seq: 0, n: 1, want: kerr.InvalidProducerEpoch},
			{pid: 1, epoch: -1, seq: 1, n: 1, want: kerr.InvalidProducerEpoch},
			{pid: 1, epoch: 3, seq: 1, n: 1},
		}},
		{"a new epoch forgets the old batches", []step{
			{pid: 1, seq: 0, n: 1},
			{pid: 1, epoch: 1, seq: 0, n: 1}, // same range, new epoch: appended
			{pid: 1, seq: 0, n: 1, want: kerr.InvalidProducerEpoch},
			{pid: 1, epoch: 1, seq: 0, n: 1, want: errDup, dupOf: 1},
		}},
		{"producers are independent", []step{
			{pid: 1, seq: 0, n: 1}, {pid: 2, seq: 0, n: 1}, {pid: 1, seq: 1, n: 1}, {pid: 2, seq: 1, n: 1},
			{pid: 2, seq: 0, n: 1, want: errDup, dupOf: 1},
			{pid: 1, seq: 1, n: 1, want: errDup, dupOf: 2},
			{pid: 3, epoch: 7, seq: 9, n: 1},
		}},
		{"not idempotent", []step{
			{pid: -1, epoch: -1, seq: -1, n: 1}, {pid: -1, epoch: -1, seq: -1, n: 1},
			{pid: -1, epoch: 0, seq: 5, n: 3}, {pid: -7, epoch: 2, seq: -3, n: 1},
		}},
		{"negative sequence", []step{
			{pid: 1, seq: -1, n: 1, want: kerr.InvalidRecord},
			{pid: 1, seq: math.MinInt32, n: 1, want: kerr.InvalidRecord},
		}},
		{"transactional", []step{
			{pid: 1, seq: 0, n: 1, txn: true, want: kerr.InvalidTxnState},
			{pid: 1, seq: 0, n: 1},
			{pid: 1, seq: 1, n: 1, txn: true, want: kerr.InvalidTxnState},
		}},
		{"no epoch accepts any sequence", []step{
			{pid: 1, epoch: -1, seq: 7, n: 1}, {pid: 1, epoch: -1, seq: 100, n: 1},
			{pid: 1, epoch: 0, seq: 5, n: 1},
			{pid: 1, epoch: 0, seq: 7, n: 1, want: kerr.OutOfOrderSequenceNumber},
		}},
		{"wrap at the last sequence", []step{
			{pid: 1, seq: max - 1, n: 2},
			{pid: 1, seq: max, n: 1, want: kerr.OutOfOrderSequenceNumber},
			{pid: 1, seq: 1, n: 1, want: kerr.OutOfOrderSequenceNumber},
			{pid: 1, seq: 0, n: 1},
			{pid: 1, seq: max - 1, n: 2, want: errDup, dupOf: 0},
		}},
		{"batch straddling the wrap", []step{
			{pid: 1, seq: max - 1, n: 5}, // sequences max-1, max, 0, 1, 2
			{pid: 1, seq: max - 1, n: 5, want: errDup, dupOf: 0},
			{pid: 1, seq: 0, n: 1, want: kerr.OutOfOrderSequenceNumber},
			{pid: 1, seq: 3, n: 2},
			{pid: 1, seq: 5, n: 1},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPartition(Options{})
			written := make(map[int]log.BatchHeader)
			for i, st := range tc.steps {
				h := header(st.pid, st.epoch, st.seq, st.n)
				if st.txn {
					h.Attributes |= 0x10
				}
				before := p.s.Entries()
				got, err := p.produce(h)
				switch {
				case st.want == nil:
					if err != nil {
						t.Fatalf("step %d %+v: %v, want it appended", i, st, err)
					}
					written[i] = got
				case st.want == errDup:
					var dup *DuplicateError
					if !errors.As(err, &dup) {
						t.Fatalf("step %d %+v: %v, want a duplicate", i, st, err)
					}
					orig := written[st.dupOf]
					if dup.Batch.FirstOffset != orig.BaseOffset || dup.Batch.LastOffset != orig.LastOffset() ||
						dup.Batch.Timestamp != orig.MaxTimestamp || dup.ProducerID != st.pid || dup.Epoch != st.epoch {
						t.Fatalf("step %d: duplicate %+v, want the batch of step %d %+v", i, dup, st.dupOf, orig)
					}
				default:
					if !errors.Is(err, st.want) {
						t.Fatalf("step %d %+v: %v, want %v", i, st, err, st.want)
					}
				}
				if err != nil && !reflect.DeepEqual(before, p.s.Entries()) {
					t.Fatalf("step %d: a refused batch changed the state", i)
				}
			}
		})
	}
}

func TestRecordRetainsLastFive(t *testing.T) {
	p := newPartition(Options{})
	for i := range 8 {
		if _, err := p.produce(header(5, 2, int32(3*i), 3)); err != nil {
			t.Fatal(err)
		}
	}
	e, ok := p.s.Entry(5)
	if !ok || e.Epoch != 2 || len(e.Batches) != BatchesRetained || e.LastSeq() != 23 {
		t.Fatalf("entry %+v", e)
	}
	for i, b := range e.Batches {
		w := p.written[3+i]
		want := BatchMetadata{FirstSeq: w.BaseSequence, LastSeq: w.BaseSequence + 2, FirstOffset: w.BaseOffset, LastOffset: w.LastOffset(), Timestamp: w.MaxTimestamp}
		if b != want {
			t.Fatalf("batch %d = %+v, want %+v", i, b, want)
		}
	}
	if e.LastTimestamp != p.written[7].MaxTimestamp {
		t.Fatalf("last timestamp %d", e.LastTimestamp)
	}
	if _, ok := p.s.Entry(6); ok {
		t.Fatal("unknown producer has an entry")
	}
}

func TestRecordControlBatch(t *testing.T) {
	s := NewState(Options{})
	h := header(1, 0, 0, 2)
	s.Record(&h)
	marker := log.BatchHeader{Magic: 2, Attributes: 0x20 | 0x10, ProducerID: 1, ProducerEpoch: 1, BaseSequence: -1, MaxTimestamp: testTs + 5}
	s.Record(&marker)
	e, _ := s.Entry(1)
	if e.Epoch != 1 || len(e.Batches) != 0 || e.LastTimestamp != testTs+5 || e.LastSeq() != NoSequence {
		t.Fatalf("after marker: %+v", e)
	}
	next := header(1, 1, 0, 1)
	if err := s.Check(&next); err != nil {
		t.Fatalf("sequence 0 after a marker: %v", err)
	}
	gap := header(1, 1, 1, 1)
	if err := s.Check(&gap); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
		t.Fatalf("sequence 1 after a marker: %v", err)
	}
}

func TestAddSequence(t *testing.T) {
	const max = math.MaxInt32
	for _, tc := range []struct{ seq, delta, want int32 }{
		{0, 0, 0}, {0, 4, 4}, {max, 0, max}, {max - 1, 1, max}, {max, 1, 0}, {max - 1, 4, 2},
		{max, max, max - 1}, {-1, 3, NoSequence},
	} {
		if got := addSequence(tc.seq, tc.delta); got != tc.want {
			t.Errorf("addSequence(%d, %d) = %d, want %d", tc.seq, tc.delta, got, tc.want)
		}
	}
}

// fakeClock is a settable clock, safe to read from the log's goroutines.
type fakeClock struct{ ms atomic.Int64 }

func newFakeClock(t time.Time) *fakeClock {
	c := &fakeClock{}
	c.set(t)
	return c
}

func (c *fakeClock) now() time.Time      { return time.UnixMilli(c.ms.Load()) }
func (c *fakeClock) set(t time.Time)     { c.ms.Store(t.UnixMilli()) }
func (c *fakeClock) add(d time.Duration) { c.ms.Add(d.Milliseconds()) }

func TestExpireProducers(t *testing.T) {
	clock := newFakeClock(time.UnixMilli(testTs))
	s := NewState(Options{Expiration: time.Hour, Now: clock.now})
	old := header(1, 0, 0, 1)
	old.MaxTimestamp = testTs
	newer := header(2, 0, 0, 1)
	newer.MaxTimestamp = testTs + 30*60*1000
	s.Record(&old)
	s.Record(&newer)

	clock.set(time.UnixMilli(testTs).Add(time.Hour - time.Millisecond))
	if n := s.ExpireProducers(); n != 0 || s.Len() != 2 {
		t.Fatalf("expired %d before the deadline, %d left", n, s.Len())
	}
	clock.set(time.UnixMilli(testTs).Add(time.Hour))
	if n := s.ExpireProducers(); n != 1 || s.Len() != 1 {
		t.Fatalf("expired %d at the deadline, %d left", n, s.Len())
	}
	if _, ok := s.Entry(1); ok {
		t.Fatal("producer 1 not expired")
	}
	// Forgotten: a retry is no longer a duplicate and any sequence goes.
	if err := s.Check(&old); err != nil {
		t.Fatalf("retry after expiry: %v", err)
	}
	late := header(1, 0, 17, 1)
	if err := s.Check(&late); err != nil {
		t.Fatalf("any sequence after expiry: %v", err)
	}
	if err := s.Check(&newer); !errors.As(err, new(*DuplicateError)) {
		t.Fatalf("producer 2 forgotten too early: %v", err)
	}
	clock.add(30 * time.Minute)
	if n := s.ExpireProducers(); n != 1 || s.Len() != 0 {
		t.Fatalf("expired %d, %d left", n, s.Len())
	}
}

// TestStatesShareTheirOptions: states made with one *Options read its
// clock and expiration; each keeps its own producers.
func TestStatesShareTheirOptions(t *testing.T) {
	clock := newFakeClock(time.UnixMilli(testTs))
	opts := &Options{Expiration: time.Hour, Now: clock.now}
	a, b := NewStateWith(opts), NewStateWith(opts)
	h1, h2 := header(1, 0, 0, 1), header(2, 0, 0, 1)
	a.Record(&h1)
	b.Record(&h2)
	if _, ok := a.Entry(2); ok || a.Len() != 1 || b.Len() != 1 {
		t.Fatalf("states share producers: %d and %d", a.Len(), b.Len())
	}
	clock.add(time.Hour)
	if na, nb := a.ExpireProducers(), b.ExpireProducers(); na != 1 || nb != 1 {
		t.Fatalf("expired %d and %d at the shared deadline, want 1 each", na, nb)
	}
}

func TestExpirationDefault(t *testing.T) {
	clock := newFakeClock(time.UnixMilli(testTs).Add(24*time.Hour - time.Millisecond))
	s := NewState(Options{Now: clock.now})
	h := header(1, 0, 0, 1)
	s.Record(&h)
	if n := s.ExpireProducers(); n != 0 {
		t.Fatalf("expired %d before 24h", n)
	}
	clock.add(time.Millisecond)
	if n := s.ExpireProducers(); n != 1 {
		t.Fatalf("expired %d at 24h", n)
	}
}

func TestGuardAndAppendedHooks(t *testing.T) {
	s := NewState(Options{})
	info := log.BatchInfo{BatchHeader: header(3, 0, 0, 2)}
	if err := s.Guard(info, 0); err != nil {
		t.Fatal(err)
	}
	info.BaseOffset = 40
	s.Appended(info)
	if err := s.Guard(log.BatchInfo{BatchHeader: header(3, 0, 0, 2)}, 42); !errors.As(err, new(*DuplicateError)) {
		t.Fatalf("Guard on a retry: %v", err)
	}
	e, _ := s.Entry(3)
	if e.Batches[0].FirstOffset != 40 || e.Batches[0].LastOffset != 41 {
		t.Fatalf("entry %+v", e)
	}
}
