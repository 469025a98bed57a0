package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// transactionalBatch sets the transactional attribute of a v2 batch.
func transactionalBatch(b []byte) []byte {
	binary.BigEndian.PutUint16(b[21:], binary.BigEndian.Uint16(b[21:])|0x10)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// consumeAll reads a topic from the start at an isolation level until the
// partitions' ends as ListOffsets reports them at that level, and returns
// the values read.
func consumeAll(t *testing.T, ctx context.Context, addr, topic string, iso kgo.IsolationLevel) []string {
	t.Helper()
	c := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(iso))
	req := kmsg.NewPtrListOffsetsRequest()
	if iso == kgo.ReadCommitted() {
		req.IsolationLevel = 1
	}
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, c)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ListOffsets: %v %+v", err, resp)
	}
	end := resp.Topics[0].Partitions[0].Offset
	var vals []string
	next := int64(0)
	// Markers hold offsets no record shows: read until the end, or until
	// a poll finds nothing more.
	for next < end {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := c.PollFetches(pctx)
		cancel()
		if fs.NumRecords() == 0 {
			break
		}
		fs.EachRecord(func(r *kgo.Record) {
			vals = append(vals, string(r.Value))
			next = r.Offset + 1
		})
	}
	return vals
}

// TestTransactionsCommitAbort runs franz-go's transactional producer
// against a broker: a committed transaction is visible to read_committed
// and read_uncommitted consumers, an aborted one only to
// read_uncommitted, and the last stable offset follows the markers.
func TestTransactionsCommitAbort(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	createTopic(t, ctx, newClient(t, tb.addr), "txn", 1, nil)
	p := newClient(t, tb.addr, kgo.TransactionalID("tx-1"), kgo.DefaultProduceTopic("txn"))
	run := func(prefix string, commit bool) {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := p.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(prefix, i))).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end (commit %v): %v", commit, err)
		}
	}
	run("c", true)
	run("a", false)
	run("d", true)
	eventually(t, 10*time.Second, func() error {
		got := fmt.Sprint(consumeAll(t, ctx, tb.addr, "txn", kgo.ReadCommitted()))
		if want := "[c0 c1 c2 d0 d1 d2]"; got != want {
			return fmt.Errorf("read_committed read %s, want %s", got, want)
		}
		return nil
	})
	got := fmt.Sprint(consumeAll(t, ctx, tb.addr, "txn", kgo.ReadUncommitted()))
	if want := "[c0 c1 c2 a0 a1 a2 d0 d1 d2]"; got != want {
		t.Fatalf("read_uncommitted read %s, want %s", got, want)
	}
}

// TestTransactionalBatchRefused: a transactional batch of a producer the
// coordinator never saw is refused with Kafka's code and leaves the log
// as it was.
func TestTransactionalBatchRefused(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	c := newClient(t, tb.addr)
	createTopic(t, ctx, c, "txr", 1, nil)
	b := transactionalBatch(idempotentBatch(4242, 0, 0, "zombie"))
	// Without a transactional id the batch cannot be verified.
	if sp := rawProduce(t, ctx, c, tb, "txr", b); sp.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("unverifiable batch: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(sp.ErrorCode))
	}
	if end := tb.b.lookupTopic("txr").partitions[0].log.EndOffset(); end != 0 {
		t.Fatalf("log end %d after refused batches, want 0", end)
	}
}
