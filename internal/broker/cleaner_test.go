package broker

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/cleaner"
	"weir/internal/config"
	wlog "weir/internal/log"
)

// withCleaner runs the broker's log cleaner looking for dirty logs every
// 10 ms, with extra broker settings.
func withCleaner(t testing.TB, extra ...string) func(*Config) {
	props := map[string]string{config.NodeID: "1", config.CleanerBackoffMs: "10"}
	for i := 0; i+1 < len(extra); i += 2 {
		props[extra[i]] = extra[i+1]
	}
	settings, err := config.NewBroker(props)
	if err != nil {
		t.Fatal(err)
	}
	return func(c *Config) { c.Settings = settings }
}

// logDirSize is what DescribeLogDirs reports for a partition.
func logDirSize(t testing.TB, ctx context.Context, adm *kadm.Client, topic string, partition int32) int64 {
	t.Helper()
	dirs, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{topic: {partition: struct{}{}}})
	if err != nil {
		t.Fatal(err)
	}
	size := int64(-1)
	dirs.Each(func(d kadm.DescribedLogDir) {
		if p, ok := d.Topics[topic][partition]; ok {
			size = p.Size
		}
	})
	return size
}

// sizeBelow fails while DescribeLogDirs reports partition 0 of topic at
// max bytes or more.
func sizeBelow(t testing.TB, ctx context.Context, adm *kadm.Client, topic string, max int64) error {
	if size := logDirSize(t, ctx, adm, topic, 0); size < 0 || size >= max {
		return fmt.Errorf("%s-0 holds %d bytes", topic, size)
	}
	return nil
}

