package client

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
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
	eventually(t, 10e9, func() error {
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
