package cleaner

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"weir/internal/log"
)

// BenchmarkRound cleans a log of keys updated in turn (about 100 bytes a
// record, 16 MiB segments) from scratch: one round over every closed
// segment. It reports the log's bytes cleaned per second.
func BenchmarkRound(b *testing.B) {
	const keys, updates, perBatch = 100_000, 10, 100
	value := make([]byte, 86)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		clock := newClock()
		cfg := testLogConfig()
		cfg.SegmentBytes = 16 << 20
		cfg.Preallocate = false
		l, err := log.Open(filepath.Join(b.TempDir(), "t-0"), cfg, log.Options{Now: clock.now})
		if err != nil {
			b.Fatal(err)
		}
		var bb log.BatchBuilder
		for n := 0; n < keys*updates; n += perBatch {
			bb.Reset(clock.now().UnixMilli())
			for j := n; j < n+perBatch; j++ {
				bb.Add(clock.now().UnixMilli(), fmt.Appendf(nil, "k%012d", j%keys), value, nil)
			}
			if _, err := l.Append(bb.Build(), log.AppendOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		clock.add(time.Hour)
		bb.Reset(clock.now().UnixMilli())
		bb.Add(clock.now().UnixMilli(), []byte("last"), value, nil)
		if _, err := l.Append(bb.Build(), log.AppendOptions{}); err != nil {
			b.Fatal(err)
		}
		if err := l.Flush(); err != nil {
			b.Fatal(err)
		}
		c, err := New(DefaultConfig(), Options{Now: clock.now})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Add(Partition{TopicPartition: TopicPartition{"t", 0}, Dir: b.TempDir(), Log: l}); err != nil {
			b.Fatal(err)
		}
		size := l.Size()
		b.StartTimer()
		start := time.Now()
		_, ok, err := c.CleanOnce(context.Background())
		took := time.Since(start)
		b.StopTimer()
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
		b.ReportMetric(float64(size)/1e6/took.Seconds(), "MB/s")
		l.Close()
	}
}

// TestRoundAllocatesNothingPerBatch: a round's allocations do not grow
// with the batches it reads and writes (GC work during a round takes CPU
// from the produce path): a log of 4,000 batches is cleaned with fewer
// allocations than a tenth of its batches.
func TestRoundAllocatesNothingPerBatch(t *testing.T) {
	const batches, perBatch, keys = 4000, 5, 1000
	cfg := testLogConfig()
	cfg.SegmentBytes = 256 << 10
	cfg.Preallocate = false
	e := newEnv(t, cfg, DefaultConfig(), nil)
	for i := range batches {
		recs := make([]rec, perBatch)
		for j := range recs {
			recs[j] = val(fmt.Sprintf("k%d", (i*perBatch+j)%keys), "v")
		}
		e.produce(recs...)
	}
	e.roll()
	e.produce(val("last", "v"))
	if err := e.l.Flush(); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	st, ok, err := e.c.CleanOnce(context.Background())
	runtime.ReadMemStats(&after)
	if err != nil || !ok || st.SegmentsSwaps == 0 {
		t.Fatalf("round: %+v %v %v", st, ok, err)
	}
	if n := after.Mallocs - before.Mallocs; n > batches/10 {
		t.Fatalf("a round over %d batches allocated %d times", batches, n)
	}
}
