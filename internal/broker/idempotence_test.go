package broker

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "weir/internal/log"
)

// idempotentBatch builds a one-record batch from producer pid at epoch
// with base sequence seq.
func idempotentBatch(pid int64, epoch int16, seq int32, value string) []byte {
	var bb wlog.BatchBuilder
	now := time.Now().UnixMilli()
	bb.Reset(now)
	bb.Add(now, nil, []byte(value), nil)
	b := append([]byte(nil), bb.Build()...)
	wlog.StampProducer(b, pid, epoch, seq, false)
	return b
}

func rawProduce(t *testing.T, ctx context.Context, c *kgo.Client, tb *testBroker, topic string, records []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	return rawProduceWithin(t, ctx, c, tb, topic, records, 5000)
}

// rawProduceWithin sends records with acks=all and the produce timeout
// timeoutMs, and returns the partition's answer.
func rawProduceWithin(t *testing.T, ctx context.Context, c *kgo.Client, tb *testBroker, topic string, records []byte, timeoutMs int32) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, timeoutMs
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, tb.b.lookupTopic(topic).id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	resp, err := req.RequestWith(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

func TestIdempotentProduce(t *testing.T) {
	dir := t.TempDir()
	tb := startBroker(t, dir, nil)
	ctx := testCtx(t)
	c := newClient(t, tb.addr)
	createTopic(t, ctx, c, "idem", 1, nil)

	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, c)
	if err != nil || init.ErrorCode != 0 || init.ProducerID < 0 {
		t.Fatalf("InitProducerId: %+v %v", init, err)
	}
	pid := init.ProducerID
	steps := []struct {
		name       string
		epoch      int16
		seq        int32
		wantErr    *kerr.Error
		wantOffset int64
	}{
		{"first", 0, 0, nil, 0},
		{"second", 0, 1, nil, 1},
		{"retry of first is acknowledged with its offset", 0, 0, nil, 0},
		{"retry of second", 0, 1, nil, 1},
		{"gap", 0, 5, kerr.OutOfOrderSequenceNumber, -1},
		{"third", 0, 2, nil, 2},
		{"old epoch", -1, 3, kerr.InvalidProducerEpoch, -1},
	}
	for _, s := range steps {
		if s.epoch < 0 {
			// bump first, then write at the old epoch
			if sp := rawProduce(t, ctx, c, tb, "idem", idempotentBatch(pid, 1, 0, "bump")); sp.ErrorCode != 0 || sp.BaseOffset != 3 {
				t.Fatalf("new epoch at sequence 0: %+v", sp)
			}
			s.epoch = 0
		}
		sp := rawProduce(t, ctx, c, tb, "idem", idempotentBatch(pid, s.epoch, s.seq, s.name))
		if s.wantErr != nil {
			if sp.ErrorCode != s.wantErr.Code {
				t.Fatalf("%s: %v, want %v", s.name, kerr.ErrorForCode(sp.ErrorCode), s.wantErr)
			}
			continue
		}
		if sp.ErrorCode != 0 || sp.BaseOffset != s.wantOffset {
			t.Fatalf("%s: error %v offset %d, want offset %d", s.name, kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset, s.wantOffset)
		}
	}
	if end := tb.b.lookupTopic("idem").partitions[0].log().EndOffset(); end != 4 {
		t.Fatalf("log end %d: duplicates or refused batches were written", end)
	}

	// A restarted broker still knows the producer.
	c.Close()
	tb.stop()
	tb = startBroker(t, dir, nil)
	c = newClient(t, tb.addr)
	if sp := rawProduce(t, ctx, c, tb, "idem", idempotentBatch(pid, 1, 0, "bump")); sp.ErrorCode != 0 || sp.BaseOffset != 3 {
		t.Fatalf("retry after restart: %v offset %d, want the original offset 3", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
	if sp := rawProduce(t, ctx, c, tb, "idem", idempotentBatch(pid, 1, 2, "gap")); sp.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap after restart: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	again, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, c)
	if err != nil || again.ProducerID == pid {
		t.Fatalf("producer id reused after restart: %d", again.ProducerID)
	}
}

// lineBuffer collects log output safely across goroutines.
type lineBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lineBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lineBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// loggedBroker starts a broker whose Info log goes to the returned
// buffer, with a client and a one-partition topic.
func loggedBroker(t *testing.T, topic string) (*testBroker, *lineBuffer, context.Context, *kgo.Client) {
	logs := &lineBuffer{}
	tb := startBroker(t, t.TempDir(), func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	ctx := testCtx(t)
	c := newClient(t, tb.addr)
	createTopic(t, ctx, c, topic, 1, nil)
	return tb, logs, ctx, c
}

// TestUnknownProducerPastZeroIsLogged: a leader accepts a batch past
// sequence 0 from a producer the partition does not know (Kafka does:
// its state may have expired), and says so in its log, once; a producer
// it knows, or one starting at 0, is not logged.
func TestUnknownProducerPastZeroIsLogged(t *testing.T) {
	tb, logs, ctx, c := loggedBroker(t, "unseen")
	const line = "accepted a producer the partition did not know"
	steps := []struct {
		pid    int64
		seq    int32
		logged int // lines so far
	}{
		{pid: 7, seq: 0, logged: 0}, // a new producer at 0
		{pid: 7, seq: 1, logged: 0}, // known
		{pid: 8, seq: 5, logged: 1}, // unknown, past 0: accepted and logged
		{pid: 8, seq: 6, logged: 1}, // known now
	}
	for i, s := range steps {
		if sp := rawProduce(t, ctx, c, tb, "unseen", idempotentBatch(s.pid, 0, s.seq, "v")); sp.ErrorCode != 0 || sp.BaseOffset != int64(i) {
			t.Fatalf("step %d: %v at offset %d", i, kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
		}
		if got := strings.Count(logs.String(), line); got != s.logged {
			t.Fatalf("step %d (producer %d sequence %d): %d lines, want %d:\n%s", i, s.pid, s.seq, got, s.logged, logs.String())
		}
	}
	if !strings.Contains(logs.String(), "producer_id=8") || !strings.Contains(logs.String(), "sequence=5") {
		t.Fatalf("the line does not name the producer and sequence:\n%s", logs.String())
	}
}

// TestUnexpectedProduceErrorIsLogged: a produce that fails with an error
// that is none of Kafka's answers (here the partition's log closed under
// it) is answered UNKNOWN_SERVER_ERROR and logged as a warning, with
// nothing written; Kafka's own refusals stay at debug.
func TestUnexpectedProduceErrorIsLogged(t *testing.T) {
	tb, logs, ctx, c := loggedBroker(t, "closed")
	const line = "produce failed with an unexpected error"
	if sp := rawProduce(t, ctx, c, tb, "closed", idempotentBatch(7, 0, 1, "gap")); sp.ErrorCode != 0 {
		t.Fatalf("first batch: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	if sp := rawProduce(t, ctx, c, tb, "closed", idempotentBatch(7, 0, 5, "gap")); sp.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	if strings.Contains(logs.String(), line) {
		t.Fatalf("a Kafka refusal was logged as unexpected:\n%s", logs.String())
	}
	l := tb.b.lookupTopic("closed").partitions[0].log()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if sp := rawProduce(t, ctx, c, tb, "closed", idempotentBatch(7, 0, 2, "after close")); sp.ErrorCode != kerr.UnknownServerError.Code {
		t.Fatalf("produce to a closed log: %v, want UNKNOWN_SERVER_ERROR", kerr.ErrorForCode(sp.ErrorCode))
	}
	if !strings.Contains(logs.String(), line) {
		t.Fatalf("no warning for the unexpected error:\n%s", logs.String())
	}
}

// TestAcksAllRetryOfUnreplicatedBatchWaits: the retry of an acks=all batch
// that the leader wrote but a follower of the ISR lacks is a duplicate,
// and is not acknowledged for that: it waits as the first attempt did.
// Acknowledging it at once would tell the producer that a batch only the
// leader holds is committed.
func TestAcksAllRetryOfUnreplicatedBatchWaits(t *testing.T) {
	tc := startCluster(t, 2, func(c *Config) { c.Quorum.SessionTimeout = time.Minute })
	ctx := testCtx(t)
	leader := tc.brokers[0]
	c := newClient(t, leader.addr)
	tc.createAssigned(t, ctx, c, "retry", []int32{1, 2})
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, c)
	if err != nil || init.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %+v %v", init, err)
	}
	// The follower goes away without a controlled shutdown: it stays in
	// the ISR until its session or replica.lag.time.max.ms ends.
	tc.brokers[1].stop()
	batch := idempotentBatch(init.ProducerID, init.ProducerEpoch, 0, "v")
	for _, attempt := range []string{"first attempt", "retry"} {
		if sp := rawProduceWithin(t, ctx, c, leader, "retry", batch, 300); sp.ErrorCode != kerr.RequestTimedOut.Code {
			t.Fatalf("%s with the ISR's follower gone: %v (offset %d), want REQUEST_TIMED_OUT", attempt, kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
		}
	}
	if end := leader.b.lookupTopic("retry").partitions[0].log().EndOffset(); end != 1 {
		t.Fatalf("leader's log ends at %d, want the batch written once", end)
	}
}
