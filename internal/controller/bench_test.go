package controller

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// clusterShape is a cluster for the benchmarks: brokers 1..brokers,
// topics of partsPerTopic partitions with replication factor rf, replicas
// rotating over the brokers so that each leads its share.
type clusterShape struct {
	name                        string
	brokers, topics, partsPerTp int
	rf                          int
}

var (
	// The seed post's controlled-shutdown cluster: 5 brokers, 25,000
	// topics of one partition with 2 replicas. Each broker holds 10,000
	// replicas and leads 5,000.
	shapeSeed = clusterShape{"seed/25k-topics-rf2", 5, 25_000, 1, 2}
	// The same with 50,000 topics: each broker leads 10,000 partitions
	// and follows 10,000.
	shapeLead10k = clusterShape{"leads=10k/50k-topics-rf2", 5, 50_000, 1, 2}
	// 100,000 partitions with 3 replicas on 3 brokers: each leads 33,333
	// and is in every ISR, so every partition changes.
	shapeLead33k = clusterShape{"leads=33k/100k-partitions-rf3", 3, 2_000, 50, 3}
	// The scale run: 1,000,000 partitions on 3 brokers, with 1 replica
	// (the benchmark) and with 3 (every partition changes).
	shape1MRF1 = clusterShape{"partitions=1M/rf=1", 3, 10_000, 100, 1}
	shape1MRF3 = clusterShape{"partitions=1M/rf=3", 3, 10_000, 100, 3}
)

var (
	clusterMu     sync.Mutex
	clusterImages = map[string]*metadata.Image{}
)

func clusterImage(tb testing.TB, s clusterShape) *metadata.Image {
	clusterMu.Lock()
	defer clusterMu.Unlock()
	if img, ok := clusterImages[s.name]; ok {
		return img
	}
	b := metadata.NewBuilder(metadata.Empty())
	apply := func(r metadata.Record) {
		if err := b.Apply(r); err != nil {
			tb.Fatal(err)
		}
	}
	for i := 1; i <= s.brokers; i++ {
		apply(&metadata.RegisterBrokerRecord{ID: int32(i), Epoch: int64(i), Incarnation: [16]byte{byte(i)},
			Endpoints: []metadata.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: uint16(9092 + i)}}})
	}
	n := 0
	for ti := range s.topics {
		var id metadata.TopicID
		binary.BigEndian.PutUint64(id[:8], uint64(ti)*0x9e3779b97f4a7c15+1)
		binary.BigEndian.PutUint64(id[8:], uint64(ti)+1)
		apply(&metadata.TopicRecord{Name: fmt.Sprintf("t%06d", ti), ID: id})
		for p := range s.partsPerTp {
			replicas := make([]int32, s.rf)
			for r := range replicas {
				replicas[r] = int32((n+r)%s.brokers) + 1
			}
			n++
			apply(&metadata.PartitionRecord{TopicID: id, Partition: int32(p), Replicas: replicas, ISR: replicas, Leader: replicas[0]})
		}
	}
	img := b.Image()
	clusterImages[s.name] = img
	return img
}

func benchController(img *metadata.Image) *Controller {
	now := time.Unix(1_700_000_000, 0)
	return New(Config{Now: func() time.Time { return now }, Rand: rand.New(rand.NewPCG(1, 2))}, img)
}

// commitBatch is what every node does with a committed batch: decode the
// log entry and apply it to its image.
func commitBatch(b *testing.B, img *metadata.Image, entry []byte) *metadata.Image {
	recs, err := metadata.DecodeBatch(entry)
	if err != nil {
		b.Fatal(err)
	}
	next, _, err := img.Apply(img.Offset()+1, recs)
	if err != nil {
		b.Fatal(err)
	}
	return next
}

// benchDecision measures a decision on img and its commit: decide returns
// the records, which are encoded as the log entry (decide-ms), then
// decoded and applied as every node does (apply-ms). ns/op is the whole.
func benchDecision(b *testing.B, img *metadata.Image, decide func(*Controller) []metadata.Record) {
	b.ReportAllocs()
	var decideT, applyT time.Duration
	var records, bytes int
	for b.Loop() {
		c := benchController(img)
		start := time.Now()
		recs := decide(c)
		entry := metadata.EncodeBatch(recs)
		decideT += time.Since(start)
		start = time.Now()
		commitBatch(b, img, entry)
		applyT += time.Since(start)
		records, bytes = len(recs), len(entry)
	}
	n := float64(b.N)
	b.ReportMetric(float64(decideT.Milliseconds())/n, "decide-ms")
	b.ReportMetric(float64(applyT.Milliseconds())/n, "apply-ms")
	b.ReportMetric(float64(records), "records")
	b.ReportMetric(float64(bytes), "batch-bytes")
}

