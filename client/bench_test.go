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