// TestCompactedTopicIsCleaned: a compacted topic with 1 MiB segments
// takes ten rounds of updates to 100 keys (10 MB); the cleaner brings it
// down to about one round plus the active segment, DescribeLogDirs
// reports the smaller size, a consumer from the start reads each key's
// latest value last, and a record without a key is refused with Kafka's
// error and message.
func TestCompactedTopicIsCleaned(t *testing.T) {
	tb := startBroker(t, t.TempDir(), withCleaner(t))
	ctx := testCtx(t)
	cl := newClient(t, tb.addr, kgo.DefaultProduceTopic("kt"), kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm := kadm.NewClient(cl)
	cfg := map[string]*string{"cleanup.policy": ptr("compact"), "segment.bytes": ptr("1048576"), "min.cleanable.dirty.ratio": ptr("0.01")}
	if _, err := adm.CreateTopic(ctx, 1, 1, cfg, "kt"); err != nil {
		t.Fatal(err)
	}
	pad := bytes.Repeat([]byte("x"), 10<<10)
	for round := range 10 {
		var recs []*kgo.Record
		for k := range 100 {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint("k", k)), Value: append([]byte(fmt.Sprintf("r%d:", round)), pad...)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// 1000 records of 10 KiB were written: under 3 MiB, the cleaner
	// dropped most of them.
	eventually(t, 30*time.Second, func() error { return sizeBelow(t, ctx, adm, "kt", 3<<20) })

	c := newClient(t, tb.addr, kgo.ConsumeTopics("kt"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	end := partitionAt(tb.b, "kt", 0).log().EndOffset()
	latest := map[string]string{}
	read, last := 0, int64(-1)
	for last < end-1 {
		fs := c.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset <= last {
				t.Fatalf("offset %d after %d", r.Offset, last)
			}
			last = r.Offset
			read++
			latest[string(r.Key)] = string(r.Value[:3])
		})
	}
	if len(latest) != 100 || read > 300 {
		t.Fatalf("read %d records of %d keys", read, len(latest))
	}
	for k, v := range latest {
		if v != "r9:" {
			t.Fatalf("%s ends at %s", k, v)
		}
	}

	// A record without a key: INVALID_RECORD, Kafka's message, nothing
	// written.
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = "kt", tb.b.lookupTopic("kt").id // by name below v13, by id from it
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = oneBatch(t) // its record has no key
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	pr := resp.Topics[0].Partitions[0]
	if pr.ErrorCode != kerr.InvalidRecord.Code || pr.ErrorMessage == nil || *pr.ErrorMessage != "Compacted topic cannot accept message without key" {
		t.Fatalf("keyless produce: code %d message %v", pr.ErrorCode, deref(pr.ErrorMessage))
	}
	if got := partitionAt(tb.b, "kt", 0).log().EndOffset(); got != end {
		t.Fatalf("refused batch moved the end from %d to %d", end, got)
	}
	if n := testutil.CollectAndCount(tb.b.CleanerCollector(), "weir_cleaner_runs_total"); n != 1 {
		t.Fatalf("%d runs series", n)
	}
}

// TestOffsetsTopicStaysBounded: 50,000 offset commits (an hour and more
// of a consumer committing 10 partitions every 100 ms, in a few
// seconds) leave __consumer_offsets about one record per group-partition
// plus its active segment, not one record per commit, and a restart
// replays the compacted log to the same committed offsets.
func TestOffsetsTopicStaysBounded(t *testing.T) {
	dir := t.TempDir()
	// offsets.topic.segment.bytes below segment.bytes' floor: 1 MiB
	// segments.
	opts := withCleaner(t, config.OffsetsTopicSegmentBytes, "1000")
	tb := startBroker(t, dir, opts)
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, tb.addr))
	if _, err := adm.CreateTopic(ctx, 10, 1, nil, "work"); err != nil {
		t.Fatal(err)
	}
	commits := 0
	var last kadm.Offsets
	for i := range 5000 {
		last = kadm.Offsets{}
		for p := range int32(10) {
			last.Add(kadm.Offset{Topic: "work", Partition: p, At: int64(i*10) + int64(p), LeaderEpoch: -1})
		}
		resp, err := adm.CommitOffsets(ctx, "g", last)
		if err != nil || resp.Error() != nil {
			t.Fatalf("commit %d: %v %v", i, err, resp.Error())
		}
		commits += 10
	}
	// Each commit record is at least 40 bytes (key: version, group,
	// topic, partition; value: version, offset, epoch, metadata,
	// timestamp): 2 MB uncompacted.
	eventually(t, 30*time.Second, func() error { return sizeBelow(t, ctx, adm, "__consumer_offsets", 3<<19) })
	offsets := partitionAt(tb.b, "__consumer_offsets", 0).log()
	if offsets.EndOffset() < int64(commits) {
		t.Fatalf("%d offsets written for %d commits", offsets.EndOffset(), commits)
	}
	t.Logf("%d commits: __consumer_offsets-0 holds %d bytes", commits, offsets.Size())

	tb.stop()
	tb = startBroker(t, dir, opts)
	adm = kadm.NewClient(newClient(t, tb.addr))
	fetched, err := adm.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(10) {
		got, ok := fetched.Lookup("work", p)
		want, _ := last.Lookup("work", p)
		if !ok || got.At != want.At {
			t.Fatalf("partition %d after restart: %+v, want %d", p, got, want.At)
		}
	}
}

// TestShareStateIsNotCompacted: __share_group_state keeps a snapshot and
// deltas on it under one key, so it is created with cleanup.policy=delete
// and no time retention, and never handed to the cleaner; other
// partitions are, once written.
func TestShareStateIsNotCompacted(t *testing.T) {
	tb := startBroker(t, t.TempDir(), withCleaner(t))
	ctx := testCtx(t)
	if err := tb.b.ensureInternalTopic(ctx, "__share_group_state", 1); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(newClient(t, tb.addr))
	eventually(t, 10*time.Second, func() error {
		if tb.b.lookupTopic("__share_group_state") == nil {
			return fmt.Errorf("no __share_group_state yet")
		}
		return nil
	})
	rc, err := adm.DescribeTopicConfigs(ctx, "__share_group_state")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range rc[0].Configs {
		got[c.Key] = deref(c.Value)
	}
	if got["cleanup.policy"] != "delete" || got["retention.ms"] != "-1" || got["segment.bytes"] != "104857600" {
		t.Fatalf("configs %v", got)
	}
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "plain"); err != nil {
		t.Fatal(err)
	}
	// A partition goes to the cleaner once written (its first high
	// watermark): plain-0 is, plain-1, never written, is not.
	cl := newClient(t, tb.addr, kgo.DefaultProduceTopic("plain"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if !tb.b.cleaner.Has(cleaner.TopicPartition{Topic: "plain", Partition: 0}) {
			return fmt.Errorf("plain-0 not handed to the cleaner")
		}
		return nil
	})
	if tb.b.cleaner.Has(cleaner.TopicPartition{Topic: "plain", Partition: 1}) {
		t.Fatal("never-written plain-1 handed to the cleaner")
	}
	if tb.b.cleaner.Has(cleaner.TopicPartition{Topic: "__share_group_state", Partition: 0}) {
		t.Fatal("share state handed to the cleaner")
	}
}

