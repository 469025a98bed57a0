package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"weir/client"
	"weir/internal/config"
)

// transactionalBatch sets the transactional attribute of a v2 batch.
func transactionalBatch(b []byte) []byte {
	binary.BigEndian.PutUint16(b[21:], binary.BigEndian.Uint16(b[21:])|0x10)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// consumeAll reads a topic from the start at an isolation level until the
// partitions' ends as ListOffsets reports them at that level, and returns
// the values read. opts are the client's further options.
func consumeAll(t *testing.T, ctx context.Context, addr, topic string, iso kgo.IsolationLevel, opts ...kgo.Opt) []string {
	t.Helper()
	c := newClient(t, addr, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(iso)}, opts...)...)
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
	if end := partitionAt(tb.b, "txr", 0).log().EndOffset(); end != 0 {
		t.Fatalf("log end %d after refused batches, want 0", end)
	}
}

// TestZombieFenced: a second producer with the same transactional id
// fences the first; the zombie's next transaction fails with a fencing
// error and leaves nothing visible, while the new producer's commits.
func TestZombieFenced(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	createTopic(t, ctx, newClient(t, tb.addr), "zf", 1, nil)
	zombie := newClient(t, tb.addr, kgo.TransactionalID("zf-id"), kgo.DefaultProduceTopic("zf"), kgo.RecordRetries(2))
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := zombie.ProduceSync(ctx, kgo.StringRecord("first")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := zombie.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	fresh := newClient(t, tb.addr, kgo.TransactionalID("zf-id"), kgo.DefaultProduceTopic("zf"))
	if err := fresh.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := fresh.ProduceSync(ctx, kgo.StringRecord("fresh")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	zerr := zombie.ProduceSync(ctx, kgo.StringRecord("zombie")).FirstErr()
	if zerr == nil {
		zerr = zombie.EndTransaction(ctx, kgo.TryCommit)
	}
	if !errors.Is(zerr, kerr.ProducerFenced) && !errors.Is(zerr, kerr.InvalidProducerEpoch) {
		t.Fatalf("zombie: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", zerr)
	}
	if err := fresh.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		got := fmt.Sprint(consumeAll(t, ctx, tb.addr, "zf", kgo.ReadCommitted()))
		if want := "[first fresh]"; got != want {
			return fmt.Errorf("read_committed read %s, want %s", got, want)
		}
		return nil
	})
}

// TestTransactionTimesOut: a transaction left open past its
// transaction.timeout.ms is aborted by the coordinator; the producer's
// commit then fails with a fencing error and read_committed readers never
// see its records, and the last stable offset moves past them.
func TestTransactionTimesOut(t *testing.T) {
	settings, err := config.NewBroker(map[string]string{config.NodeID: "1", config.TransactionAbortInterval: "100"})
	if err != nil {
		t.Fatal(err)
	}
	tb := startBroker(t, t.TempDir(), func(c *Config) { c.Settings = settings })
	ctx := testCtx(t)
	createTopic(t, ctx, newClient(t, tb.addr), "tto", 1, nil)
	p := newClient(t, tb.addr, kgo.TransactionalID("tto-id"), kgo.DefaultProduceTopic("tto"), kgo.TransactionTimeout(300*time.Millisecond))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, kgo.StringRecord("late")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	part := partitionAt(tb.b, "tto", 0)
	eventually(t, 10*time.Second, func() error {
		if lso, end := part.log().LastStableOffset(part.highWatermark()), part.log().EndOffset(); lso != end || end < 2 {
			return fmt.Errorf("LSO %d, log end %d: the timed-out transaction is not aborted yet", lso, end)
		}
		return nil
	})
	err = p.EndTransaction(ctx, kgo.TryCommit)
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) && !errors.Is(err, kerr.TransactionAbortable) {
		t.Fatalf("commit after the timeout: %v, want a fencing error", err)
	}
	if got := consumeAll(t, ctx, tb.addr, "tto", kgo.ReadCommitted()); len(got) != 0 {
		t.Fatalf("read_committed read %v after the abort", got)
	}
	if got := consumeAll(t, ctx, tb.addr, "tto", kgo.ReadUncommitted()); fmt.Sprint(got) != "[late]" {
		t.Fatalf("read_uncommitted read %v, want [late]", got)
	}
}

