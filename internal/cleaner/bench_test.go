package cleaner

import (
	"context"
	"fmt"
	"path/filepath"
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
