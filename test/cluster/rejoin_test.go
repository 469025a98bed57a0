package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestOldLeaderRejoinsAsFollower: a partition's leader is stopped with a
// controlled shutdown, another replica leads it in a new epoch, and the
// old leader is started again while the partition is idle: its log ends
// exactly where the new epoch starts. It must rejoin the ISR, and
// records produced after that (acks=all) must be acknowledged without
// waiting out replica.lag.time.max.ms: an old leader that stops fetching
// the partition while the leader still counts it as caught up holds the
// high watermark back for that long (share state writes timed out this
// way in the compatibility suite's cluster tests).
func TestOldLeaderRejoinsAsFollower(t *testing.T) {
	const topic = "rejoin"
	ctx := testContext(t, 2*time.Minute)
	c := startCluster(t, ctx, 3)
	all := c.live()
	views := c.onePartitionTopic(ctx, all, topic)
	old := leaderNotController(t, views[0], all, "stopping")

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.bootstrap(all)...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(n int, what string) {
		t.Helper()
		for i := range n {
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			start := time.Now()
			err := cl.ProduceSync(pctx, &kgo.Record{Value: fmt.Appendf(nil, "%s-%d", what, i)}).FirstErr()
			cancel()
			if err != nil {
				t.Fatalf("record %d %s: %v after %v", i, what, err, time.Since(start))
			}
		}
	}
	produce(20, "before the stop")

	c.stop(old)
	live := without(all, old)
	eventually(t, ctx, 10*time.Second, "a live replica leads", func(ctx context.Context) error {
		v, err := c.agreement(ctx, live, topic, 1)
		if err == nil && v[0].leaders[0] == int32(old) {
			err = fmt.Errorf("still led by the stopped node %d", old)
		}
		return err
	})
	restart(t, ctx, c, old, time.Now(), map[string]int{topic: 1})
	isrFull := func(ctx context.Context) error {
		isr, leaders, err := c.isrOf(ctx, live[0], topic)
		if err != nil {
			return err
		}
		if !slices.Equal(isr[0], []int32{1, 2, 3}) {
			return fmt.Errorf("ISR %v (leader %d), want [1 2 3]", isr[0], leaders[0])
		}
		return nil
	}
	eventually(t, ctx, 20*time.Second, fmt.Sprintf("node %d back in the ISR while the partition is idle", old), isrFull)
	// The old leader has fetched the new leader's whole log; now the log
	// grows, and every record must be acknowledged.
	produce(200, "after the restart")
	eventually(t, ctx, 20*time.Second, fmt.Sprintf("node %d still in the ISR", old), isrFull)
}
