package log

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// scaleCount reads a log count from the environment, for runs at sizes a
// default benchmark run should not pay for.
func scaleCount(b *testing.B, env string, def int) int {
	if v := os.Getenv(env); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: want a positive count", env, v)
		}
		return n
	}
	return def
}

// residentCost is what a set of open logs holds: heap and goroutine stacks
// (after a collection) and goroutines.
type residentCost struct {
	heap, stack uint64
	goroutines  int
}

func measureResident() residentCost {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return residentCost{heap: ms.HeapAlloc, stack: ms.StackInuse, goroutines: runtime.NumGoroutine()}
}

// report gives the cost per log of what was opened between before and
// after.
func (after residentCost) report(b *testing.B, before residentCost, n int, opened time.Duration) {
	per := func(a, b uint64) float64 { return (float64(a) - float64(b)) / float64(n) }
	b.ReportMetric(per(after.heap, before.heap), "heap-B/log")
	b.ReportMetric(per(after.stack, before.stack), "stack-B/log")
	b.ReportMetric(float64(after.goroutines-before.goroutines)/float64(n), "goroutines/log")
	b.ReportMetric(float64(opened.Nanoseconds())/float64(n), "open-ns/log")
	b.ReportMetric(opened.Seconds(), "open-s/all")
}

// BenchmarkManyLogs measures what one broker pays per partition log:
// heap, goroutine stacks and goroutines per log, and the time to open them
// all. Each iteration opens a fresh set, so run it with -benchtime=1x.
//
//   - lazy-unwritten: WEIR_LOG_SCALE_N (default 100,000) lazy logs with a
//     shared Syncer, never written: nothing on disk.
//   - lazy-written: WEIR_LOG_SCALE_WRITTEN (default 10,000) lazy logs with
//     a shared Syncer, each written once (one directory, one open segment
//     file each, so the count is bounded by the file descriptor limit). The
//     time is open plus first append.
//   - eager-private: the same number opened as before lazy open and the
//     shared Syncer (directory, segment and a goroutine per log).
//   - lazy-1pct-written: WEIR_LOG_SCALE_N lazy logs with a shared Syncer,
//     every hundredth written once: a broker with many idle partitions.
func BenchmarkManyLogs(b *testing.B) {
	lazyN := scaleCount(b, "WEIR_LOG_SCALE_N", 100_000)
	writtenN := scaleCount(b, "WEIR_LOG_SCALE_WRITTEN", 10_000)
	cases := []struct {
		name       string
		n          int
		opts       Options
		writeEvery int // 0: no writes
	}{
		{"lazy-unwritten", lazyN, Options{Lazy: true}, 0},
		{"lazy-written", writtenN, Options{Lazy: true}, 1},
		{"eager-private", writtenN, Options{}, 0},
		{"lazy-1pct-written", lazyN, Options{Lazy: true}, 100},
	}
	for _, c := range cases {
		b.Run(c.name+"/n="+strconv.Itoa(c.n), func(b *testing.B) {
			batch := simpleBatch(b, 1, time.Now().UnixMilli(), 100)
			for range b.N {
				b.StopTimer()
				root := b.TempDir()
				opts := c.opts
				if c.name != "eager-private" {
					opts.Syncer = NewSyncer(0)
				}
				logs := make([]*Log, c.n)
				dirs := make([]string, c.n)
				for i := range dirs {
					dirs[i] = filepath.Join(root, "t-"+strconv.Itoa(i))
				}
				before := measureResident()
				b.StartTimer()
				start := time.Now()
				for i := range logs {
					l, err := Open(dirs[i], DefaultConfig(), opts)
					if err != nil {
						b.Fatal(err)
					}
					if c.writeEvery > 0 && i%c.writeEvery == 0 {
						if _, err := l.Append(append([]byte(nil), batch...), AppendOptions{}); err != nil {
							b.Fatal(err)
						}
					}
					logs[i] = l
				}
				opened := time.Since(start)
				b.StopTimer()
				measureResident().report(b, before, c.n, opened)
				for _, l := range logs {
					if err := l.Close(); err != nil {
						b.Fatal(err)
					}
				}
				if opts.Syncer != nil {
					opts.Syncer.Close()
				}
				runtime.KeepAlive(dirs)
			}
		})
	}
}

