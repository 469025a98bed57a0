package scenario

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"weir/client"
	"weir/scenario/spec"
)

// switches say which workers run now: the phase loop flips them, the
// workers read them on every pass.
type switches struct {
	produce atomic.Bool
	consume atomic.Bool
	// noProcessing drops consumers' simulated processing time.
	noProcessing atomic.Bool
	// rate, when above 0, replaces every producer's schedule with this
	// many records per second in total (explore phases).
	rate atomic.Uint64 // math.Float64bits
	// budget, when >= 0, is how many records the producers may still
	// send between them (a backlog phase's records); each send takes one.
	// A producer in another process claims its share at once (claim).
	budget atomic.Int64
	// budgetRound counts the phases that set a budget, budgetTotal the
	// last one's records: a JVM producer claims its share once per round.
	budgetRound, budgetTotal atomic.Int64
	// quit asks the workers to end their loops at their next pass.
	quit atomic.Bool
}

// take claims one record of the budget; false when it is spent.
func (s *switches) take() bool {
	for {
		b := s.budget.Load()
		if b < 0 {
			return true
		}
		if b == 0 {
			return false
		}
		if s.budget.CompareAndSwap(b, b-1) {
			return true
		}
	}
}

// producerWorker is one producer instance on weir's client.
type producerWorker struct {
	spec     spec.Producer
	instance int
	share    float64 // of an explore rate: 1 / all producer instances
	p        *client.Producer
	m        *meter
	sw       *switches
	dist     *distributor
	sent     atomic.Int64 // records handed to Send
}

// loadProducer is one producer entry's instances, in process or in a
// JVM.
type loadProducer interface {
	run(ctx context.Context)
	close(ctx context.Context) error
	sentCount() int64
	done() bool
	brokerBytes() map[int32]int64
	// owed is the records of a backlog phase's budget this producer
	// claimed and has not sent yet (0 for producers that take from the
	// shared budget record by record).
	owed() int64
	// failed is why the producer stopped on its own (a JVM that exited).
	failed() error
}

// loadConsumer is one consumer entry's instances.
type loadConsumer interface {
	run(ctx context.Context)
	close(ctx context.Context) error
	failed() error
}

func (w *producerWorker) failed() error { return nil }
func (w *consumerWorker) failed() error { return nil }

// failed is the first worker failure, nil while all run.
func (ws *workers) failed() error {
	for _, p := range ws.producers {
		if err := p.failed(); err != nil {
			return err
		}
	}
	for _, c := range ws.consumers {
		if err := c.failed(); err != nil {
			return err
		}
	}
	return nil
}

func (w *producerWorker) sentCount() int64 { return w.sent.Load() }
func (w *producerWorker) owed() int64      { return 0 }

// brokerBytes is this client's outgoing bytes per broker since it
// started (producer-node-metrics outgoing-byte-total).
func (w *producerWorker) brokerBytes() map[int32]int64 {
	out := map[int32]int64{}
	for n, b := range w.p.Metrics().NodeOutgoingBytes {
		if n >= 0 {
			out[n] += b
		}
	}
	return out
}

func newProducerWorker(ps spec.Producer, instance int, partitions int, bootstrap string, m *meter, sw *switches, log *slog.Logger) (*producerWorker, error) {
	props := map[string]string{"bootstrap.servers": bootstrap, "client.id": ps.Name + "-" + itoa(instance)}
	maps.Copy(props, ps.Configs)
	p, err := client.NewProducer(props, client.WithLogger(log))
	if err != nil {
		return nil, err
	}
	return &producerWorker{spec: ps, instance: instance, p: p, m: m, sw: sw, dist: newDistributor(ps.Distributor, partitions, instance)}, nil
}

// run sends records at the schedule's rate while producing is on, until
// ctx ends or the producer has sent its Records.
func (w *producerWorker) run(ctx context.Context) {
	value := make([]byte, w.spec.RecordSize)
	for i := range value {
		value[i] = 'a' + byte(i%26)
	}
	pace := newPacer(w.spec.Rate, time.Now())
	explore := newPacer(spec.Schedule{}, time.Now())
	for ctx.Err() == nil && !w.sw.quit.Load() {
		now := time.Now()
		active := w.sw.produce.Load() && !w.done()
		var owed int64
		if r := loadRate(&w.sw.rate); r > 0 {
			pace.advance(now, false)
			explore.schedule = spec.Schedule{Constant: ptr(r * w.share)}
			owed = explore.advance(now, active)
		} else {
			explore.advance(now, false)
			owed = pace.advance(now, active)
		}
		for n := int64(0); n < owed && ctx.Err() == nil && !w.done() && w.sw.produce.Load(); n++ {
			if !w.sw.take() {
				break
			}
			w.send(ctx, value)
			if r := loadRate(&w.sw.rate); r > 0 {
				explore.sent(1)
			} else {
				pace.sent(1)
			}
		}
		if owed == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Millisecond):
			}
		}
	}
}

