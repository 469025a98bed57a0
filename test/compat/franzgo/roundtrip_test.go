package franzgo

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	ct "weir/test/compat/internal/compattest"
)

// codecSeen records, per compression codec, the batches a consumer decodes,
// the records they hold and the largest uncompressed batch.
type codecSeen struct {
	mu      sync.Mutex
	counts  map[uint8]int
	records map[uint8]int
	largest map[uint8]int
}

func newCodecSeen() *codecSeen {
	return &codecSeen{counts: map[uint8]int{}, records: map[uint8]int{}, largest: map[uint8]int{}}
}

var _ kgo.HookFetchBatchRead = (*codecSeen)(nil)

func (c *codecSeen) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[m.CompressionType]++
	c.records[m.CompressionType] += m.NumRecords
	c.largest[m.CompressionType] = max(c.largest[m.CompressionType], m.UncompressedBytes)
}

// check reports whether the fetched batches carry the codec the producer
// asked for. franz-go sends a batch uncompressed when compressing it would
// not make it smaller, which happens to a batch of one or two short records
// that the linger flushed alone; such batches are allowed, but only small
// ones holding a sliver of the records. A broker that stored or served the
// records recompressed or decompressed fails.
func (c *codecSeen) check(id uint8, n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for codec, batches := range c.counts {
		switch {
		case codec == id:
		case codec == 0 && c.largest[0] <= smallBatch && c.records[0]*100 <= n:
		default:
			return fmt.Errorf("fetched %d batches (%d records, largest %d bytes) with codec %d, want codec %d",
				batches, c.records[codec], c.largest[codec], codec, id)
		}
	}
	if c.records[id]*100 < 99*n {
		return fmt.Errorf("codec %d batches hold %d of %d records, want at least 99%%", id, c.records[id], n)
	}
	return nil
}

// smallBatch bounds an uncompressed batch that compression could not shrink:
// a few short records.
const smallBatch = 1024

func TestProduceConsumeRoundTrip(t *testing.T) {
	const n = 20000
	for _, tc := range []struct {
		name  string
		codec kgo.CompressionCodec
		id    uint8 // attribute bits of the codec in a record batch
	}{
		{"none", kgo.NoCompression(), 0},
		{"gzip", kgo.GzipCompression(), 1},
		{"snappy", kgo.SnappyCompression(), 2},
		{"lz4", kgo.Lz4Compression(), 3},
		{"zstd", kgo.ZstdCompression(), 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			adm := ct.Admin(t)
			topic := ct.Topic(t, adm, "rt-"+tc.name, 3, nil)
			prod := ct.Client(t,
				kgo.ProducerBatchCompression(tc.codec),
				kgo.RequiredAcks(kgo.AllISRAcks()),
				kgo.ProducerLinger(5*time.Millisecond),
			)
			pos := ct.Produce(t, prod, topic, 0, n)

			seen := newCodecSeen()
			recs := ct.ReadAll(t, topic, n, time.Minute, kgo.WithHooks(seen))
			if err := ct.VerifyExactlyOnce(recs, 0, n, pos); err != nil {
				t.Fatal(err)
			}
			if err := seen.check(tc.id, n); err != nil {
				t.Error(err)
			}

			// Offsets are dense from 0 per partition: the idempotent producer
			// wrote each record exactly once.
			ends, err := adm.ListEndOffsets(context.Background(), topic)
			if err != nil {
				t.Fatalf("list end offsets: %v", err)
			}
			if len(ends[topic]) != 3 {
				t.Fatalf("end offsets listed for %d partitions, want 3", len(ends[topic]))
			}
			perPartition := map[int32]int64{}
			for _, p := range pos {
				perPartition[p.Partition]++
			}
			ends.Each(func(o kadm.ListedOffset) {
				if o.Err != nil || o.Offset != perPartition[o.Partition] {
					t.Errorf("partition %d end offset %d (err %v), want %d", o.Partition, o.Offset, o.Err, perPartition[o.Partition])
				}
			})
		})
	}
}

func TestCodecSeenCheck(t *testing.T) {
	const n = 1000
	for _, tc := range []struct {
		name    string
		id      uint8
		batches []kgo.FetchBatchMetrics
		ok      bool
	}{
		{"all compressed", 1, []kgo.FetchBatchMetrics{{CompressionType: 1, NumRecords: n, UncompressedBytes: 50000}}, true},
		{"a tiny batch sent plain", 1, []kgo.FetchBatchMetrics{
			{CompressionType: 1, NumRecords: n - 1, UncompressedBytes: 50000},
			{CompressionType: 0, NumRecords: 1, UncompressedBytes: 120},
		}, true},
		{"a large plain batch", 1, []kgo.FetchBatchMetrics{
			{CompressionType: 1, NumRecords: n - 100, UncompressedBytes: 50000},
			{CompressionType: 0, NumRecords: 100, UncompressedBytes: 9000},
		}, false},
		{"everything plain", 1, []kgo.FetchBatchMetrics{{CompressionType: 0, NumRecords: n, UncompressedBytes: 500}}, false},
		{"recompressed", 1, []kgo.FetchBatchMetrics{{CompressionType: 4, NumRecords: n, UncompressedBytes: 50000}}, false},
		{"records missing", 1, []kgo.FetchBatchMetrics{{CompressionType: 1, NumRecords: n / 2, UncompressedBytes: 50000}}, false},
		{"uncompressed topic", 0, []kgo.FetchBatchMetrics{{CompressionType: 0, NumRecords: n, UncompressedBytes: 50000}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := newCodecSeen()
			for _, m := range tc.batches {
				seen.OnFetchBatchRead(kgo.BrokerMetadata{}, "t", 0, m)
			}
			if err := seen.check(tc.id, n); (err == nil) != tc.ok {
				t.Errorf("check = %v, want ok %v", err, tc.ok)
			}
		})
	}
}
