package metadata

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// benchShape is a cluster of 3 brokers whose partitions have RF 3.
type benchShape struct {
	name                string
	topics, partsPerTop int
}

var benchShapes = []benchShape{
	{"100k", 1000, 100},
	{"1M", 10000, 100},
	{"1M-one-topic", 1, 1_000_000},
}

var (
	benchImagesMu sync.Mutex
	benchImages   = map[string]*Image{}
)

// buildImage builds a shape's image through a Builder, one record at a
// time, without keeping the records.
func buildImage(tb testing.TB, s benchShape) *Image {
	b := NewBuilder(Empty())
	for _, r := range registerRecs(3) {
		if err := b.Apply(r); err != nil {
			tb.Fatal(err)
		}
	}
	for ti := range s.topics {
		id := topicID(ti)
		if err := b.Apply(&TopicRecord{Name: fmt.Sprintf("topic-%05d", ti), ID: id}); err != nil {
			tb.Fatal(err)
		}
		for p := range s.partsPerTop {
			replicas := []int32{int32(p % 3), int32((p + 1) % 3), int32((p + 2) % 3)}
			if err := b.Apply(&PartitionRecord{TopicID: id, Partition: int32(p), Replicas: replicas, ISR: replicas, Leader: replicas[0]}); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return b.Image()
}

func benchImage(tb testing.TB, s benchShape) *Image {
	benchImagesMu.Lock()
	defer benchImagesMu.Unlock()
	if img, ok := benchImages[s.name]; ok {
		return img
	}
	img := buildImage(tb, s)
	benchImages[s.name] = img
	return img
}

// leaderMoves picks n distinct partitions and moves each one's leader to
// the next ISR member, as a controlled shutdown or a rebalance would.
func leaderMoves(img *Image, s benchShape, n int, seed uint64) []Record {
	rng := rand.New(rand.NewPCG(seed, 7))
	seen := make(map[partKey]bool, n)
	recs := make([]Record, 0, n)
	for len(recs) < n {
		id := topicID(rng.IntN(s.topics))
		p := int32(rng.IntN(s.partsPerTop))
		if seen[partKey{id, p}] {
			continue
		}
		seen[partKey{id, p}] = true
		st, _ := img.Partition(id, p)
		isr := st.ISR()
		next := isr[(indexOf(isr, st.Leader())+1)%len(isr)]
		recs = append(recs, &PartitionChangeRecord{TopicID: id, Partition: p, Leader: next, LeaderRecovery: NoRecoveryChange,
			LeaderEpoch: st.LeaderEpoch() + 1, PartitionEpoch: st.PartitionEpoch() + 1})
	}
	return recs
}

func indexOf(ids []int32, id int32) int {
	for i, x := range ids {
		if x == id {
			return i
		}
	}
	return -1
}

// BenchmarkApplyLeaderMoves applies one batch that moves 10,000 leaders.
// Only touched topics and chunks are copied, so the cost follows the
// batch, not the image.
func BenchmarkApplyLeaderMoves(b *testing.B) {
	for _, s := range benchShapes {
		b.Run("partitions="+s.name, func(b *testing.B) {
			img := benchImage(b, s)
			recs := leaderMoves(img, s, 10_000, 1)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, _, err := img.Apply(img.Offset()+1, recs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkImageMemory reports the heap an image holds per partition.
func BenchmarkImageMemory(b *testing.B) {
	for _, s := range benchShapes {
		b.Run("partitions="+s.name, func(b *testing.B) {
			b.ReportAllocs()
			var perPartition float64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				img := buildImage(b, s)
				runtime.GC()
				runtime.ReadMemStats(&after)
				perPartition = float64(after.HeapAlloc-before.HeapAlloc) / float64(img.NumPartitions())
				runtime.KeepAlive(img)
			}
			b.ReportMetric(perPartition, "B/partition")
		})
	}
}

// BenchmarkSnapshot writes and loads a whole image: what a broker that
// joins, or restarts far behind, pays to catch up.
func BenchmarkSnapshot(b *testing.B) {
	for _, s := range benchShapes[:2] {
		img := benchImage(b, s)
		var buf bytes.Buffer
		if err := WriteSnapshot(&buf, img); err != nil {
			b.Fatal(err)
		}
		size := buf.Len()
		b.Run("write/partitions="+s.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				if err := WriteSnapshot(&buf, img); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(size)/float64(img.NumPartitions()), "snapshot-B/partition")
		})
		b.Run("read/partitions="+s.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ReadSnapshot(bytes.NewReader(buf.Bytes())); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
