package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"weir/client"
)

// TestShareGroupAcrossLeaders: one share group over a topic whose
// partitions are led by all three nodes. The nodes that do not coordinate
// the group keep the share state of the partitions they lead; their first
// ShareFetch must find that state's store ready (it used to answer
// KAFKA_STORAGE_ERROR on nodes that had never served a share group). Every
// record is delivered once, and neither the drain nor the idle polls after
// it see an error.
func TestShareGroupAcrossLeaders(t *testing.T) {
	const topic, records = "share-spread", 120
	ctx := testContext(t, 2*time.Minute)
	c := startCluster(t, ctx, 3)
	all := c.live()
	eventually(t, ctx, 20*time.Second, "create "+topic, func(ctx context.Context) error {
		return c.createTopic(ctx, all, topic, partitions, 1)
	})
	var views []view
	eventually(t, ctx, 20*time.Second, "every broker reports the same leaders", func(ctx context.Context) (err error) {
		views, err = c.agreement(ctx, all, topic, partitions)
		return err
	})
	if n := len(leadersOf(views[0])); n < 2 {
		t.Fatalf("partitions led by %d node(s): %v; the test needs several", n, leadersOf(views[0]))
	}
	bootstrap := strings.Join(c.bootstrap(all), ",")

	s, err := client.NewShareConsumer(map[string]string{
		"bootstrap.servers": bootstrap, "group.id": "spread", "share.acquire.mode": "record_limit",
		"max.poll.records": "50", "fetch.max.wait.ms": "200",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if err := s.Subscribe([]string{topic}); err != nil {
		t.Fatal(err)
	}
	// Idle polls before any record: every leader is asked, none fails.
	for i := range 5 {
		if _, err := s.Poll(ctx); err != nil {
			t.Fatalf("idle poll %d before producing: %v", i, err)
		}
	}

	p, err := client.NewProducer(map[string]string{"bootstrap.servers": bootstrap, "acks": "all"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range records {
		part := int32(i % partitions)
		if _, err := p.SendSync(ctx, &client.Record{Topic: topic, Partition: &part, Value: fmt.Appendf(nil, "%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	p.Close(ctx)

	seen := map[string]int{}
	for len(seen) < records && ctx.Err() == nil {
		recs, err := s.Poll(ctx)
		if err != nil {
			t.Fatalf("poll after %d of %d records: %v", len(seen), records, err)
		}
		for _, r := range recs {
			seen[string(r.Value)]++
		}
	}
	if len(seen) != records {
		t.Fatalf("%d of %d records delivered", len(seen), records)
	}
	for v, n := range seen {
		if n != 1 {
			t.Errorf("record %s delivered %d times", v, n)
		}
	}
	for i := range 3 {
		if recs, err := s.Poll(ctx); err != nil || len(recs) != 0 {
			t.Fatalf("idle poll %d after the drain: %d records, %v", i, len(recs), err)
		}
	}
}
