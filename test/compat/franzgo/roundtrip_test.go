package franzgo

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	ct "weir/test/compat/internal/compattest"
)

// codecSeen records the compression codec of every batch a consumer decodes.
type codecSeen struct {
	mu     sync.Mutex
	counts map[uint8]int
}

var _ kgo.HookFetchBatchRead = (*codecSeen)(nil)

func (c *codecSeen) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[m.CompressionType]++
}

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

			seen := &codecSeen{counts: map[uint8]int{}}
			recs := ct.ReadAll(t, topic, n, time.Minute, kgo.WithHooks(seen))
			if err := ct.VerifyExactlyOnce(recs, 0, n, pos); err != nil {
				t.Fatal(err)
			}
			seen.mu.Lock()
			defer seen.mu.Unlock()
			if len(seen.counts) != 1 || seen.counts[tc.id] == 0 {
				t.Errorf("fetched batches by codec %v, want only codec %d", seen.counts, tc.id)
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
