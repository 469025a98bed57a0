package client

import (
	"context"
	"testing"
	"time"
)

// BenchmarkSendSticky measures the append path of an unkeyed record (the
// built-in partitioner, batch growth accounting, queue locks) with the sender
// run every 64 records against simulated brokers.
func BenchmarkSendSticky(b *testing.B) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	sim := newSimCluster(clock, "t", []*simBroker{{id: 0}, {id: 1}, {id: 2}})
	p, err := NewProducer(map[string]string{"bootstrap.servers": "sim:9092", "linger.ms": "0"}, sim.options(1)...)
	if err != nil {
		b.Fatal(err)
	}
	defer p.cl.close()
	ctx := context.Background()
	value := make([]byte, 100)
	b.ReportAllocs()
	b.SetBytes(int64(len(value)))
	for i := 0; b.Loop(); i++ {
		p.Send(ctx, &Record{Topic: "t", Value: value}, nil)
		if i%64 == 63 {
			p.runOnce(clock.Now())
			clock.advance(time.Millisecond)
			sim.deliver(clock.Now())
		}
	}
}

// BenchmarkIntegrationProduce sends 512-byte unkeyed records to the test
// broker (weir, or WEIR_TEST_BOOTSTRAP) with default settings and waits for
// every acknowledgement; compare MB/s across brokers and changes.
func BenchmarkIntegrationProduce(b *testing.B) {
	addr := bootstrap(b)
	a, err := NewAdmin(map[string]string{"bootstrap.servers": addr})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	topic := uniqueTopic(b)
	ctx := context.Background()
	if err := a.CreateTopics(ctx, TopicSpec{Name: topic, Partitions: 6, ReplicationFactor: 1}); err != nil {
		b.Fatal(err)
	}
	p, err := NewProducer(map[string]string{"bootstrap.servers": addr})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(ctx)
	value := make([]byte, 512)
	// Warm up: metadata, producer id, connections.
	if _, err := p.SendSync(ctx, &Record{Topic: topic, Value: value}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(value)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.Send(ctx, &Record{Topic: topic, Value: value}, nil)
	}
	if err := p.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	m := p.Metrics()
	if m.RecordErrors > 0 {
		b.Fatalf("%d records failed", m.RecordErrors)
	}
	b.ReportMetric(float64(m.RecordSendLatency.P99)/1e6, "p99-ms")
	b.ReportMetric(m.BatchSizeAvg, "batch-B")
}
