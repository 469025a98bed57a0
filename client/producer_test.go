package client

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/client/partitioner"
)

// logFunc is a slog.Handler that gives every record, debug included, to
// a function.
type logFunc func(slog.Record)

func (f logFunc) Enabled(context.Context, slog.Level) bool { return true }
func (f logFunc) WithAttrs([]slog.Attr) slog.Handler       { return f }
func (f logFunc) WithGroup(string) slog.Handler            { return f }
func (f logFunc) Handle(_ context.Context, r slog.Record) error {
	f(r)
	return nil
}

// switchLog collects the producer's "partitioner switch" debug logs.
type switchLog struct {
	mu       sync.Mutex
	produced []int64
}

func (s *switchLog) record(r slog.Record) {
	if r.Message != "partitioner switch" {
		return
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "produced" {
			s.mu.Lock()
			s.produced = append(s.produced, a.Value.Int64())
			s.mu.Unlock()
		}
		return true
	})
}

// simProducer returns a manual-mode producer against fast simulated brokers
// and a step function that runs the sender and delivers responses.
func simProducer(t *testing.T, props map[string]string, opts ...Option) (*Producer, *simCluster, func()) {
	t.Helper()
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	sim := newSimCluster(clock, "t", []*simBroker{{id: 0, latency: time.Millisecond}, {id: 1, latency: time.Millisecond}, {id: 2, latency: time.Millisecond}})
	all := map[string]string{"bootstrap.servers": "sim:9092"}
	for k, v := range props {
		all[k] = v
	}
	p, err := NewProducer(all, append(sim.options(3), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.cl.close)
	step := func() {
		p.runOnce(clock.Now())
		clock.advance(time.Millisecond)
		sim.deliver(clock.Now())
	}
	return p, sim, step
}

// TestStickySwitchAccounting checks how the accumulator drives the built-in
// partitioner: with records of varied sizes and compression, each stint ends
// once batch.size bytes of batch growth were counted and never runs past
// twice batch.size plus one record.
func TestStickySwitchAccounting(t *testing.T) {
	for _, codec := range []string{"none", "lz4"} {
		t.Run(codec, func(t *testing.T) {
			log := &switchLog{}
			p, _, step := simProducer(t, map[string]string{"compression.type": codec, "linger.ms": "3"}, WithLogger(slog.New(logFunc(log.record))))
			r := rand.New(rand.NewPCG(1, 2))
			ctx := context.Background()
			n := 20_000
			if raceBuild {
				n = 4_000
			}
			for i := 0; i < n; i++ {
				v := make([]byte, 50+r.IntN(1500))
				for j := range v {
					v[j] = byte(r.IntN(4)) // compressible
				}
				p.Send(ctx, &Record{Topic: "t", Value: v}, nil)
				if i%4 == 0 {
					step()
				}
			}
			log.mu.Lock()
			defer log.mu.Unlock()
			if len(log.produced) < n/400 {
				t.Fatalf("only %d switches", len(log.produced))
			}
			for i, n := range log.produced[1:] { // the first is the initial choice
				if n < 16384 || n > 2*16384+1600 {
					t.Fatalf("switch %d after %d bytes, want within [16384, 2*16384+record]", i, n)
				}
			}
		})
	}
}

func TestBufferMemoryBlocksThenFails(t *testing.T) {
	p, _, _ := simProducer(t, map[string]string{"buffer.memory": "40000", "max.block.ms": "50", "batch.size": "16384"})
	ctx := context.Background()
	// Nothing is sent (the sender never runs), so three batches' worth of
	// memory cannot be had: the third partition's batch blocks and fails.
	var futs []*Future
	for part := int32(0); part < 3; part++ {
		futs = append(futs, p.Send(ctx, &Record{Topic: "t", Partition: PartitionOf(part), Value: []byte("x")}, nil))
	}
	for i, f := range futs {
		select {
		case <-f.Done():
			_, err := f.Get(ctx)
			if i < 2 || !errors.Is(err, ErrBufferExhausted) {
				t.Fatalf("record %d: %v; want only the third to fail with ErrBufferExhausted", i, err)
			}
		default:
			if i == 2 {
				t.Fatal("third record is pending, want ErrBufferExhausted")
			}
		}
	}
}

func TestCloseDeadlineFailsPending(t *testing.T) {
	p, sim, step := simProducer(t, nil)
	sim.hook = func(*simBroker, *kmsg.ProduceRequest, *kmsg.ProduceResponse) {}
	sim.brokers[0].latency = time.Hour // never answers within the test
	ctx := context.Background()
	f := p.Send(ctx, &Record{Topic: "t", Partition: PartitionOf(0), Value: []byte("x")}, nil)
	for i := 0; i < 10; i++ {
		step()
	}
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := p.Close(cctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close: %v, want deadline exceeded", err)
	}
	if _, err := f.Get(ctx); !errors.Is(err, ErrProducerClosed) {
		t.Fatalf("pending record: %v, want ErrProducerClosed", err)
	}
	if _, err := p.Send(ctx, &Record{Topic: "t", Value: []byte("y")}, nil).Get(ctx); !errors.Is(err, ErrProducerClosed) {
		t.Fatalf("send after close: %v", err)
	}
}

func TestDeliveryTimeout(t *testing.T) {
	p, sim, step := simProducer(t, map[string]string{"delivery.timeout.ms": "40", "request.timeout.ms": "30", "linger.ms": "5"})
	sim.hook = func(_ *simBroker, _ *kmsg.ProduceRequest, resp *kmsg.ProduceResponse) {
		resp.Topics[0].Partitions[0].ErrorCode = 7 // REQUEST_TIMED_OUT, retriable
	}
	var err error
	done := false
	p.Send(context.Background(), &Record{Topic: "t", Partition: PartitionOf(1), Value: []byte("x")}, func(_ RecordMetadata, e error) { err, done = e, true })
	for i := 0; i < 500 && !done; i++ {
		step()
	}
	if !errors.Is(err, ErrDeliveryTimeout) {
		t.Fatalf("err %v, want ErrDeliveryTimeout", err)
	}
}

// TestIdempotentSequencesAcrossRetries fails one request in the middle of a
// pipelined run and checks every batch reaches the broker with the producer
// id and in sequence order, retries included.
func TestIdempotentSequencesAcrossRetries(t *testing.T) {
	p, sim, step := simProducer(t, map[string]string{"linger.ms": "0", "batch.size": "200"})
	type seen struct {
		seq   int32
		count int
	}
	var got []seen
	calls := 0
	next := int32(0)
	sim.hook = func(_ *simBroker, req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse) {
		for ti, t := range req.Topics {
			for pi, part := range t.Partitions {
				if part.Partition != 0 {
					continue
				}
				rb := part.Records
				pid := int64(0)
				for i := 43; i < 51; i++ {
					pid = pid<<8 | int64(rb[i])
				}
				seq := int32(uint32(rb[53])<<24 | uint32(rb[54])<<16 | uint32(rb[55])<<8 | uint32(rb[56]))
				rp := &resp.Topics[ti].Partitions[pi]
				calls++
				switch {
				case pid != 1000:
					rp.ErrorCode = 45 // wrong producer id: fail loudly below
				case calls == 3:
					rp.ErrorCode = 7 // a retriable failure in the middle
				case seq != next:
					rp.ErrorCode = 45 // OUT_OF_ORDER_SEQUENCE_NUMBER, as a broker would
				default:
					next += int32(recordCount(rb))
					got = append(got, seen{seq, recordCount(rb)})
				}
			}
		}
	}
	ctx := context.Background()
	var futs []*Future
	for i := 0; i < 40; i++ {
		futs = append(futs, p.Send(ctx, &Record{Topic: "t", Partition: PartitionOf(0), Value: make([]byte, 60)}, nil))
		step()
	}
	for i := 0; i < 3000; i++ {
		step()
	}
	for i, f := range futs {
		select {
		case <-f.Done():
		default:
			t.Fatalf("record %d has no result", i)
		}
		md, err := f.Get(ctx)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if md.Offset != int64(i) {
			t.Fatalf("record %d at offset %d: order broken", i, md.Offset)
		}
	}
	if p.Metrics().RecordRetries == 0 {
		t.Fatal("no retry happened")
	}
}

func TestPartitionerPathsThroughProducer(t *testing.T) {
	t.Run("round robin is even", func(t *testing.T) {
		p, _, step := simProducer(t, map[string]string{"partitioner.class": RoundRobinPartitionerClass, "linger.ms": "0", "batch.size": "100"})
		for i := 0; i < 300; i++ {
			p.Send(context.Background(), &Record{Topic: "t", Value: make([]byte, 30)}, nil)
			if i%7 == 0 {
				step()
			}
		}
		for i := 0; i < 100; i++ {
			step()
		}
		for part := int32(0); part < 3; part++ {
			if got := p.Metrics().Partitions[TopicPartition{"t", part}].Records; got != 100 {
				t.Errorf("partition %d got %d records, want 100", part, got)
			}
		}
	})
	t.Run("keys hash like Java", func(t *testing.T) {
		p, _, step := simProducer(t, nil)
		keys := []string{"a", "abc", "user-42", ""}
		futs := make([]*Future, len(keys))
		for i, k := range keys {
			futs[i] = p.Send(context.Background(), &Record{Topic: "t", Key: []byte(k), Value: []byte("v")}, nil)
		}
		for i := 0; i < 20; i++ {
			step()
		}
		for i, k := range keys {
			md, err := futs[i].Get(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if want := partitioner.PartitionForKey([]byte(k), 3); md.Partition != want {
				t.Errorf("key %q went to %d, want %d", k, md.Partition, want)
			}
		}
	})
}

// TestAvailabilityTimeout stalls broker 2: once it has had data it could not
// take for longer than partitioner.availability.timeout.ms, its partition
// stops being chosen; when it drains again it comes back.
func TestAvailabilityTimeout(t *testing.T) {
	p, sim, step := simProducer(t, map[string]string{"partitioner.availability.timeout.ms": "50", "linger.ms": "0"})
	slow := sim.brokers[2]
	slow.latency = time.Hour
	value := make([]byte, 500)
	run := func(n int) {
		for i := 0; i < n; i++ {
			for j := 0; j < 4; j++ {
				p.Send(context.Background(), &Record{Topic: "t", Value: value}, nil)
			}
			step()
		}
	}
	run(3000)
	m := p.Metrics()
	if m.AvailabilityExclusions == 0 {
		t.Fatal("no exclusion counted")
	}
	queued := m.Partitions[TopicPartition{"t", 2}].QueuedBytes
	fast := m.Partitions[TopicPartition{"t", 0}].Bytes + m.Partitions[TopicPartition{"t", 1}].Bytes
	if queued*10 > fast {
		t.Fatalf("stalled partition holds %d bytes against %d delivered elsewhere: it kept being chosen", queued, fast)
	}
	// Broker 2 recovers: everything it held is answered now.
	slow.latency = time.Millisecond
	now := sim.clock.Now()
	slow.freeAt = now
	for i := range sim.due {
		sim.due[i].at = now
	}
	before := m.Partitions[TopicPartition{"t", 2}].Records
	run(3000)
	after := p.Metrics().Partitions[TopicPartition{"t", 2}].Records
	if after-before < 1000 {
		t.Fatalf("partition 2 got %d records after recovery, want it back in use", after-before)
	}
}

// TestSplitTooLarge: the broker rejects batches of more than 10 records with
// MESSAGE_TOO_LARGE; the producer splits until they fit, keeping order and
// (with idempotence) a gap-free sequence.
func TestSplitTooLarge(t *testing.T) {
	p, sim, step := simProducer(t, map[string]string{"linger.ms": "20"})
	next := int32(0)
	sim.hook = func(_ *simBroker, req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse) {
		for ti, topic := range req.Topics {
			for pi, part := range topic.Partitions {
				if part.Partition != 0 {
					continue
				}
				rp := &resp.Topics[ti].Partitions[pi]
				rb := part.Records
				seq := int32(uint32(rb[53])<<24 | uint32(rb[54])<<16 | uint32(rb[55])<<8 | uint32(rb[56]))
				switch {
				case recordCount(rb) > 10:
					rp.ErrorCode = 10 // MESSAGE_TOO_LARGE
				case seq != next:
					rp.ErrorCode = 45
				default:
					next += int32(recordCount(rb))
				}
			}
		}
	}
	ctx := context.Background()
	var futs []*Future
	for i := 0; i < 300; i++ {
		futs = append(futs, p.Send(ctx, &Record{Topic: "t", Partition: PartitionOf(0), Value: make([]byte, 100)}, nil))
	}
	flushed := make(chan error, 1)
	go func() { flushed <- p.Flush(ctx) }()
	for i := 0; i < 2000; i++ {
		step()
	}
	select {
	case err := <-flushed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Flush did not return after the split batches completed")
	}
	for i, f := range futs {
		md, err := f.Get(ctx)
		if err != nil || md.Offset != int64(i) {
			t.Fatalf("record %d: offset %d err %v", i, md.Offset, err)
		}
	}
	if p.Metrics().BatchSplits == 0 {
		t.Fatal("no split counted")
	}
}

// TestSequenceRecoveryAfterFirstBatchFails reproduces a race seen against
// Apache Kafka on a new topic: a partition's first batch fails with a
// retriable error while the next, pipelined behind it, is accepted (a broker
// takes any sequence from a producer it has no state for); the retried first
// batch then gets OUT_OF_ORDER_SEQUENCE_NUMBER. The producer must recover
// with a new producer id and deliver every record.
func TestSequenceRecoveryAfterFirstBatchFails(t *testing.T) {
	// The case needs the next batch in flight when the first fails: a
	// pipeline from the first request on, which the adaptive in-flight
	// rule holds back until a broker has answered once.
	p, sim, step := simProducer(t, map[string]string{"linger.ms": "0", "retry.backoff.ms": "10", "weir.producer.adaptive.in.flight": "false"})
	for _, b := range sim.brokers {
		b.latency = 5 * time.Millisecond
	}
	type state struct{ next int32 }
	brokerState := map[int64]*state{} // per producer id, partition 0 only
	failedFirst := false
	sim.hook = func(_ *simBroker, req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse) {
		for ti, topic := range req.Topics {
			for pi, part := range topic.Partitions {
				if part.Partition != 0 {
					continue
				}
				rp := &resp.Topics[ti].Partitions[pi]
				rb := part.Records
				var pid int64
				for i := 43; i < 51; i++ {
					pid = pid<<8 | int64(rb[i])
				}
				seq := int32(uint32(rb[53])<<24 | uint32(rb[54])<<16 | uint32(rb[55])<<8 | uint32(rb[56]))
				if !failedFirst {
					failedFirst = true
					rp.ErrorCode = 6 // NOT_LEADER_OR_FOLLOWER, nothing written
					continue
				}
				st := brokerState[pid]
				switch {
				case st == nil: // unknown producer: any sequence goes
					brokerState[pid] = &state{next: seq + int32(recordCount(rb))}
				case seq == st.next:
					st.next += int32(recordCount(rb))
				default:
					rp.ErrorCode = 45 // OUT_OF_ORDER_SEQUENCE_NUMBER
				}
			}
		}
	}
	ctx := context.Background()
	var futs []*Future
	for i := 0; i < 20; i++ {
		futs = append(futs, p.Send(ctx, &Record{Topic: "t", Partition: PartitionOf(0), Value: []byte("v")}, nil))
		step()
	}
	for i := 0; i < 2000; i++ {
		step()
	}
	for i, f := range futs {
		select {
		case <-f.Done():
		default:
			t.Fatalf("record %d has no result", i)
		}
		if _, err := f.Get(ctx); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if sim.producerIDs < 2 {
		t.Fatalf("%d producer ids requested, want a new one after the sequence error", sim.producerIDs)
	}
}

// TestFlushWaitsForCallbacks: Flush returns only after the callbacks of
// everything it waited for have run, as in the Java client.
func TestFlushWaitsForCallbacks(t *testing.T) {
	p, _, step := simProducer(t, map[string]string{"linger.ms": "0"})
	entered, release := make(chan struct{}), make(chan struct{})
	p.Send(context.Background(), &Record{Topic: "t", Partition: PartitionOf(0), Value: []byte("x")}, func(RecordMetadata, error) {
		close(entered)
		<-release
	})
	stepped := make(chan struct{})
	go func() {
		defer close(stepped)
		for i := 0; i < 20; i++ {
			step()
		}
	}()
	<-entered
	// The batch's result is being delivered right now: Flush must wait.
	flushed := make(chan error, 1)
	go func() { flushed <- p.Flush(context.Background()) }()
	select {
	case err := <-flushed:
		t.Fatalf("Flush returned (%v) while a callback was still running", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-stepped
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
}