// BenchmarkSyncBeforeAckManyLogs measures acknowledged appends (append,
// then WaitDurable) from 16 concurrent writers spread over 4 or 64 logs,
// each log with a private Syncer or all sharing one of w workers.
// fsyncs/op below 1 is group commit at work.
func BenchmarkSyncBeforeAckManyLogs(b *testing.B) {
	cfg := DefaultConfig()
	cfg.SyncBeforeAck = true
	for _, nlogs := range []int{4, 64} {
		for _, workers := range []int{0, 2, 4, 16} {
			name := "logs=" + strconv.Itoa(nlogs) + "/private"
			if workers > 0 {
				name = "logs=" + strconv.Itoa(nlogs) + "/shared-w=" + strconv.Itoa(workers)
			}
			b.Run(name, func(b *testing.B) {
				var opts Options
				if workers > 0 {
					opts.Syncer = NewSyncer(workers)
					b.Cleanup(func() { opts.Syncer.Close() })
				}
				logs := openLogs(b, nlogs, cfg, opts)
				batch := benchBatch(b, 1<<10)
				var next atomic.Int64
				b.SetBytes(int64(len(batch)))
				b.ReportAllocs()
				b.SetParallelism(8)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					l := logs[next.Add(1)%int64(nlogs)]
					mine := append([]byte(nil), batch...)
					for pb.Next() {
						res, err := l.Append(mine, AppendOptions{})
						if err == nil {
							err = l.WaitDurable(context.Background(), res.LastOffset+1)
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.StopTimer()
				var fsyncs int64
				for _, l := range logs {
					fsyncs += l.Fsyncs()
				}
				b.ReportMetric(float64(fsyncs)/float64(b.N), "fsyncs/op")
			})
		}
	}
}

// BenchmarkReopenManyLogs measures a broker's restart: WEIR_LOG_SCALE_WRITTEN
// (default 2,000) logs, each written once, are reopened one after another
// with a shared Syncer, as a restarted broker reopens the logs of the
// partitions it hosts.
//   - clean: the logs were closed (a controlled shutdown): their
//     checkpoints say everything is durable.
//   - killed: the logs were never closed nor checkpointed after their
//     write (the process was killed): recovery reads and fsyncs it.
func BenchmarkReopenManyLogs(b *testing.B) {
	n := scaleCount(b, "WEIR_LOG_SCALE_WRITTEN", 2_000)
	for _, killed := range []bool{false, true} {
		name := "clean"
		if killed {
			name = "killed"
		}
		b.Run(name+"/n="+strconv.Itoa(n), func(b *testing.B) {
			batch := simpleBatch(b, 1, time.Now().UnixMilli(), 100)
			for range b.N {
				b.StopTimer()
				root := b.TempDir()
				dirs := make([]string, n)
				syncer := NewSyncer(0)
				var written []*Log
				for i := range dirs {
					dirs[i] = filepath.Join(root, "t-"+strconv.Itoa(i))
					l, err := Open(dirs[i], DefaultConfig(), Options{Lazy: true, Syncer: syncer})
					if err != nil {
						b.Fatal(err)
					}
					if _, err := l.Append(append([]byte(nil), batch...), AppendOptions{}); err != nil {
						b.Fatal(err)
					}
					if killed {
						written = append(written, l)
					} else if err := l.Close(); err != nil {
						b.Fatal(err)
					}
				}
				// The killed logs do nothing more: their Syncer stops, and
				// they are never closed.
				syncer.Close()
				syncer2 := NewSyncer(0)
				b.StartTimer()
				start := time.Now()
				logs := make([]*Log, n)
				for i := range logs {
					l, err := Open(dirs[i], DefaultConfig(), Options{Lazy: true, Syncer: syncer2})
					if err != nil {
						b.Fatal(err)
					}
					logs[i] = l
				}
				opened := time.Since(start)
				b.StopTimer()
				b.ReportMetric(float64(opened.Nanoseconds())/float64(n), "open-ns/log")
				for _, l := range logs {
					if err := l.Close(); err != nil {
						b.Fatal(err)
					}
				}
				syncer2.Close()
				runtime.KeepAlive(written)
			}
		})
	}
}
