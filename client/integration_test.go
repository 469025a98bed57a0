package client

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/client/internal/wire"
)

func newTestAdmin(t *testing.T) *Admin {
	t.Helper()
	a, err := NewAdmin(map[string]string{"bootstrap.servers": bootstrap(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

func createTopic(t *testing.T, a *Admin, name string, partitions int32) {
	t.Helper()
	if err := a.CreateTopics(testCtx(t), TopicSpec{Name: name, Partitions: partitions, ReplicationFactor: 1}); err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
}

func TestIntegrationProduceAcks(t *testing.T) {
	a := newTestAdmin(t)
	topic := uniqueTopic(t)
	createTopic(t, a, topic, 3)
	for _, tc := range []struct {
		name  string
		props map[string]string
	}{
		{"default", nil},
		{"acks1-gzip", map[string]string{"acks": "1", "compression.type": "gzip"}},
		{"snappy", map[string]string{"compression.type": "snappy"}},
		{"lz4-linger0", map[string]string{"compression.type": "lz4", "linger.ms": "0"}},
		{"zstd", map[string]string{"compression.type": "zstd"}},
		{"acks0", map[string]string{"acks": "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			props := map[string]string{"bootstrap.servers": bootstrap(t)}
			for k, v := range tc.props {
				props[k] = v
			}
			p, err := NewProducer(props)
			if err != nil {
				t.Fatal(err)
			}
			ctx := testCtx(t)
			defer p.Close(ctx)
			const n = 200
			futs := make([]*Future, n)
			for i := range futs {
				futs[i] = p.Send(ctx, &Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i%7), Value: fmt.Appendf(nil, "v%d", i)}, nil)
			}
			if err := p.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			last := map[int32]int64{}
			for i, f := range futs {
				md, err := f.Get(ctx)
				if err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
				if tc.name == "acks0" {
					if md.Offset != -1 {
						t.Fatalf("acks=0 record %d reports offset %d, want -1 (unknown)", i, md.Offset)
					}
					continue
				}
				if md.Offset <= last[md.Partition]-1 && last[md.Partition] != 0 {
					t.Fatalf("record %d: offset %d after %d on partition %d", i, md.Offset, last[md.Partition], md.Partition)
				}
				last[md.Partition] = md.Offset + 1
			}
			m := p.Metrics()
			if m.RecordsSent != n || m.RecordErrors != 0 {
				t.Fatalf("metrics: sent %d errors %d", m.RecordsSent, m.RecordErrors)
			}
		})
	}
}

func TestIntegrationAdminTopics(t *testing.T) {
	a := newTestAdmin(t)
	ctx := testCtx(t)
	topic := uniqueTopic(t)
	createTopic(t, a, topic, 2)
	if err := a.CreateTopics(ctx, TopicSpec{Name: topic, Partitions: 2, ReplicationFactor: 1}); !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("second create: %v, want TOPIC_ALREADY_EXISTS", err)
	}
	if err := a.CreatePartitions(ctx, topic, 4); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		ds, err := a.DescribeTopics(ctx, topic)
		if err != nil {
			return err
		}
		if len(ds) != 1 || len(ds[0].Partitions) != 4 {
			return fmt.Errorf("described %+v", ds)
		}
		return nil
	})
	names, err := a.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range names {
		found = found || n == topic
	}
	if !found {
		t.Fatalf("ListTopics misses %s: %v", topic, names)
	}
	offs, err := a.ListOffsets(ctx, topic, OffsetLatest)
	if err != nil || len(offs) != 4 || offs[0].Offset != 0 {
		t.Fatalf("ListOffsets: %v %+v", err, offs)
	}
	cd, err := a.DescribeCluster(ctx)
	if err != nil || len(cd.Brokers) == 0 {
		t.Fatalf("DescribeCluster: %v %+v", err, cd)
	}
	if err := a.DeleteTopics(ctx, topic); err != nil {
		t.Fatal(err)
	}
}

// TestIntegrationMetadataQuorumLeader: DescribeQuorum through a broker
// names the active controller, the node DescribeCluster names on weir.
func TestIntegrationMetadataQuorumLeader(t *testing.T) {
	a := newTestAdmin(t)
	ctx := testCtx(t)
	leader, epoch, err := a.MetadataQuorumLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cd, err := a.DescribeCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if leader != cd.Controller || epoch < 1 {
		t.Fatalf("quorum leader %d epoch %d, DescribeCluster's controller %d", leader, epoch, cd.Controller)
	}
}

