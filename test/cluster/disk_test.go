package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/localcluster"
	"weir/internal/testfs"
)

// isrOf asks node n for the ISR of each of topic's partitions.
func (c *testCluster) isrOf(ctx context.Context, n int, topic string) (map[int32][]int32, map[int32]int32, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr(n)), kgo.RequestRetries(0))
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, mt)
	resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		return nil, nil, err
	}
	isr, leaders := map[int32][]int32{}, map[int32]int32{}
	for _, p := range resp.Topics[0].Partitions {
		isr[p.Partition] = slices.Sorted(slices.Values(p.ISR))
		leaders[p.Partition] = p.Leader
	}
	return isr, leaders, nil
}

// TestFullDiskOnOneBroker: node 3's data directory is a 64 MiB file
// system that acks=all producers fill (it replicates every partition).
// Once full, node 3 takes its directory offline and asks to be fenced:
// the partition it led moves to another replica and it leaves every ISR,
// so producers go on through nodes 1 and 2 without losing a record. When
// the file system grows, node 3 catches up and is back in every ISR.
// Every acknowledged record reads back at its offset.
func TestFullDiskOnOneBroker(t *testing.T) {
	ctx := testContext(t, 4*time.Minute)
	c := startCluster(t, ctx, 3, func(dir string, _ *localcluster.Spec) { testfs.MountAt(t, localcluster.NodeDir(dir, 3), 64<<20) })
	node3 := localcluster.NodeDir(c.Dir, 3)
	const topic = "disk"
	eventually(t, ctx, 30*time.Second, "topic created with node 3 leading partition 0", func(ctx context.Context) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.bootstrap([]int{1, 2, 3})...))
		if err != nil {
			return err
		}
		defer cl.Close()
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
		for i, r := range [][]int32{{3, 1, 2}, {1, 2, 3}, {2, 3, 1}} {
			ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			ra.Partition, ra.Replicas = int32(i), r
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil && err != kerr.TopicAlreadyExists {
			return err
		}
		_, leaders, err := c.isrOf(ctx, 1, topic)
		if err != nil {
			return err
		}
		if leaders[0] != 3 || len(leaders) != 3 {
			return fmt.Errorf("leaders %v", leaders)
		}
		return nil
	})

	prod, err := kgo.NewClient(kgo.SeedBrokers(c.bootstrap([]int{1, 2, 3})...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RecordDeliveryTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	type key struct {
		p   int32
		off int64
	}
	var mu sync.Mutex
	acked := map[key][]byte{}
	var failures []error
	produce := func(n int) {
		var wg sync.WaitGroup
		for range n {
			v := make([]byte, 32<<10)
			rand.Read(v)
			wg.Add(1)
			prod.Produce(ctx, &kgo.Record{Value: v}, func(r *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failures = append(failures, err)
					return
				}
				acked[key{r.Partition, r.Offset}] = v
			})
		}
		wg.Wait()
	}
	// Fill node 3's disk: about 64 MiB of replicas.
	start := time.Now()
	for testfs.Free(t, node3) > 1<<20 && time.Since(start) < 2*time.Minute {
		produce(64)
	}
	t.Logf("node 3's file system full after %d acknowledged records (%v)", len(acked), time.Since(start).Round(time.Millisecond))
	moved := eventually(t, ctx, 30*time.Second, "node 3 out of every ISR and leading nothing", func(ctx context.Context) error {
		produce(16) // keeps appending: node 3 cannot take it
		isr, leaders, err := c.isrOf(ctx, 1, topic)
		if err != nil {
			return err
		}
		for p := range int32(3) {
			if leaders[p] == 3 || slices.Contains(isr[p], 3) || leaders[p] < 0 {
				return fmt.Errorf("leaders %v, ISRs %v", leaders, isr)
			}
		}
		return nil
	})
	t.Logf("node 3 fenced off its partitions %v after its disk filled", moved)
	before := len(acked)
	produce(200)
	if len(acked) < before+200 {
		t.Fatalf("with node 3's disk full, %d of 200 records acknowledged: %v", len(acked)-before, failures)
	}

	testfs.Resize(t, node3, 1<<30)
	back := eventually(t, ctx, 60*time.Second, "node 3 back in every ISR", func(ctx context.Context) error {
		produce(4)
		isr, _, err := c.isrOf(ctx, 1, topic)
		if err != nil {
			return err
		}
		for p := range int32(3) {
			if !slices.Contains(isr[p], 3) {
				return fmt.Errorf("ISRs %v", isr)
			}
		}
		return nil
	})
	t.Logf("node 3 back in every ISR %v after its file system grew", back)
	mu.Lock()
	if len(failures) > 0 {
		t.Errorf("%d records failed, first: %v", len(failures), failures[0])
	}
	mu.Unlock()

	// Every acknowledged record, from every partition, at its offset.
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.bootstrap([]int{1, 2, 3})...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := 0
	got := map[key][]byte{}
	for seen < len(acked) {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d acknowledged records", seen, len(acked))
		}
		fs.EachRecord(func(r *kgo.Record) {
			k := key{r.Partition, r.Offset}
			if _, ok := acked[k]; ok {
				if _, dup := got[k]; !dup {
					seen++
				}
				got[k] = r.Value
			}
		})
	}
	for k, v := range acked {
		if !bytes.Equal(got[k], v) {
			t.Fatalf("acknowledged record %d/%d differs", k.p, k.off)
		}
	}
}