// TestWriteTxnMarkersChecks sends markers as a coordinator would: a
// marker for a partition where the producer has no transaction ends
// nothing, a marker with an older producer epoch is
// INVALID_PRODUCER_EPOCH, one from an older coordinator epoch
// TRANSACTION_COORDINATOR_FENCED, one for a partition that does not exist
// UNKNOWN_TOPIC_OR_PARTITION; the refused ones write nothing.
func TestWriteTxnMarkersChecks(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	c := newClient(t, tb.addr)
	createTopic(t, ctx, c, "wm", 1, nil)
	part := partitionAt(tb.b, "wm", 0)
	send := func(topic string, pid int64, epoch int16, coordEpoch int32) int16 {
		t.Helper()
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = pid, epoch, false, coordEpoch
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = topic, []int32{0}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		// Straight to the broker: the client would refuse an unknown
		// topic itself.
		raw, err := c.Broker(int(tb.b.cfg.NodeID)).Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return raw.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
	}
	if code := send("wm", 9, 3, 5); code != 0 {
		t.Fatalf("marker with no transaction: %v", kerr.ErrorForCode(code))
	}
	end := part.log().EndOffset()
	if lso := part.log().LastStableOffset(part.highWatermark()); lso != end {
		t.Fatalf("LSO %d after a marker that ends nothing, want the end %d", lso, end)
	}
	for _, tc := range []struct {
		name       string
		topic      string
		epoch      int16
		coordEpoch int32
		want       *kerr.Error
	}{
		{"older producer epoch", "wm", 2, 5, kerr.InvalidProducerEpoch},
		{"older coordinator epoch", "wm", 3, 4, kerr.TransactionCoordinatorFenced},
		{"unknown topic", "nope", 3, 5, kerr.UnknownTopicOrPartition},
	} {
		if code := send(tc.topic, 9, tc.epoch, tc.coordEpoch); code != tc.want.Code {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(code), tc.want)
		}
	}
	if got := part.log().EndOffset(); got != end {
		t.Fatalf("log end %d after refused markers, want %d", got, end)
	}
}

// TestClassicTransactionsWithoutVerification runs the classic protocol
// (AddPartitionsToTxn from the client, Produce v11) with and without
// transaction.partition.verification.enable: committed and aborted
// transactions are told apart either way.
func TestClassicTransactionsWithoutVerification(t *testing.T) {
	for _, verify := range []string{"true", "false"} {
		t.Run("verification="+verify, func(t *testing.T) {
			settings, err := config.NewBroker(map[string]string{config.NodeID: "1", config.TransactionPartitionVerify: verify})
			if err != nil {
				t.Fatal(err)
			}
			tb := startBroker(t, t.TempDir(), func(c *Config) { c.Settings = settings })
			ctx := testCtx(t)
			createTopic(t, ctx, newClient(t, tb.addr), "classic", 1, nil)
			p, err := client.NewProducer(map[string]string{"bootstrap.servers": tb.addr, "transactional.id": "classic-" + verify,
				"weir.transaction.classic": "true", "linger.ms": "1"})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(ctx)
			if err := p.InitTransactions(ctx); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				value  string
				commit bool
			}{{"kept", true}, {"dropped", false}, {"kept-too", true}} {
				if err := p.BeginTransaction(); err != nil {
					t.Fatal(err)
				}
				if _, err := p.SendSync(ctx, &client.Record{Topic: "classic", Value: []byte(tc.value)}); err != nil {
					t.Fatal(err)
				}
				end := p.AbortTransaction
				if tc.commit {
					end = p.CommitTransaction
				}
				if err := end(ctx); err != nil {
					t.Fatal(err)
				}
			}
			eventually(t, 10*time.Second, func() error {
				if got := fmt.Sprint(consumeAll(t, ctx, tb.addr, "classic", kgo.ReadCommitted())); got != "[kept kept-too]" {
					return fmt.Errorf("read_committed read %s", got)
				}
				return nil
			})
		})
	}
}