// TestIntegrationConcurrentSends has several goroutines share one producer,
// mixing keyed and unkeyed records, and checks every record gets a unique,
// gap-free offset in its partition.
func TestIntegrationConcurrentSends(t *testing.T) {
	a := newTestAdmin(t)
	topic := uniqueTopic(t)
	createTopic(t, a, topic, 4)
	p, err := NewProducer(map[string]string{"bootstrap.servers": bootstrap(t), "batch.size": "4096", "compression.type": "lz4"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	const workers, each = 4, 1500
	var mu sync.Mutex
	offsets := map[int32][]int64{}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				r := &Record{Topic: topic, Value: make([]byte, 100+i%300)}
				if i%3 == 0 {
					r.Key = fmt.Appendf(nil, "k%d", i)
				}
				p.Send(ctx, r, func(md RecordMetadata, err error) {
					if err != nil {
						t.Errorf("send: %v", err)
						return
					}
					mu.Lock()
					offsets[md.Partition] = append(offsets[md.Partition], md.Offset)
					mu.Unlock()
				})
			}
		}()
	}
	wg.Wait()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	total := 0
	for part, offs := range offsets {
		sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
		for i, o := range offs {
			if o != int64(i) {
				t.Fatalf("partition %d: offset %d at position %d: duplicate or gap", part, o, i)
			}
		}
		total += len(offs)
	}
	if total != workers*each {
		t.Fatalf("%d results, want %d", total, workers*each)
	}
	m := p.Metrics()
	if m.PartitionSwitches < 2 || m.NodeOutgoingBytes == nil {
		t.Fatalf("metrics: %+v", m)
	}
}

func TestIntegrationAdminConfigs(t *testing.T) {
	a := newTestAdmin(t)
	ctx := testCtx(t)
	topic := uniqueTopic(t)
	createTopic(t, a, topic, 1)
	err := a.AlterConfigs(ctx, TopicResource, topic, AlterConfigOp{Name: "retention.ms", Value: kmsg.StringPtr("3600000")})
	if errors.Is(err, wire.ErrUnsupported) {
		t.Skipf("broker lacks IncrementalAlterConfigs: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		cfgs, err := a.DescribeConfigs(ctx, TopicResource, topic)
		if err != nil {
			return err
		}
		for _, c := range cfgs {
			if c.Name == "retention.ms" {
				if c.Value == nil || *c.Value != "3600000" || c.IsDefault {
					return fmt.Errorf("retention.ms = %v (default %v)", c.Value, c.IsDefault)
				}
				return nil
			}
		}
		return errors.New("retention.ms not described")
	})
}

func TestIntegrationAdminGroups(t *testing.T) {
	a := newTestAdmin(t)
	ctx := testCtx(t)
	topic := uniqueTopic(t)
	createTopic(t, a, topic, 2)
	group := "admin-" + topic
	c, err := NewConsumer(map[string]string{"bootstrap.servers": bootstrap(t), "group.id": group, "auto.offset.reset": "earliest"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe([]string{topic}, nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		if _, err := c.Poll(pctx); err != nil {
			return err
		}
		if len(c.Assignment()) != 2 {
			return fmt.Errorf("assignment %v", c.Assignment())
		}
		return nil
	})
	ds, err := a.DescribeGroups(ctx, group)
	if err != nil || len(ds) != 1 || ds[0].Err != nil || ds[0].State != "Stable" || len(ds[0].Members) != 1 || len(ds[0].Members[0].Assignment) != 2 {
		t.Fatalf("DescribeGroups: %v %+v", err, ds)
	}
	ls, err := a.ListGroups(ctx)
	found := false
	for _, g := range ls {
		found = found || g.Group == group
	}
	if err != nil || !found {
		t.Fatalf("ListGroups: %v, %s missing from %+v", err, group, ls)
	}
	if err := a.DeleteGroups(ctx, group); !errors.Is(err, kerr.NonEmptyGroup) {
		t.Fatalf("deleting a group with a member: %v, want NON_EMPTY_GROUP", err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error { return a.DeleteGroups(ctx, group) })
}

// TestIntegrationNoGoroutineLeak closes a producer, a group consumer and an
// admin and checks every goroutine they started has stopped.
func TestIntegrationNoGoroutineLeak(t *testing.T) {
	addr := bootstrap(t)
	a := newTestAdmin(t)
	topic := uniqueTopic(t)
	createTopic(t, a, topic, 1)
	ctx := testCtx(t)
	before := runtime.NumGoroutine()
	p, err := NewProducer(map[string]string{"bootstrap.servers": addr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.SendSync(ctx, &Record{Topic: topic, Value: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	c, err := NewConsumer(map[string]string{"bootstrap.servers": addr, "group.id": "leak-" + topic, "auto.offset.reset": "earliest"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe([]string{topic}, nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		recs, err := c.Poll(pctx)
		if err != nil || len(recs) == 0 {
			return fmt.Errorf("no record yet (%v)", err)
		}
		return nil
	})
	ad, err := NewAdmin(map[string]string{"bootstrap.servers": addr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ad.ListTopics(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	ad.Close()
	eventually(t, 5*time.Second, func() error {
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<16)
			return fmt.Errorf("%d goroutines, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
		}
		return nil
	})
}
