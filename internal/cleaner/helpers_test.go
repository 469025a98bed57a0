package cleaner

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"weir/internal/log"
)

var t0 = time.UnixMilli(1_700_000_000_000)

type fakeClock struct{ ms atomic.Int64 }

func newClock() *fakeClock               { c := &fakeClock{}; c.ms.Store(t0.UnixMilli()); return c }
func (c *fakeClock) now() time.Time      { return time.UnixMilli(c.ms.Load()) }
func (c *fakeClock) add(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// rec is a record to produce; a nil value is a tombstone.
type rec struct {
	key   string
	value *string
}

func val(k, v string) rec { return rec{key: k, value: &v} }
func tomb(k string) rec   { return rec{key: k} }

// env is one compacted partition log with a cleaner over it, both on a
// fake clock. Segments roll when the clock passes segment.ms (1 h), so a
// test rolls with roll() before an append.
type env struct {
	t     testing.TB
	root  string
	clock *fakeClock
	l     *log.Log
	c     *Cleaner
	tp    TopicPartition
	part  Partition // as added
	bb    log.BatchBuilder
}

func testLogConfig() log.Config {
	cfg := log.DefaultConfig()
	cfg.SegmentTime = time.Hour
	cfg.FileDeleteDelay = 0
	cfg.Compact = true
	cfg.Cleaning = log.Cleaning{DeleteRetention: 10 * time.Hour, MaxCompactionLag: -1, MinCleanableRatio: 0}
	return cfg
}

func newEnv(t testing.TB, lcfg log.Config, ccfg Config, p func(*Partition)) *env {
	t.Helper()
	e := &env{t: t, root: t.TempDir(), clock: newClock(), tp: TopicPartition{"t", 0}}
	var err error
	e.l, err = log.Open(filepath.Join(e.root, "t-0"), lcfg, log.Options{Now: e.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.l.Close() })
	e.c, err = New(ccfg, Options{Now: e.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.c.Close() })
	part := Partition{TopicPartition: e.tp, Dir: e.root, Log: e.l}
	if p != nil {
		p(&part)
	}
	if err := e.c.Add(part); err != nil {
		t.Fatal(err)
	}
	e.part = part
	return e
}

// batch encodes records as one uncompressed batch at the clock's time.
func (e *env) batch(codec int, recs ...rec) []byte {
	ts := e.clock.now().UnixMilli()
	e.bb.Reset(ts)
	for _, r := range recs {
		var v []byte
		if r.value != nil {
			v = []byte(*r.value)
		}
		e.bb.Add(ts, []byte(r.key), v, nil)
	}
	b, err := e.bb.BuildCompressed(codec)
	if err != nil {
		e.t.Fatal(err)
	}
	return append([]byte(nil), b...)
}

func (e *env) produce(recs ...rec) log.AppendResult {
	e.t.Helper()
	res, err := e.l.Append(e.batch(log.CompressionNone, recs...), log.AppendOptions{LeaderEpoch: 1})
	if err != nil {
		e.t.Fatalf("Append: %v", err)
	}
	return res
}

// roll makes the next append start a new segment.
func (e *env) roll() { e.clock.add(time.Hour) }

// dirtyThreeSegments writes a=1, a=2 and b=1 in segments of their own
// and flushes: a worker's round leaves "1:a=2", "2:b=1".
func (e *env) dirtyThreeSegments() {
	e.t.Helper()
	e.produce(val("a", "1"))
	e.roll()
	e.produce(val("a", "2"))
	e.roll()
	e.produce(val("b", "1"))
	if err := e.l.Flush(); err != nil {
		e.t.Fatal(err)
	}
}

// clean flushes (so that closed segments are below the recovery point)
// and runs one round if one is due.
func (e *env) clean() (Stats, bool) {
	e.t.Helper()
	if err := e.l.Flush(); err != nil {
		e.t.Fatal(err)
	}
	st, ok, err := e.c.CleanOnce(context.Background())
	if err != nil {
		e.t.Fatalf("CleanOnce: %v", err)
	}
	return st, ok
}

// records reads the whole log: "offset:key=value", "key=nil" for a
// tombstone, "offset:(empty batch to last)" for a batch without records.
func (e *env) records() []string {
	e.t.Helper()
	return readRecords(e.t, e.l)
}

func readRecords(t testing.TB, l *log.Log) []string {
	t.Helper()
	var out []string
	prev := int64(-1)
	for off := l.StartOffset(); off < l.EndOffset(); {
		b, err := l.ReadBytes(off, 1<<20, l.EndOffset())
		if err != nil {
			t.Fatalf("ReadBytes(%d): %v", off, err)
		}
		for len(b) > 0 {
			h, err := log.ParseBatchHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			if h.BaseOffset <= prev {
				t.Fatalf("batch at %d after offset %d", h.BaseOffset, prev)
			}
			if h.NumRecords == 0 {
				out = append(out, fmt.Sprintf("%d:(empty to %d)", h.BaseOffset, h.LastOffset()))
			}
			err = log.EachRecord(b[:h.Length], func(r *log.Record) bool {
				if r.Offset <= prev || r.Offset > h.LastOffset() {
					t.Fatalf("record offset %d after %d in batch [%d, %d]", r.Offset, prev, h.BaseOffset, h.LastOffset())
				}
				prev = r.Offset
				v := string(r.Value)
				if r.Value == nil {
					v = "nil"
				}
				switch {
				case h.IsControl() && controlKind(r.Key) == controlAbort:
					out = append(out, fmt.Sprintf("%d:abort", r.Offset))
				case h.IsControl():
					out = append(out, fmt.Sprintf("%d:commit", r.Offset))
				default:
					out = append(out, fmt.Sprintf("%d:%s=%s", r.Offset, r.Key, v))
				}
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
			prev = h.LastOffset()
			off = h.NextOffset()
			b = b[h.Length:]
		}
	}
	return out
}

// withProducer stamps a producer id, epoch and base sequence (and the
// transactional bit) into a batch, as an idempotent producer sends it.
func withProducer(b []byte, pid int64, epoch int16, seq int32, txn bool) []byte {
	log.StampProducer(b, pid, epoch, seq, txn)
	return b
}

func fixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
}

// marker is a transaction marker batch of producer pid at offset base.
func marker(base, pid int64, epoch int16, kind int, ts int64) []byte {
	var bb log.BatchBuilder
	bb.Reset(ts)
	key := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, 0), uint16(kind))
	value := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(nil, 0), 0)
	bb.Add(ts, key, value, nil)
	b := append([]byte(nil), bb.Build()...)
	binary.BigEndian.PutUint64(b, uint64(base))
	binary.BigEndian.PutUint16(b[21:], 0x30) // transactional, control
	return withProducer(b, pid, epoch, -1, true)
}

// at sets a batch's base offset (for AppendReplicated).
func at(b []byte, base int64) []byte {
	binary.BigEndian.PutUint64(b, uint64(base))
	return b
}
