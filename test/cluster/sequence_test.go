package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	wlog "weir/internal/log"
)

// seqBatch is a one-record batch of producer pid at epoch with base
// sequence seq.
func seqBatch(pid int64, epoch int16, seq int32) []byte {
	var bb wlog.BatchBuilder
	now := time.Now().UnixMilli()
	bb.Reset(now)
	bb.Add(now, nil, fmt.Appendf(nil, "seq-%d", seq), nil)
	b := append([]byte(nil), bb.Build()...)
	wlog.StampProducer(b, pid, epoch, seq, false)
	return b
}

// produceTo sends one acks=all batch to node n's partition 0 of topic and
// returns the partition's error and base offset.
func (c *testCluster) produceTo(ctx context.Context, n int, topic string, batch []byte) (error, int64) {
	// Produce v12 names the topic; v13 would need its id.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr(n)), kgo.RequestRetries(0), kgo.MaxVersions(kversion.V3_9_0()))
	if err != nil {
		return err, -1
	}
	defer cl.Close()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		return err, -1
	}
	p := resp.Topics[0].Partitions[0]
	return kerr.ErrorForCode(p.ErrorCode), p.BaseOffset
}

// TestNewLeaderKnowsTheProducers: after the leader of a partition is
// SIGKILLed, the replica that takes over must hold the idempotent
// producer's sequence: a batch after a gap is OUT_OF_ORDER_SEQUENCE_NUMBER
// there, and the next sequence is accepted right after the last one. The
// killed node is restarted each round, so later rounds are led by a
// replica that recovered its producer state from its own log. A new
// leader that forgets a producer accepts any sequence (as Kafka does for
// a producer it does not know), and a client's retried batch can then
// land after the ones it sent later.
func TestNewLeaderKnowsTheProducers(t *testing.T) {
	const topic = "seq"
	ctx := testContext(t, 3*time.Minute)
	c := startCluster(t, ctx, 3)
	all := c.live()
	views := c.onePartitionTopic(ctx, all, topic)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.bootstrap(all)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ireq := kmsg.NewPtrInitProducerIDRequest()
	iresp, err := ireq.RequestWith(ctx, cl)
	if err != nil || iresp.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v, code %d", err, iresp.ErrorCode)
	}
	pid, epoch := iresp.ProducerID, iresp.ProducerEpoch

	leader := int(views[0].leaders[0])
	next := int32(0)
	live := all
	restarted := map[int]bool{}
	for round := range 4 {
		for range 5 {
			err, off := c.produceTo(ctx, leader, topic, seqBatch(pid, epoch, next))
			if err != nil {
				t.Fatalf("round %d: seq %d to leader %d: %v", round, next, leader, err)
			}
			if off != int64(next) {
				t.Fatalf("round %d: seq %d at offset %d", round, next, off)
			}
			next++
		}
		old := leader
		c.kill(old)
		live = without(live, old)
		eventually(t, ctx, 20*time.Second, "a live replica leads", func(ctx context.Context) error {
			v, err := c.agreement(ctx, live, topic, 1)
			if err != nil {
				return err
			}
			if l := int(v[0].leaders[0]); l == old || l < 0 {
				return fmt.Errorf("leader %d", l)
			} else {
				leader = l
			}
			return nil
		})
		eventually(t, ctx, 20*time.Second, "the new leader answers", func(ctx context.Context) error {
			err, _ := c.produceTo(ctx, leader, topic, seqBatch(pid, epoch, next+1))
			switch {
			case errors.Is(err, kerr.OutOfOrderSequenceNumber):
				return nil
			case err == nil:
				t.Fatalf("round %d: new leader %d accepted sequence %d after %d", round, leader, next+1, next-1)
			}
			return err
		})
		t.Logf("round %d: node %d killed, node %d leads (restarted before: %v)", round, old, leader, restarted[leader])
		err, off := c.produceTo(ctx, leader, topic, seqBatch(pid, epoch, next))
		if err != nil || off != int64(next) {
			t.Fatalf("round %d: seq %d to new leader %d: %v at %d", round, next, leader, err, off)
		}
		next++
		c.start(ctx, old)
		restarted[old] = true
		live = append(live, old)
		eventually(t, ctx, 30*time.Second, "the old leader back in sync", func(ctx context.Context) error {
			_, err := c.agreement(ctx, live, topic, 1)
			return err
		})
		time.Sleep(2 * time.Second)
	}
}