// BenchmarkControlledShutdown decides the controlled shutdown of broker 1
// (one heartbeat with WantShutdown) and commits it.
func BenchmarkControlledShutdown(b *testing.B) {
	for _, s := range []clusterShape{shapeSeed, shapeLead10k, shapeLead33k} {
		b.Run(s.name, func(b *testing.B) {
			img := clusterImage(b, s)
			benchDecision(b, img, func(c *Controller) []metadata.Record {
				req := kmsg.NewPtrBrokerHeartbeatRequest()
				req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset, req.WantShutdown = 1, 1, img.Offset(), true
				_, recs := c.Heartbeat(req)
				return recs
			})
		})
	}
}

// BenchmarkFence fences broker 1 of a million-partition cluster at once
// (FenceBroker), as when its process is known dead, and commits it.
func BenchmarkFence(b *testing.B) {
	for _, s := range []clusterShape{shape1MRF1, shape1MRF3} {
		b.Run(s.name, func(b *testing.B) {
			benchDecision(b, clusterImage(b, s), func(c *Controller) []metadata.Record { return c.FenceBroker(1, -1) })
		})
	}
}

// BenchmarkCreateTopics creates 1,000 topics of 100 partitions (100,000
// partitions, RF 3) in one request on a 3-broker cluster, and applies the
// batch.
func BenchmarkCreateTopics(b *testing.B) {
	base := clusterImage(b, clusterShape{"empty-3", 3, 0, 0, 3})
	req := kmsg.NewPtrCreateTopicsRequest()
	for i := range 1000 {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = fmt.Sprintf("topic-%04d", i), 100, 3
		req.Topics = append(req.Topics, rt)
	}
	b.ReportAllocs()
	for b.Loop() {
		c := benchController(base)
		_, recs := c.CreateTopics(req)
		commitBatch(b, base, metadata.EncodeBatch(recs))
	}
}

// BenchmarkAlterPartition is one ISR change on a 100,000-partition
// cluster: the steady-state cost of a leader's request.
func BenchmarkAlterPartition(b *testing.B) {
	img := clusterImage(b, shapeLead33k)
	tp, _ := img.TopicByName("t000007")
	st, _ := tp.Partition(3)
	c := benchController(img)
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = 3
	req.BrokerID = st.Leader()
	b1, _ := img.Broker(st.Leader())
	req.BrokerEpoch = b1.Epoch
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.TopicID = tp.ID()
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition = 3
	rp.LeaderEpoch = st.LeaderEpoch()
	rt.Partitions = []kmsg.AlterPartitionRequestTopicPartition{rp}
	req.Topics = []kmsg.AlterPartitionRequestTopic{rt}
	full := st.ISR()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		cur, _ := c.Image().Partition(tp.ID(), 3)
		isr := full
		if i%2 == 0 {
			isr = full[:2] // shrink, then expand back
		}
		i++
		req.Topics[0].Partitions[0].PartitionEpoch = cur.PartitionEpoch()
		req.Topics[0].Partitions[0].NewEpochISR = req.Topics[0].Partitions[0].NewEpochISR[:0]
		for _, id := range isr {
			br, _ := img.Broker(id)
			req.Topics[0].Partitions[0].NewEpochISR = append(req.Topics[0].Partitions[0].NewEpochISR,
				kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: id, BrokerEpoch: br.Epoch})
		}
		resp, recs := c.AlterPartition(req)
		if resp.Topics[0].Partitions[0].ErrorCode != 0 || len(recs) != 1 {
			b.Fatalf("error %d, %d records", resp.Topics[0].Partitions[0].ErrorCode, len(recs))
		}
		next, d, err := c.committed.Apply(c.committed.Offset()+1, recs)
		if err != nil {
			b.Fatal(err)
		}
		c.Committed(next, d)
	}
}
