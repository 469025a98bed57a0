package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func createTopic(t *testing.T, ctx context.Context, c *kgo.Client, name string, parts int32, configs map[string]*string) {
	t.Helper()
	resp, err := kadm.NewClient(c).CreateTopic(ctx, parts, 1, configs, name)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", name, err, resp.Err)
	}
}

func produceValues(t *testing.T, ctx context.Context, c *kgo.Client, topic string, ts time.Time, values ...string) {
	t.Helper()
	for _, v := range values {
		if err := c.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v), Timestamp: ts}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		ts = ts.Add(time.Second)
	}
}

func TestListOffsetsAndDeleteRecords(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	c := newClient(t, tb.addr)
	adm := kadm.NewClient(c)
	createTopic(t, ctx, c, "lo", 1, nil)
	base := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	produceValues(t, ctx, c, "lo", base, "a", "b", "c", "d", "e")

	listAt := func(ts int64) (int64, int64) {
		t.Helper()
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "lo"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = ts
		rt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{rp}
		req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
		resp, err := req.RequestWith(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			t.Fatalf("list offsets %d: %v", ts, err)
		}
		return p.Offset, p.Timestamp
	}
	cases := []struct {
		name       string
		ts         int64
		wantOffset int64
		wantTs     int64
	}{
		{"latest", -1, 5, -1},
		{"earliest", -2, 0, -1},
		{"max timestamp", -3, 4, base.Add(4 * time.Second).UnixMilli()},
		{"by timestamp", base.Add(2 * time.Second).UnixMilli(), 2, base.Add(2 * time.Second).UnixMilli()},
		{"between timestamps", base.Add(2500 * time.Millisecond).UnixMilli(), 3, base.Add(3 * time.Second).UnixMilli()},
		{"after everything", base.Add(time.Hour).UnixMilli(), -1, -1},
	}
	for _, tc := range cases {
		off, ts := listAt(tc.ts)
		if off != tc.wantOffset || ts != tc.wantTs {
			t.Errorf("%s: offset %d ts %d, want %d %d", tc.name, off, ts, tc.wantOffset, tc.wantTs)
		}
	}

	res, err := adm.DeleteRecords(ctx, kadm.Offsets{"lo": {0: {Topic: "lo", Partition: 0, At: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := res.Lookup("lo", 0)
	if r.Err != nil || r.LowWatermark != 3 {
		t.Fatalf("delete records: %+v", r)
	}
	if off, _ := listAt(-2); off != 3 {
		t.Fatalf("earliest after delete records = %d, want 3", off)
	}
	res, _ = adm.DeleteRecords(ctx, kadm.Offsets{"lo": {0: {Topic: "lo", Partition: 0, At: 9}}})
	if r, _ := res.Lookup("lo", 0); r.Err != kerr.OffsetOutOfRange {
		t.Fatalf("delete past high watermark: %v", r.Err)
	}
}

func TestTopicAdminErrors(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	c := newClient(t, tb.addr)
	adm := kadm.NewClient(c)
	createTopic(t, ctx, c, "exists", 2, nil)
	cases := []struct {
		name  string
		topic string
		parts int32
		rf    int16
		want  error
	}{
		{"duplicate", "exists", 1, 1, kerr.TopicAlreadyExists},
		{"bad name", "bad/name", 1, 1, kerr.InvalidTopicException},
		{"too many replicas", "rf3", 1, 3, kerr.InvalidReplicationFactor},
		{"zero partitions", "zero", 0, 1, kerr.InvalidPartitions},
		{"absurd partition count", "huge", 1 << 30, 1, kerr.InvalidPartitions},
	}
	for _, tc := range cases {
		resp, err := adm.CreateTopic(ctx, tc.parts, tc.rf, nil, tc.topic)
		if err == nil {
			err = resp.Err
		}
		if err != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := adm.CreatePartitions(ctx, 2, "exists"); err != nil {
		t.Fatal(err)
	}
	td, err := adm.ListTopics(ctx, "exists")
	if err != nil || len(td["exists"].Partitions) != 4 {
		t.Fatalf("after adding 2 partitions: %v %v", td, err)
	}
	cp, _ := adm.UpdatePartitions(ctx, 3, "exists")
	if r := cp["exists"]; r.Err != kerr.InvalidPartitions {
		t.Fatalf("shrinking partitions: %v", r.Err)
	}
	dr, err := adm.DeleteTopics(ctx, "exists", "missing", offsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	if dr["exists"].Err != nil || dr["missing"].Err != kerr.UnknownTopicOrPartition || dr[offsetsTopic].Err != kerr.InvalidTopicException {
		t.Fatalf("delete results: %+v", dr)
	}
	td, _ = adm.ListTopics(ctx)
	if td.Has("exists") {
		t.Fatal("deleted topic still listed")
	}
}

func TestProduceRejectsBadInput(t *testing.T) {
	tb := startBroker(t, t.TempDir(), func(c *Config) { c.AutoCreateTopics = false })
	ctx := testCtx(t)
	c := newClient(t, tb.addr)
	createTopic(t, ctx, c, "p", 1, nil)
	// A real producer's batch, then corrupted by hand.
	rec := kgo.Record{Topic: "p", Value: []byte("hello")}
	if err := c.ProduceSync(ctx, &rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	good := storedBatch(t, tb, "p")
	produce := func(topic string, records []byte, acks int16) *kmsg.ProduceResponse {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Acks = acks
		req.TimeoutMillis = 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		if tp := tb.b.lookupTopic(topic); tp != nil {
			rt.TopicID = tp.id
		}
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = records
		rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
		req.Topics = []kmsg.ProduceRequestTopic{rt}
		resp, err := req.RequestWith(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	corrupt := append([]byte(nil), good...)
	corrupt[len(corrupt)-1] ^= 1
	two := append(append([]byte(nil), good...), good...)
	cases := []struct {
		name    string
		topic   string
		records []byte
		want    *kerr.Error
	}{
		{"bad crc", "p", corrupt, kerr.CorruptMessage},
		{"two batches", "p", two, kerr.InvalidRecord},
		{"empty", "p", nil, kerr.InvalidRecord},
		{"missing topic, no auto-create", "nope", good, kerr.UnknownTopicID}, // v13 names topics by id
		{"internal topic", offsetsTopic, good, kerr.InvalidTopicException},
	}
	for _, tc := range cases {
		resp := produce(tc.topic, tc.records, -1)
		if got := resp.Topics[0].Partitions[0].ErrorCode; got != tc.want.Code {
			t.Errorf("%s: error %v, want %v", tc.name, kerr.ErrorForCode(got), tc.want)
		}
	}
	if end := partitionAt(tb.b, "p", 0).log().EndOffset(); end != 1 {
		t.Fatalf("rejected batches changed the log: end offset %d", end)
	}
	// The good batch comes from an idempotent producer: sent again it is a
	// duplicate, acknowledged with its original offset and not rewritten.
	if resp := produce("p", good, 1); resp.Topics[0].Partitions[0].ErrorCode != 0 || resp.Topics[0].Partitions[0].BaseOffset != 0 {
		t.Fatalf("good batch after rejections: %+v", resp.Topics[0].Partitions[0])
	}
	if end := partitionAt(tb.b, "p", 0).log().EndOffset(); end != 1 {
		t.Fatalf("duplicate was written again: end offset %d", end)
	}
}

// storedBatch returns the first batch stored in topic's partition 0.
func storedBatch(t *testing.T, tb *testBroker, topic string) []byte {
	t.Helper()
	p := partitionAt(tb.b, topic, 0)
	b, err := p.log().ReadBytes(0, 1, p.log().EndOffset())
	if err != nil || len(b) == 0 {
		t.Fatalf("read stored batch: %v", err)
	}
	return b
}

func TestDescribeAPIs(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	c := newClient(t, tb.addr)
	createTopic(t, ctx, c, "d1", 3, nil)
	createTopic(t, ctx, c, "d2", 2, nil)

	dtp := kmsg.NewPtrDescribeTopicPartitionsRequest()
	dtp.ResponsePartitionLimit = 2
	resp, err := dtp.RequestWith(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	// The limit counts partitions across topics: __consumer_offsets' one
	// partition and d1's first fill the first page.
	if len(resp.Topics) != 2 || *resp.Topics[0].Topic != offsetsTopic || resp.NextCursor == nil || resp.NextCursor.Topic != "d1" || resp.NextCursor.Partition != 1 {
		t.Fatalf("first page: %d topics, cursor %+v", len(resp.Topics), resp.NextCursor)
	}
	if resp.Topics[1].Partitions[0].EligibleLeaderReplicas == nil || resp.Topics[1].Partitions[0].LastKnownELR == nil {
		t.Fatal("ELR lists must be empty, not null: the Java admin client streams them")
	}
	dtp.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	resp, err = dtp.RequestWith(ctx, c)
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 || resp.Topics[0].Partitions[0].Partition != 1 ||
		resp.NextCursor == nil || resp.NextCursor.Topic != "d2" || resp.NextCursor.Partition != 0 {
		t.Fatalf("second page: %+v %v", resp, err)
	}

	adm := kadm.NewClient(c)
	dc, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, c)
	if err != nil || dc.ErrorCode != 0 || len(dc.Brokers) != 1 || dc.Brokers[0].Port == 0 || dc.ClusterID != tb.b.ClusterID() {
		t.Fatalf("describe cluster: %+v %v", dc, err)
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	dirs.Each(func(d kadm.DescribedLogDir) {
		if d.Dir == tb.dir && d.Topics["d1"] != nil {
			found = len(d.Topics["d1"])
		}
	})
	if found != 3 {
		t.Fatalf("log dirs list %d partitions of d1, want 3", found)
	}

	ofe := kmsg.NewPtrOffsetForLeaderEpochRequest()
	ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
	ot.Topic = "d1"
	op := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	op.CurrentLeaderEpoch, op.LeaderEpoch = 0, 0
	ot.Partitions = append(ot.Partitions, op)
	op.Partition, op.CurrentLeaderEpoch = 1, 5
	ot.Partitions = append(ot.Partitions, op)
	ofe.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{ot}
	produceValues(t, ctx, c, "d1", time.Now(), "x")
	oresp, err := ofe.RequestWith(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	ps := oresp.Topics[0].Partitions
	if ps[0].ErrorCode != 0 || ps[0].LeaderEpoch != 0 || ps[0].EndOffset != partitionAt(tb.b, "d1", 0).log().EndOffset() {
		t.Fatalf("epoch end offset: %+v", ps[0])
	}
	if ps[1].ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Fatalf("future current epoch: %v", kerr.ErrorForCode(ps[1].ErrorCode))
	}
}

// TestNullStorageAcknowledgesWithoutStoring: NullStorage hands out
// offsets and writes nothing to the log; with NullStorageWrite each
// produced batch is also written, whole, to DataDir/null-storage.
func TestNullStorageAcknowledgesWithoutStoring(t *testing.T) {
	for _, write := range []bool{false, true} {
		t.Run(fmt.Sprintf("write=%v", write), func(t *testing.T) {
			dir := t.TempDir()
			tb := startBroker(t, dir, func(c *Config) { c.NullStorage, c.NullStorageWrite = true, write })
			ctx := testCtx(t)
			c := newClient(t, tb.addr)
			createTopic(t, ctx, c, "null", 1, nil)
			for i := range 3 {
				r, err := c.ProduceSync(ctx, &kgo.Record{Topic: "null", Value: []byte("x")}).First()
				if err != nil || r.Offset != int64(i) {
					t.Fatalf("produce %d: offset %d, %v", i, r.Offset, err)
				}
			}
			if size := partitionAt(tb.b, "null", 0).log().Size(); size != 0 {
				t.Fatalf("null storage wrote %d bytes to the log", size)
			}
			kept, err := os.ReadFile(filepath.Join(dir, "null-storage", "null-0"))
			if !write {
				if !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("without NullStorageWrite: %d bytes kept, %v", len(kept), err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			batches := 0
			for at := 0; at+12 <= len(kept); batches++ {
				at += 12 + int(binary.BigEndian.Uint32(kept[at+8:]))
				if at > len(kept) {
					t.Fatalf("a batch runs past the file's %d bytes", len(kept))
				}
			}
			if batches != 3 {
				t.Fatalf("the file holds %d batches (%d bytes), want 3", batches, len(kept))
			}
		})
	}
}

// TestNullStorageFetchRepeatsTheLargestBatch: in NullStorage mode a
// consumer's fetch repeats the produced batch holding the most records,
// with base offsets rewritten, from the fetch offset up to the offsets
// produce handed out (the last batch may run past them by less than a
// batch), within PartitionMaxBytes except for a first batch; a real
// client decodes what it gets (CRC checked).
func TestNullStorageFetchRepeatsTheLargestBatch(t *testing.T) {
	tb := startBroker(t, t.TempDir(), func(c *Config) { c.NullStorage = true })
	ctx := testCtx(t)
	p := manualProducer(t, tb)
	createTopic(t, ctx, p, "null", 1, nil)
	produceN(t, ctx, p, "null", 0, 0, 1, 1) // offset 0
	produceN(t, ctx, p, "null", 0, 1, 5, 5) // 1-5: the template, values v1-v5
	produceN(t, ctx, p, "null", 0, 6, 2, 2) // 6-7
	tmpl := tb.b.nullOf(partitionAt(tb.b, "null", 0)).Template()
	if tmpl == nil || tmpl.Records != 5 {
		t.Fatalf("template %+v, want the 5-record batch", tmpl)
	}

	fetch := func(offset int64, maxBytes, epoch int32) (kmsg.FetchResponseTopicPartition, []int64) {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.MaxBytes = 1 << 20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "null", tb.b.lookupTopic("null").id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = offset, maxBytes, epoch
		rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
		req.Topics = []kmsg.FetchRequestTopic{rt}
		resp, err := req.RequestWith(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		sp := resp.Topics[0].Partitions[0]
		var bases []int64
		for b := sp.RecordBatches; len(b) > 0; {
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(b); err != nil {
				t.Fatalf("batch at %d: %v", len(sp.RecordBatches)-len(b), err)
			}
			n := int(rb.Length) + 12
			if rb.CRC != int32(crc32.Checksum(b[21:n], crc32.MakeTable(crc32.Castagnoli))) || rb.NumRecords != 5 {
				t.Fatalf("batch at offset %d: CRC or record count wrong: %+v", rb.FirstOffset, rb)
			}
			bases = append(bases, rb.FirstOffset)
			b = b[n:]
		}
		return sp, bases
	}
	for _, tc := range []struct {
		name     string
		offset   int64
		maxBytes int32
		want     []int64
	}{
		{"from the start", 0, 1 << 20, []int64{0, 5}},
		{"from the middle", 3, 1 << 20, []int64{3}},
		{"one batch past the limit", 0, 1, []int64{0}},
		{"at the end", 8, 1 << 20, nil},
	} {
		sp, bases := fetch(tc.offset, tc.maxBytes, -1)
		if sp.ErrorCode != 0 || sp.HighWatermark != 8 || !slices.Equal(bases, tc.want) {
			t.Errorf("%s: error %d, high watermark %d, batches at %v; want 0, 8, %v", tc.name, sp.ErrorCode, sp.HighWatermark, bases, tc.want)
		}
	}
	if sp, bases := fetch(0, 1<<20, 7); sp.ErrorCode != kerr.UnknownLeaderEpoch.Code || len(bases) != 0 {
		t.Errorf("a fetch naming a newer leader epoch: error %v, batches at %v; want UNKNOWN_LEADER_EPOCH and none", kerr.ErrorForCode(sp.ErrorCode), bases)
	}
	// A batch whose length field runs past the request is refused (the
	// template must never be cut from it) and hands out no offsets.
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = "null", tb.b.lookupTopic("null").id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = tmpl.Batch[:len(tmpl.Batch)-10]
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	resp, err := req.RequestWith(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.CorruptMessage.Code {
		t.Errorf("truncated batch: %v, want CORRUPT_MESSAGE", kerr.ErrorForCode(code))
	}
	if end := tb.b.nullOf(partitionAt(tb.b, "null", 0)).End(); end != 8 {
		t.Errorf("offsets handed out after a refused batch: %d, want 8", end)
	}

	c := newClient(t, tb.addr, kgo.ConsumeTopics("null"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < 8 {
		fs := c.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset == int64(len(got)) {
				got = append(got, string(r.Value))
			}
		})
	}
	if want := []string{"v1", "v2", "v3", "v4", "v5", "v1", "v2", "v3"}; !slices.Equal(got[:8], want) {
		t.Fatalf("consumed %v, want %v", got, want)
	}
}

func TestCheckLeaderEpoch(t *testing.T) {
	p := &partition{}
	p.setLeadership(0, 3)
	for _, tc := range []struct {
		current int32
		want    int16
	}{
		{-1, 0}, // the fetch names none
		{3, 0},
		{2, kerr.FencedLeaderEpoch.Code},
		{4, kerr.UnknownLeaderEpoch.Code},
	} {
		if got := checkLeaderEpoch(p, tc.current); got != tc.want {
			t.Errorf("current epoch %d against 3: %v, want %v", tc.current, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
		}
	}
}

// TestNullStorageWriteUnopenableFileRefusesProduce: with
// NullStorageWrite, a partition whose file cannot be opened (here a
// plain file stands where the directory should be) refuses produce with
// KAFKA_STORAGE_ERROR and hands out no offsets.
func TestNullStorageWriteUnopenableFileRefusesProduce(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "null-storage"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tb := startBroker(t, dir, func(c *Config) { c.NullStorage, c.NullStorageWrite = true, true })
	ctx := testCtx(t)
	c := newClient(t, tb.addr, kgo.RecordRetries(0))
	createTopic(t, ctx, c, "null", 1, nil)
	_, err := c.ProduceSync(ctx, &kgo.Record{Topic: "null", Value: []byte("x")}).First()
	if !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("produce: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if end := tb.b.nullOf(partitionAt(tb.b, "null", 0)).End(); end != 0 {
		t.Fatalf("%d offsets handed out, want 0", end)
	}
}