// TestAddPartitionsToTxnRefusesInternalTopics: without an authorizer, a
// producer's AddPartitionsToTxn (v0-3) naming an internal topic gets
// Kafka's answer: TOPIC_AUTHORIZATION_FAILED for the internal topic's
// partition, OPERATION_NOT_ATTEMPTED for the others, and the open
// transaction keeps its partitions. A partition leader's batch (v4+) is
// not refused so: a verification of an internal partition answers as
// for any partition outside the transaction. A client's Produce to an
// internal topic is refused too, with INVALID_TOPIC_EXCEPTION.
func TestAddPartitionsToTxnRefusesInternalTopics(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, tb.addr))
	for _, name := range []string{"tu", "tv"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	p := newClient(t, tb.addr, kgo.TransactionalID("itx"), kgo.DefaultProduceTopic("tu"), kgo.TransactionTimeout(5*time.Minute))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, kgo.StringRecord("open")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	describe := func() kadm.DescribedTransaction {
		t.Helper()
		d, err := adm.DescribeTransactions(ctx, "itx")
		if err != nil {
			t.Fatal(err)
		}
		return d["itx"]
	}
	open := describe()
	if open.State != "Ongoing" {
		t.Fatalf("transaction: %+v, want Ongoing", open)
	}
	before := fmt.Sprint(open.Topics.Sorted())

	for _, internal := range []string{"__consumer_offsets", "__transaction_state"} {
		for v := int16(0); v <= 3; v++ {
			mv := kversion.Stable()
			mv.SetMaxKeyVersion(kmsg.AddPartitionsToTxn.Int16(), v)
			cl := newClient(t, tb.addr, kgo.MaxVersions(mv))
			req := kmsg.NewPtrAddPartitionsToTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch = "itx", open.ProducerID, open.ProducerEpoch
			req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{
				{Topic: "tv", Partitions: []int32{0}},
				{Topic: internal, Partitions: []int32{0}},
			}
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatalf("%s v%d: %v", internal, v, err)
			}
			if resp.Version != v {
				t.Fatalf("sent v%d, want v%d", resp.Version, v)
			}
			got := map[string]int16{}
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					got[rt.Topic] = rp.ErrorCode
				}
			}
			want := map[string]int16{"tv": kerr.OperationNotAttempted.Code, internal: kerr.TopicAuthorizationFailed.Code}
			if !maps.Equal(got, want) {
				t.Errorf("%s v%d: codes %v, want %v", internal, v, got, want)
			}
			if after := describe(); after.State != "Ongoing" || fmt.Sprint(after.Topics.Sorted()) != before {
				t.Fatalf("%s v%d changed the transaction: %+v, was %s", internal, v, after, before)
			}
		}
	}

	// Nor may a client write to an internal topic: Kafka answers
	// INVALID_TOPIC_EXCEPTION (ReplicaManager.appendToLocalLog).
	offsets := partitionAt(tb.b, "__consumer_offsets", 0).log()
	end := offsets.EndOffset()
	if sp := rawProduce(t, ctx, newClient(t, tb.addr), tb, "__consumer_offsets", idempotentBatch(-1, -1, -1, "x")); sp.ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("produce to __consumer_offsets: %v, want INVALID_TOPIC_EXCEPTION", kerr.ErrorForCode(sp.ErrorCode))
	}
	if got := offsets.EndOffset(); got != end {
		t.Fatalf("__consumer_offsets-0 end %d after a refused produce, was %d", got, end)
	}

	// A partition leader's verification (v4+) of an internal partition
	// is answered as for any partition outside the transaction.
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	tr := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly = "itx", open.ProducerID, open.ProducerEpoch, true
	tr.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "__consumer_offsets", Partitions: []int32{0}}}
	req.Transactions = append(req.Transactions, tr)
	resp, err := req.RequestWith(ctx, newClient(t, tb.addr))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version < 4 || len(resp.Transactions) != 1 || resp.Transactions[0].Topics[0].Partitions[0].ErrorCode != kerr.TransactionAbortable.Code {
		t.Fatalf("verification: %+v, want TRANSACTION_ABORTABLE", resp)
	}
	if after := describe(); fmt.Sprint(after.Topics.Sorted()) != before {
		t.Fatalf("verification changed the transaction: %+v", after)
	}
}

// TestUnderscoreTopicIsNotInternal: only Kafka's three internal topics
// are internal; a user topic whose name starts with "__" is an ordinary
// topic: Metadata and DescribeTopicPartitions say so, and a client may
// produce to it (Kafka's Topic.isInternal is that list, not a prefix).
func TestUnderscoreTopicIsNotInternal(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	cl := newClient(t, tb.addr, kgo.DefaultProduceTopic("__mine"))
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "__mine"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, kgo.StringRecord("x")).FirstErr(); err != nil {
		t.Fatalf("produce to __mine: %v", err)
	}
	for _, name := range []string{"__mine", "__consumer_offsets"} {
		mreq := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(name)
		mreq.Topics = append(mreq.Topics, mt)
		mresp, err := mreq.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		dreq := kmsg.NewPtrDescribeTopicPartitionsRequest()
		dt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		dt.Topic = name
		dreq.Topics = append(dreq.Topics, dt)
		dresp, err := dreq.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		want := name == "__consumer_offsets"
		if got := mresp.Topics[0].IsInternal; got != want {
			t.Errorf("Metadata says %s internal %v, want %v", name, got, want)
		}
		if got := dresp.Topics[0].IsInternal; got != want {
			t.Errorf("DescribeTopicPartitions says %s internal %v, want %v", name, got, want)
		}
	}
}
