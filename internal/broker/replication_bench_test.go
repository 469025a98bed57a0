package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// replicatedPartition starts an in-process three-node cluster with one
// partition "p" of rf replicas led by node 1 (acks=all waits for every
// replica in the ISR) and a producer to it with acks=all and opts.
func replicatedPartition(b *testing.B, rf int, opts ...kgo.Opt) (*kgo.Client, context.Context) {
	tc := startCluster(b, 3)
	ctx := testCtx(b)
	opts = append([]kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("p"),
		kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)
	c := newClient(b, tc.brokers[0].addr, opts...)
	replicas := []int32{1}
	if rf == 3 {
		replicas = []int32{1, 2, 3}
	}
	tc.createAssigned(b, ctx, c, "p", replicas)
	return c, ctx
}

// BenchmarkReplicatedProduce is acks=all produce to one partition of an
// in-process three-node cluster, RF 1 against RF 3, with franz-go's
// defaults: the replication round trip (leader append, follower fetch
// woken, follower append, its next fetch moving the high watermark) in
// one process, for profiles of that path (-cpuprofile).
// bench/replication measures it across processes.
func BenchmarkReplicatedProduce(b *testing.B) {
	for _, rf := range []int{1, 3} {
		b.Run(fmt.Sprintf("rf=%d", rf), func(b *testing.B) {
			c, ctx := replicatedPartition(b, rf)
			value := make([]byte, 512)
			produce := func(n int) {
				for range n {
					c.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
						if err != nil {
							b.Error(err)
						}
					})
				}
				if err := c.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
			produce(1000)
			b.SetBytes(512)
			b.ResetTimer()
			start := time.Now()
			produce(b.N)
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
		})
	}
}

// BenchmarkReplicationRoundTrip is one acks=all record at a time to one
// partition of an in-process three-node cluster, RF 1 against RF 3: an
// operation is one produce's latency, so RF 3 minus RF 1 is what the
// replication round trip adds (the leader's append waking the parked
// follower fetches, their answers, the followers' appends and next
// fetches, the high watermark move waking the produce).
func BenchmarkReplicationRoundTrip(b *testing.B) {
	for _, rf := range []int{1, 3} {
		b.Run(fmt.Sprintf("rf=%d", rf), func(b *testing.B) {
			c, ctx := replicatedPartition(b, rf, kgo.ProducerLinger(0))
			value := make([]byte, 512)
			for i := -100; i < b.N; i++ {
				if i == 0 {
					b.ResetTimer()
				}
				if err := c.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