func (w *producerWorker) done() bool {
	return w.spec.Records > 0 && w.sent.Load() >= w.spec.Records
}

func (w *producerWorker) send(ctx context.Context, value []byte) {
	key, part := w.dist.next()
	start := time.Now()
	r := &client.Record{Topic: w.spec.Topic, Key: key, Value: value, Timestamp: start}
	if part >= 0 {
		r.Partition = client.PartitionOf(part)
	}
	w.sent.Add(1)
	topic := w.spec.Topic
	w.p.Send(ctx, r, func(md client.RecordMetadata, err error) {
		w.m.acked(topic, md.Partition, time.Since(start), err)
	})
}

// close flushes what was sent (bounded by ctx) and closes the client.
func (w *producerWorker) close(ctx context.Context) error {
	err := w.p.Flush(ctx)
	return errors.Join(err, w.p.Close(ctx))
}

// consumerWorker is one consumer instance on weir's client: a group
// member or a share-group member.
type consumerWorker struct {
	spec  spec.Consumer
	group *client.Consumer
	share *client.ShareConsumer
	// pollRecords is one Poll of share or group.
	pollRecords func(ctx context.Context) ([]polled, error)
	m           *meter
	sw          *switches
	rng         *rand.Rand
}

// polledOf lists what the meter needs of a Poll's records.
func polledOf[R any](recs []R, rec func(R) *client.ConsumerRecord) []polled {
	out := make([]polled, len(recs))
	for i, r := range recs {
		c := rec(r)
		out[i] = polled{c.Partition, c.Offset, c.Timestamp}
	}
	return out
}

// polled is one record a Poll returned.
type polled struct {
	partition int32
	offset    int64
	timestamp time.Time
}

func newConsumerWorker(cs spec.Consumer, instance int, bootstrap string, m *meter, sw *switches, log *slog.Logger) (*consumerWorker, error) {
	props := map[string]string{"bootstrap.servers": bootstrap, "group.id": cs.Group, "client.id": cs.Name + "-" + itoa(instance)}
	w := &consumerWorker{spec: cs, m: m, sw: sw, rng: rand.New(rand.NewPCG(uint64(instance), 7))}
	var err error
	if cs.Type == spec.ConsumerShare {
		props["share.acquire.mode"] = cs.AcquireMode
		maps.Copy(props, cs.Configs)
		w.share, err = client.NewShareConsumer(props, client.WithLogger(log))
		if err == nil {
			err = w.share.Subscribe([]string{cs.Topic})
		}
		w.pollRecords = func(ctx context.Context) ([]polled, error) {
			recs, err := w.share.Poll(ctx)
			return polledOf(recs, func(r *client.ShareRecord) *client.ConsumerRecord { return &r.ConsumerRecord }), err
		}
	} else {
		// A group that joins after the backlog was written reads it.
		props["auto.offset.reset"] = "earliest"
		maps.Copy(props, cs.Configs)
		w.group, err = client.NewConsumer(props, client.WithLogger(log))
		if err == nil {
			err = w.group.Subscribe([]string{cs.Topic}, nil)
		}
		w.pollRecords = func(ctx context.Context) ([]polled, error) {
			recs, err := w.group.Poll(ctx)
			return polledOf(recs, func(r *client.ConsumerRecord) *client.ConsumerRecord { return r }), err
		}
	}
	if err != nil {
		return nil, err
	}
	return w, nil
}

