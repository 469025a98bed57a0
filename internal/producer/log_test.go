package producer

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/log"
)

// encodeBatch encodes an uncompressed v2 batch of n records as a client
// would send it.
func encodeBatch(pid int64, epoch int16, seq int32, n int, ts int64) []byte {
	var recs []byte
	for i := range n {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte("value")}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // everything after the length varint
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(n - 1),
		FirstTimestamp: ts, MaxTimestamp: ts,
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: int32(n),
		Records: recs,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crcTable))
	return out
}

// idempotentLog is a partition log whose appends go through a State, as
// the broker wires them.
type idempotentLog struct {
	t     *testing.T
	dir   string
	cfg   log.Config
	clock *fakeClock
	l     *log.Log
	s     *State
}

func openIdempotentLog(t *testing.T, dir string, cfg log.Config, clock *fakeClock) *idempotentLog {
	t.Helper()
	l, err := log.Open(dir, cfg, log.Options{Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	p := &idempotentLog{t: t, dir: dir, cfg: cfg, clock: clock, l: l, s: NewState(Options{Now: clock.now})}
	if err := p.s.Rebuild(l, l.StartOffset()); err != nil {
		t.Fatalf("Rebuild: %v", err)
	}
	return p
}

func (p *idempotentLog) send(pid int64, epoch int16, seq int32, n int) (log.AppendResult, error) {
	p.clock.add(time.Millisecond)
	b := encodeBatch(pid, epoch, seq, n, p.clock.now().UnixMilli())
	return p.l.Append(b, log.AppendOptions{LeaderEpoch: 1, Guard: p.s.Guard, Appended: p.s.Appended})
}

func (p *idempotentLog) restart() *idempotentLog {
	p.t.Helper()
	if err := p.l.Close(); err != nil {
		p.t.Fatal(err)
	}
	return openIdempotentLog(p.t, p.dir, p.cfg, p.clock)
}

// TestRestartedLogRecognisesDuplicates appends through the hooks, restarts
// the log, rebuilds the state from its headers and checks that retries are
// still acknowledged with their original offsets and that sequences are
// still enforced.
func TestRestartedLogRecognisesDuplicates(t *testing.T) {
	for _, appendTime := range []bool{false, true} {
		cfg := log.DefaultConfig()
		cfg.SegmentBytes = 600 // several segments
		cfg.LogAppendTime = appendTime
		p := openIdempotentLog(t, t.TempDir(), cfg, newFakeClock(time.UnixMilli(testTs)))

		type sent struct {
			pid   int64
			seq   int32
			n     int
			res   log.AppendResult
			maxTs int64
		}
		var batches []sent
		seqs := map[int64]int32{}
		for i := range 24 {
			pid, n := int64(1+i%3), 1+i%4
			if i%5 == 4 {
				if _, err := p.send(NoProducerID, NoProducerEpoch, NoSequence, 1); err != nil {
					t.Fatal(err)
				}
			}
			res, err := p.send(pid, 0, seqs[pid], n)
			if err != nil {
				t.Fatalf("batch %d: %v", i, err)
			}
			batches = append(batches, sent{pid: pid, seq: seqs[pid], n: n, res: res, maxTs: res.Info.MaxTimestamp})
			seqs[pid] += int32(n)
		}
		last := batches[len(batches)-1]
		if appendTime && last.res.LogAppendTime != last.maxTs {
			t.Fatalf("LogAppendTime %d, stored max timestamp %d", last.res.LogAppendTime, last.maxTs)
		}

		checkRetries := func(stage string) {
			t.Helper()
			end := p.l.EndOffset()
			for i, b := range batches {
				_, err := p.send(b.pid, 0, b.seq, b.n)
				retained := i >= len(batches)-3*BatchesRetained
				var dup *DuplicateError
				switch {
				case retained && !errors.As(err, &dup):
					t.Fatalf("%s: retry of batch %d: %v, want a duplicate", stage, i, err)
				case retained && (dup.Batch.FirstOffset != b.res.BaseOffset || dup.Batch.LastOffset != b.res.LastOffset || dup.Batch.Timestamp != b.maxTs):
					t.Fatalf("%s: retry of batch %d answered %+v, want offsets [%d, %d] timestamp %d", stage, i, dup.Batch, b.res.BaseOffset, b.res.LastOffset, b.maxTs)
				case !retained && !errors.Is(err, kerr.OutOfOrderSequenceNumber):
					t.Fatalf("%s: retry of old batch %d: %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", stage, i, err)
				}
			}
			if _, err := p.send(1, 0, seqs[1]+1, 1); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
				t.Fatalf("%s: gap: %v", stage, err)
			}
			if _, err := p.send(2, -1, seqs[2], 1); !errors.Is(err, kerr.InvalidProducerEpoch) {
				t.Fatalf("%s: old epoch: %v", stage, err)
			}
			if p.l.EndOffset() != end {
				t.Fatalf("%s: refused batches were written: end %d, was %d", stage, p.l.EndOffset(), end)
			}
		}
		checkRetries("live")
		before := p.s.Entries()
		p = p.restart()
		if after := p.s.Entries(); !reflect.DeepEqual(before, after) {
			t.Fatalf("state after restart\n%+v\nwant\n%+v", after, before)
		}
		checkRetries("restarted")
		if _, err := p.send(1, 0, seqs[1], 2); err != nil {
			t.Fatalf("next batch after restart: %v", err)
		}
		if _, err := p.send(3, 1, 0, 1); err != nil {
			t.Fatalf("new epoch after restart: %v", err)
		}
		if err := p.l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