// TestNewReplicaCopiesCompactedLog: a replica added after its leader
// compacted the partition fetches across the cleaned range (gaps,
// rewritten batches, emptied ones) and ends with the leader's latest value
// of every key, at the same offsets, and the same log end.
func TestNewReplicaCopiesCompactedLog(t *testing.T) {
	c := startCluster(t, 2, func(cfg *Config) {
		s, err := config.NewBroker(map[string]string{config.NodeID: itoa(cfg.NodeID), config.CleanerBackoffMs: "10"})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Settings = s
	})
	ctx := testCtx(t)
	cl := newClient(t, c.brokers[0].addr, kgo.SeedBrokers(c.brokers[0].addr, c.brokers[1].addr), kgo.DefaultProduceTopic("rc"),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
	c.createAssigned(t, ctx, cl, "rc", []int32{1})
	adm := kadm.NewClient(cl)
	set := func(k, v string) kadm.AlterConfig {
		return kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: ptr(v)}
	}
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("cleanup.policy", "compact"), set("segment.bytes", "1048576"),
		set("min.cleanable.dirty.ratio", "0.01")}, "rc"); err != nil {
		t.Fatal(err)
	}
	leader := func() *partition { return partitionAt(c.brokers[0].b, "rc", 0) }
	eventually(t, 10*time.Second, func() error {
		if !leader().log().Config().Compact {
			return fmt.Errorf("rc not compacted yet")
		}
		return nil
	})
	pad := bytes.Repeat([]byte("x"), 10<<10)
	for round := range 8 {
		var recs []*kgo.Record
		for k := range 50 {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint("k", k)), Value: append([]byte(fmt.Sprintf("r%d:", round)), pad...)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, func() error {
		if size := leader().log().Size(); size >= 2<<20 {
			return fmt.Errorf("leader holds %d bytes", size)
		}
		return nil
	})
	moveLeader(t, ctx, cl, "rc", []int32{1, 2})
	follower := func() *partition { return partitionAt(c.brokers[1].b, "rc", 0) }
	eventually(t, 30*time.Second, func() error {
		f := follower()
		if f.rep == nil || f.log().EndOffset() != leader().log().EndOffset() {
			return fmt.Errorf("follower not caught up")
		}
		return nil
	})
	// By offset what each replica holds, and each key's last value.
	read := func(p *partition) (map[int64]string, map[string]string) {
		at, last := map[int64]string{}, map[string]string{}
		err := p.log().ScanRecords(ctx, func(r *wlog.Record) error {
			at[r.Offset] = fmt.Sprintf("%s=%s", r.Key, r.Value[:3])
			last[string(r.Key)] = string(r.Value[:3])
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return at, last
	}
	la, ll := read(leader())
	fa, fl := read(follower())
	for k := range 50 {
		key := fmt.Sprint("k", k)
		if ll[key] != "r7:" || fl[key] != "r7:" {
			t.Fatalf("%s: leader ends on %q, follower on %q", key, ll[key], fl[key])
		}
	}
	for off, rec := range fa {
		if lr, ok := la[off]; ok && lr != rec {
			t.Fatalf("offset %d: leader %s, follower %s", off, lr, rec)
		}
	}
}

// partitionAt is a topic's partition in b's registry, read under the
// registry's lock (the metadata loop replaces the slice).
func partitionAt(b *Broker, topic string, i int) *partition {
	t := b.lookupTopic(topic)
	b.mu.RLock()
	defer b.mu.RUnlock()
	return t.partitions[i]
}