// run polls while consuming is on and simulates each poll's processing.
func (w *consumerWorker) run(ctx context.Context) {
	for ctx.Err() == nil && !w.sw.quit.Load() {
		if !w.sw.consume.Load() {
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		ds, err := w.poll(ctx)
		if err != nil && ctx.Err() == nil {
			select { // a failing poll is not retried in a tight loop
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
		if len(ds) > 0 {
			w.m.consumed(w.spec.Topic, ds)
			if !w.sw.noProcessing.Load() {
				w.process(ctx, len(ds))
			}
		}
	}
}

// poll runs one Poll and stamps its records' end-to-end latency when it
// returns: a record that reached the broker during the Poll waited until
// then (stamped at the Poll's start, as before 2026-11-28, every figure
// was short by the time the Poll took, and a record that arrived during
// a long poll counted as less than nothing).
func (w *consumerWorker) poll(ctx context.Context) ([]delivery, error) {
	recs, err := w.pollRecords(ctx)
	now := time.Now()
	out := make([]delivery, len(recs))
	for i, r := range recs {
		out[i] = delivery{partition: r.partition, offset: r.offset, e2e: now.Sub(r.timestamp)}
	}
	return out, err
}

// process sleeps for the simulated work of n records: each takes a time
// drawn from [min_ms, max_ms], Parallelism of them at a time (-1: all).
func (w *consumerWorker) process(ctx context.Context, n int) {
	p := w.spec.Processing
	if p.MaxMs <= 0 {
		return
	}
	d := processingTime(p, n, func() float64 { return p.MinMs + (p.MaxMs-p.MinMs)*w.rng.Float64() })
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// processingTime is how long n records take when each takes draw() ms
// and lanes of them run side by side: each record goes to the lane that
// frees first, and the poll is done when the last lane is.
func processingTime(p spec.Processing, n int, draw func() float64) time.Duration {
	lanes := p.Parallelism
	if lanes < 0 || lanes > n {
		lanes = n
	}
	if lanes < 1 {
		return 0
	}
	busy := make([]float64, lanes)
	for range n {
		i := slices.Index(busy, slices.Min(busy))
		busy[i] += draw()
	}
	return time.Duration(slices.Max(busy) * float64(time.Millisecond))
}

func (w *consumerWorker) close(ctx context.Context) error {
	if w.share != nil {
		return w.share.Close(ctx)
	}
	return w.group.Close(ctx)
}

// workers runs and stops the producer and consumer instances.
type workers struct {
	producers []loadProducer
	consumers []loadConsumer
	wg        sync.WaitGroup
	cancel    context.CancelFunc
}

// start runs every worker on its own goroutine until stop.
func (ws *workers) start(ctx context.Context) {
	ctx, ws.cancel = context.WithCancel(ctx)
	for _, p := range ws.producers {
		ws.wg.Go(func() { p.run(ctx) })
	}
	for _, c := range ws.consumers {
		ws.wg.Go(func() { c.run(ctx) })
	}
}

// stop ends the workers' loops (at their next pass; those still in a
// send or a poll after 5 s are cancelled), then flushes the producers
// and closes every client, each bounded by a minute. A producer that
// cannot deliver what it sent fails the run (err); a consumer whose
// close went wrong (acknowledgements of records the run had already
// counted, dropped by a session a cancelled poll ended) is reported as
// a warning.
func (ws *workers) stop(sw *switches) (warnings []error, err error) {
	sw.quit.Store(true)
	done := make(chan struct{})
	go func() { ws.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	if ws.cancel != nil {
		ws.cancel()
	}
	<-done
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var errs []error
	for _, p := range ws.producers {
		errs = append(errs, p.close(ctx))
	}
	for _, c := range ws.consumers {
		if err := c.close(ctx); err != nil {
			warnings = append(warnings, err)
		}
	}
	return warnings, errors.Join(errs...)
}

// brokerBytes sums the producers' outgoing bytes per broker since they
// started (producer-node-metrics outgoing-byte-total).
func (ws *workers) brokerBytes() map[int32]int64 {
	out := map[int32]int64{}
	for _, p := range ws.producers {
		for n, b := range p.brokerBytes() {
			out[n] += b
		}
	}
	return out
}

// owed is the budget the producers claimed and have not sent yet.
func (ws *workers) owed() int64 {
	var n int64
	for _, p := range ws.producers {
		n += p.owed()
	}
	return n
}

func (ws *workers) producersDone() bool {
	for _, p := range ws.producers {
		if !p.done() {
			return false
		}
	}
	return len(ws.producers) > 0
}

func (ws *workers) sent() int64 {
	var n int64
	for _, p := range ws.producers {
		n += p.sentCount()
	}
	return n
}

// claim takes up to n records of the budget at once and returns how many
// it got (n itself when there is no budget: -1 tells the caller so).
func (s *switches) claim(n int64) int64 {
	for {
		b := s.budget.Load()
		if b < 0 {
			return -1
		}
		got := min(b, n)
		if s.budget.CompareAndSwap(b, b-got) {
			return got
		}
	}
}
