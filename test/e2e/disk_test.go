package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/testfs"
)

// record i: 8 bytes of i, then random bytes (incompressible).
func diskRecord(i int, size int) []byte {
	v := make([]byte, size)
	rand.Read(v)
	binary.BigEndian.PutUint64(v, uint64(i))
	return v
}

// readBack reads topic-0 from the start to its end and returns each
// record's value by offset.
func readBack(t *testing.T, ctx context.Context, addr, topic string) map[int64][]byte {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	resp, err := lo.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	end := resp.Topics[0].Partitions[0].Offset
	got := map[int64][]byte{}
	for int64(len(got)) < end {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records: %v", len(got), end, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got[r.Offset] = r.Value })
	}
	return got
}

// TestFullDiskAnswersAndResumes fills a 48 MiB file system holding a
// single weir's data directory with acks=all produce: once full, every
// produce is answered KAFKA_STORAGE_ERROR at once (the producer does not
// wait out its delivery timeout), DescribeLogDirs says the directory is
// offline, and everything acknowledged reads back. When the file system
// grows, produce succeeds again within seconds; after a restart every
// acknowledged record is there, at its offset.
func TestFullDiskAnswersAndResumes(t *testing.T) {
	dir := testfs.Small(t, 48<<20)
	addr := freePort(t)
	p := startWeir(t, dir+"/data", addr)
	defer func() { p.kill() }() // the last process started: the test restarts it
	ctx := testContext(t, 3*time.Minute)
	const topic = "fill"
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(0), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	acked := map[int64][]byte{}
	produce := func(i int) (time.Duration, error) {
		v := diskRecord(i, 64<<10)
		start := time.Now()
		r, err := cl.ProduceSync(ctx, &kgo.Record{Value: v}).First()
		if err == nil {
			acked[r.Offset] = v
		}
		return time.Since(start), err
	}
	i := 0
	var full error
	for ; i < 2000; i++ {
		if _, err := produce(i); err != nil {
			full = err
			break
		}
	}
	if !errors.Is(full, kerr.KafkaStorageError) {
		t.Fatalf("after %d records: %v, want KAFKA_STORAGE_ERROR", len(acked), full)
	}
	t.Logf("full after %d acknowledged records (%d MiB free)", len(acked), testfs.Free(t, dir)>>20)
	for range 5 {
		i++
		took, err := produce(i)
		if !errors.Is(err, kerr.KafkaStorageError) || took > 2*time.Second {
			t.Fatalf("produce on the full disk: %v after %v", err, took)
		}
	}
	// To node 1 itself: the client's merge of a request sent to every
	// broker drops a directory's error code.
	raw, err := cl.Broker(1).Request(ctx, kmsg.NewPtrDescribeLogDirsRequest())
	if err != nil {
		t.Fatal(err)
	}
	if code := raw.(*kmsg.DescribeLogDirsResponse).Dirs[0].ErrorCode; code != kerr.KafkaStorageError.Code {
		t.Fatalf("DescribeLogDirs error %v while full", kerr.ErrorForCode(code))
	}
	check := func(when string) {
		t.Helper()
		got := readBack(t, ctx, addr, topic)
		for off, v := range acked {
			if !bytes.Equal(got[off], v) {
				t.Fatalf("%s: acknowledged record at offset %d missing or changed", when, off)
			}
		}
	}
	check("while full")

	testfs.Resize(t, dir, 128<<20)
	resumed := time.Now()
	for {
		i++
		if _, err := produce(i); err == nil {
			break
		} else if !errors.Is(err, kerr.KafkaStorageError) || time.Since(resumed) > 20*time.Second {
			t.Fatalf("produce after space returned: %v (%v later)", err, time.Since(resumed))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("produce succeeded %v after space returned", time.Since(resumed).Round(time.Millisecond))
	for range 20 {
		i++
		if _, err := produce(i); err != nil {
			t.Fatalf("produce after space returned: %v", err)
		}
	}
	check("after space returned")
	p.stop(t)
	p = startWeir(t, dir+"/data", addr)
	check("after a restart")
}

// TestStartsInASmallDataDirectory: weir serve starts, and takes records,
// with 20 MiB free (less than raft-wal's 64 MiB segment); with 2 MiB it
// exits and says why.
func TestStartsInASmallDataDirectory(t *testing.T) {
	dir := testfs.Small(t, 20<<20)
	addr := freePort(t)
	p := startWeir(t, dir+"/data", addr)
	defer p.kill()
	ctx := testContext(t, time.Minute)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("small"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("fits")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	tiny := testfs.Small(t, 2<<20)
	out, err := exec.CommandContext(ctx, weirBin, "serve", "--data-dir", tiny+"/data", "--listen", freePort(t)).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "the metadata log needs at least") {
		t.Fatalf("weir serve with 2 MiB free: %v\n%s", err, out)
	}
}
