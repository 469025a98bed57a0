package client_test

import (
	"context"
	"fmt"
	"time"

	"weir/client"
)

// Example creates a topic, produces three records and reads them back as a
// member of a consumer group.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr := client.BrokerForExample() // "host:port" of a running broker

	admin, err := client.NewAdmin(map[string]string{"bootstrap.servers": addr})
	if err != nil {
		panic(err)
	}
	defer admin.Close()
	topic := fmt.Sprintf("example-%d", time.Now().UnixNano())
	if err := admin.CreateTopics(ctx, client.TopicSpec{Name: topic, Partitions: 1, ReplicationFactor: 1}); err != nil {
		panic(err)
	}

	p, err := client.NewProducer(map[string]string{"bootstrap.servers": addr, "compression.type": "zstd"})
	if err != nil {
		panic(err)
	}
	for _, v := range []string{"one", "two", "three"} {
		md, err := p.SendSync(ctx, &client.Record{Topic: topic, Value: []byte(v)})
		if err != nil {
			panic(err)
		}
		fmt.Printf("produced %q at offset %d\n", v, md.Offset)
	}
	if err := p.Close(ctx); err != nil {
		panic(err)
	}

	c, err := client.NewConsumer(map[string]string{
		"bootstrap.servers": addr,
		"group.id":          "example-" + topic,
		"auto.offset.reset": "earliest",
	})
	if err != nil {
		panic(err)
	}
	defer c.Close(ctx)
	if err := c.Subscribe([]string{topic}, nil); err != nil {
		panic(err)
	}
	for got := 0; got < 3; {
		recs, err := c.Poll(ctx)
		if err != nil {
			panic(err)
		}
		for _, r := range recs {
			fmt.Printf("consumed %q from offset %d\n", r.Value, r.Offset)
			got++
		}
	}
	if err := c.CommitSync(ctx, nil); err != nil {
		panic(err)
	}
	// Output:
	// produced "one" at offset 0
	// produced "two" at offset 1
	// produced "three" at offset 2
	// consumed "one" from offset 0
	// consumed "two" from offset 1
	// consumed "three" from offset 2
}
