package partitioner

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func BenchmarkMurmur2(b *testing.B) {
	for _, n := range []int{8, 36, 1024} {
		key := make([]byte, n)
		for i := range key {
			key[i] = byte(i * 7)
		}
		b.Run(fmt.Sprintf("%dB", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				PartitionForKey(key, 100)
			}
		})
	}
}

// BenchmarkPeekUpdate is the partitioner's own per-record cost on the
// unkeyed path: one Peek, one Update, a switch every ~160 records.
func BenchmarkPeekUpdate(b *testing.B) {
	top := NewTopic("t", leaders(12))
	u := NewUniformSticky(DefaultConfig(), DefaultRand)
	b.ReportAllocs()
	for b.Loop() {
		s := u.Peek(top)
		u.Update(s, 100, true, top)
	}
}

// BenchmarkAppendSticky runs the whole accumulator protocol (locks included)
// against the fake accumulator.
func BenchmarkAppendSticky(b *testing.B) {
	top := NewTopic("t", leaders(12))
	u := NewUniformSticky(DefaultConfig(), DefaultRand)
	a := newFakeAccum(top, DefaultBatchSize)
	b.ReportAllocs()
	for b.Loop() {
		appendSticky(u, top, a.queueOf, 100)
	}
}

// BenchmarkAppendStickyParallel is many goroutines producing to one topic,
// the contended case the CAS'd Sticky exists for.
func BenchmarkAppendStickyParallel(b *testing.B) {
	top := NewTopic("t", leaders(12))
	u := NewUniformSticky(DefaultConfig(), DefaultRand)
	a := newFakeAccum(top, DefaultBatchSize)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			appendSticky(u, top, a.queueOf, 100)
		}
	})
}

func BenchmarkAdaptiveNext(b *testing.B) {
	top := NewTopic("t", leaders(64))
	u := NewUniformSticky(DefaultConfig(), DefaultRand)
	queues := make([]PartitionQueue, 64)
	for i := range queues {
		queues[i] = PartitionQueue{Partition: int32(i), Batches: i % 5}
	}
	u.UpdateLoad(top, queues, nil)
	b.ReportAllocs()
	for b.Loop() {
		u.next(top)
	}
}

// BenchmarkUpdateLoad is the sender's per-pass cost for a 100-partition topic
// (it allocates the new table when the queues differ).
func BenchmarkUpdateLoad(b *testing.B) {
	top := NewTopic("t", leaders(100))
	nodes := NewNodeLatency()
	nodes.Observe(1, 0, true)
	u := NewUniformSticky(Config{BatchSize: DefaultBatchSize, Adaptive: true, AvailabilityTimeoutMs: 100}, DefaultRand)
	queues := make([]PartitionQueue, 100)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range queues {
		queues[i] = PartitionQueue{Partition: int32(i), Batches: r.IntN(4), Bytes: r.Int64N(60000)}
	}
	b.ReportAllocs()
	for b.Loop() {
		u.UpdateLoad(top, queues, nodes)
	}
}

func BenchmarkCustomPartitioners(b *testing.B) {
	top := NewTopic("t", leaders(12))
	for name, p := range map[string]Partitioner{
		"StickyPerBatch": StickyPerBatch(nil, false),
		"RoundRobin":     RoundRobin(),
	} {
		tp := p.ForTopic("t")
		rec := Record{Value: []byte("v")}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					tp.Partition(rec, top)
				}
			})
		})
	}
}
