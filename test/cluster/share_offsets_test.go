package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/client"
)

// TestDescribeShareGroupOffsetsListsEveryPartition: a share group over 12
// partitions led by all three nodes. DescribeShareGroupOffsets on the
// group's coordinator, asked for every partition with state (no topics),
// lists all 12 with the start offset the group reached, while the group
// has a member and after it left. It used to list only the partitions
// whose state the coordinator's node held (7 of 12, never partition 0).
// The lag of a partition led by the coordinator is 0 once everything is
// acknowledged; elsewhere it is 0 or, until the broker can ask another
// leader for its high watermark (sharegroup.RemoteHighWatermark), -1.
func TestDescribeShareGroupOffsetsListsEveryPartition(t *testing.T) {
	const topic, group, parts, perPart = "share-offsets", "offsets", 12, 20
	ctx := testContext(t, 3*time.Minute)
	c := startCluster(t, ctx, 3)
	all := c.live()
	eventually(t, ctx, 20*time.Second, "create "+topic, func(ctx context.Context) error {
		return c.createTopic(ctx, all, topic, parts, 1)
	})
	var views []view
	eventually(t, ctx, 20*time.Second, "every broker reports the same leaders", func(ctx context.Context) (err error) {
		views, err = c.agreement(ctx, all, topic, parts)
		return err
	})
	if n := len(leadersOf(views[0])); n != 3 {
		t.Fatalf("partitions led by %d node(s): %v; the test needs all three", n, leadersOf(views[0]))
	}
	bootstrap := strings.Join(c.bootstrap(all), ",")

	s, err := client.NewShareConsumer(map[string]string{
		"bootstrap.servers": bootstrap, "group.id": group, "max.poll.records": "100", "fetch.max.wait.ms": "200",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if err := s.Subscribe([]string{topic}); err != nil {
		t.Fatal(err)
	}
	for range 5 { // joined, every leader asked once: the group starts at the end
		if _, err := s.Poll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	p, err := client.NewProducer(map[string]string{"bootstrap.servers": bootstrap, "acks": "all"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range parts * perPart {
		part := int32(i % parts)
		if _, err := p.SendSync(ctx, &client.Record{Topic: topic, Partition: &part, Value: fmt.Appendf(nil, "%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	p.Close(ctx)
	got := 0
	for got < parts*perPart && ctx.Err() == nil {
		recs, err := s.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got += len(recs)
	}
	if _, err := s.Poll(ctx); err != nil { // acknowledges the last records
		t.Fatal(err)
	}

	kc, err := kgo.NewClient(kgo.SeedBrokers(c.bootstrap(all)...))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	coordinator := func(ctx context.Context) (int32, error) {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKeys = 0, []string{group}
		resp, err := req.RequestWith(ctx, kc)
		if err != nil {
			return -1, err
		}
		if len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
			return -1, fmt.Errorf("find coordinator: %+v", resp.Coordinators)
		}
		return resp.Coordinators[0].NodeID, nil
	}
	leaderOf := map[int32]int32{}
	for node, ps := range leadersOf(views[0]) {
		for _, p := range ps {
			leaderOf[p] = node
		}
	}
	check := func(when string) {
		eventually(t, ctx, 30*time.Second, "every partition listed "+when, func(ctx context.Context) error {
			node, err := coordinator(ctx)
			if err != nil {
				return err
			}
			req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
			req.Version = 1
			rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
			rg.GroupID = group
			req.Groups = append(req.Groups, rg)
			resp, err := req.RequestWith(ctx, kc.Broker(int(node)))
			if err != nil {
				return err
			}
			if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
				return fmt.Errorf("groups %+v", resp.Groups)
			}
			listed := map[int32]kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition{}
			for _, tp := range resp.Groups[0].Topics {
				if tp.Topic != topic {
					return fmt.Errorf("topic %q listed", tp.Topic)
				}
				for _, p := range tp.Partitions {
					if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
						return fmt.Errorf("partition %d: %w", p.Partition, err)
					}
					listed[p.Partition] = p
				}
			}
			if len(listed) != parts {
				return fmt.Errorf("%d of %d partitions listed: %v", len(listed), parts, listed)
			}
			for part, p := range listed {
				if p.StartOffset != perPart {
					return fmt.Errorf("partition %d (led by %d): start offset %d, want %d", part, leaderOf[part], p.StartOffset, perPart)
				}
				if (leaderOf[part] == node && p.Lag != 0) || (p.Lag != 0 && p.Lag != -1) {
					return fmt.Errorf("partition %d (led by %d, coordinator %d): lag %d", part, leaderOf[part], node, p.Lag)
				}
			}
			return nil
		})
	}
	check("while the member is in the group")
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	check("after the member left")
}
