package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/client/internal/records"
	"weir/client/partitioner"
)

// Header is a record header.
type Header struct {
	Key   string
	Value []byte
}

// Record is a record to produce. Partition nil lets the partitioner choose
// (Java's null partition); Timestamp zero means now.
type Record struct {
	Topic     string
	Partition *int32
	Key       []byte
	Value     []byte
	Headers   []Header
	Timestamp time.Time
}

// PartitionOf returns a pointer to p, for Record.Partition.
func PartitionOf(p int32) *int32 { return &p }

// RecordMetadata is the outcome of a produced record. Offset is -1 when
// unknown (acks=0, or a retry the broker recognised as a duplicate).
type RecordMetadata struct {
	Topic     string
	Partition int32
	Offset    int64
	Timestamp time.Time
}

// Future is the result of one Send.
type Future struct {
	mu       sync.Mutex
	done     chan struct{} // made by the first Done before the result: most sends are never waited on
	complete bool
	md       RecordMetadata
	err      error
}

// closedChan is what Done returns when the result came before anyone
// asked.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Done is closed once the result is known.
func (f *Future) Done() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done == nil {
		if f.complete {
			return closedChan
		}
		f.done = make(chan struct{})
	}
	return f.done
}

// set records the result and wakes Done's waiters.
func (f *Future) set(md RecordMetadata, err error) {
	f.mu.Lock()
	f.md, f.err, f.complete = md, err, true
	if f.done != nil {
		close(f.done)
	}
	f.mu.Unlock()
}

// Get waits for the result or ctx.
func (f *Future) Get(ctx context.Context) (RecordMetadata, error) {
	select {
	case <-f.Done():
		return f.md, f.err
	case <-ctx.Done():
		return RecordMetadata{}, ctx.Err()
	}
}

// Errors of Send.
var (
	ErrRecordTooLarge  = errors.New("client: record is larger than max.request.size or buffer.memory")
	ErrProducerClosed  = errors.New("client: producer is closed")
	ErrDeliveryTimeout = errors.New("client: delivery.timeout.ms expired before the record was acknowledged")
)

// Producer sends records to Kafka. See the package documentation for the
// pipeline (accumulator, sender, partitioning) and its concurrency model.
type Producer struct {
	cfg    producerConfig
	o      options
	log    *slog.Logger
	cl     *core
	mem    *bufferPool
	custom partitioner.Partitioner
	nodes  *partitioner.NodeLatency
	m      *producerMetrics

	topicsMu sync.RWMutex
	topics   map[string]*topicState

	mu         sync.Mutex // sender state below
	inflight   map[int32]int
	rtt        nodeRTT
	pid        int64
	epoch      int16
	pidState   pidState
	pidErr     error
	idempotent bool
	closing    bool
	flushing   int
	incomplete map[*batch]struct{}
	batchSeq   uint64 // numbers batches in creation order, for Flush
	drainIdx   map[int32]int

	aborted atomic.Bool // Close has failed what was left; later appends fail too

	txn *txnManager // transactions (transactional.id); nil without

	wake   chan struct{}
	stop   chan struct{}
	wg     sync.WaitGroup
	closed chan struct{}
	once   sync.Once
}

type pidState uint8

const (
	pidNone pidState = iota
	pidInitializing
	pidReady
	pidFailed
)

// NewProducer validates props (Kafka producer property names) and starts a
// producer. Only bootstrap.servers is required.
func NewProducer(props map[string]string, opts ...Option) (*Producer, error) {
	o := buildOptions(opts)
	cfg, err := parseProducerConfig(props, o)
	if err != nil {
		return nil, err
	}
	custom, _ := cfg.customPartitioner(o)
	p := &Producer{
		cfg:        cfg,
		o:          o,
		log:        o.logger,
		mem:        newBufferPool(cfg.bufferMemory, cfg.batchSize),
		custom:     custom,
		nodes:      partitioner.NewNodeLatency(),
		m:          newProducerMetrics(),
		topics:     map[string]*topicState{},
		inflight:   map[int32]int{},
		rtt:        nodeRTT{},
		pid:        -1,
		epoch:      -1,
		idempotent: cfg.idempotent,
		incomplete: map[*batch]struct{}{},
		drainIdx:   map[int32]int{},
		wake:       make(chan struct{}, 1),
		stop:       make(chan struct{}),
		closed:     make(chan struct{}),
	}
	p.cl = newCore(cfg.commonConfig, o, cfg.autoCreate)
	if cfg.transactionalID != "" {
		p.txn = newTxnManager(p, cfg.transactionalID)
	}
	p.cl.mu.Lock() // the refresher may already be dialing
	p.cl.onConnect = func(int32) { p.wakeup() }
	p.cl.mu.Unlock()
	if !o.manual {
		p.wg.Add(1)
		go p.senderLoop()
	}
	return p, nil
}

func (p *Producer) now() time.Time { return p.o.clock.Now() }

func (p *Producer) wakeup() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Send queues r and returns at once with its Future; cb, if not nil, is
// called with the same result. Send blocks (bounded by max.block.ms and
// ctx) while the topic's metadata is unknown or buffer.memory is full. The
// record's bytes are referenced, not copied, until the result arrives.
//
// Callbacks run on the producer's I/O goroutines: keep them short.
func (p *Producer) Send(ctx context.Context, r *Record, cb func(RecordMetadata, error)) *Future {
	pr := &pendingRecord{rec: r, cb: cb}
	if err := p.send(ctx, pr); err != nil {
		p.m.recordErrors.Add(1)
		pr.complete(RecordMetadata{Topic: r.Topic, Partition: -1, Offset: -1}, err)
		return &pr.fut
	}
	if p.aborted.Load() {
		// Close finished while this record was being appended: nothing
		// will send it now.
		p.abortAll(ErrProducerClosed)
	}
	return &pr.fut
}

// SendSync sends r and waits for its result.
func (p *Producer) SendSync(ctx context.Context, r *Record) (RecordMetadata, error) {
	return p.Send(ctx, r, nil).Get(ctx)
}

// complete delivers the result, then drops the record and callback: a
// caller holding the Future keeps only the result alive.
func (pr *pendingRecord) complete(md RecordMetadata, err error) {
	pr.fut.set(md, err)
	cb := pr.cb
	pr.rec, pr.hdrs, pr.cb = nil, nil, nil
	if cb != nil {
		cb(md, err)
	}
}

func (p *Producer) send(ctx context.Context, pr *pendingRecord) error {
	p.mu.Lock()
	closing := p.closing
	p.mu.Unlock()
	if closing {
		return ErrProducerClosed
	}
	if err := p.txnSendable(); err != nil {
		return err
	}
	r := pr.rec
	// Blocking (metadata, memory) is bounded by max.block.ms; the bounded
	// context is made only when something has to wait.
	bctx := &blockCtx{parent: ctx, max: p.cfg.maxBlock}
	defer bctx.release()
	tm := p.cl.meta.Load().topics[r.Topic]
	if tm == nil || len(tm.partitions) == 0 || tm.err != nil {
		var err error
		if tm, err = p.cl.waitTopic(bctx.get(), r.Topic); err != nil {
			return err
		}
	}
	if len(r.Headers) > 0 {
		pr.hdrs = make([]records.Header, len(r.Headers))
		for i, h := range r.Headers {
			pr.hdrs[i] = records.Header{Key: h.Key, Value: h.Value}
		}
	}
	size := records.UpperBound(r.Key, r.Value, pr.hdrs)
	if size > p.cfg.maxRequestSize || int64(size) > p.cfg.bufferMemory {
		return fmt.Errorf("%w: %d bytes", ErrRecordTooLarge, size)
	}
	pr.appended = p.now()
	pr.ts = pr.appended.UnixMilli()
	if !r.Timestamp.IsZero() {
		pr.ts = r.Timestamp.UnixMilli()
	}
	ts := p.topic(r.Topic)
	view := tm.view
	prec := partitioner.Record{Key: r.Key, Value: r.Value}
	switch {
	case r.Partition != nil:
		if err := partitioner.Check(*r.Partition, view); err != nil {
			return err
		}
		return p.appendTo(bctx, ts, *r.Partition, pr, size)
	case ts.custom != nil:
		part := ts.custom.Partition(prec, view)
		if err := partitioner.Check(part, view); err != nil {
			return err
		}
		return p.appendCustom(bctx, ts, part, prec, view, pr, size)
	}
	if part, ok := ts.sticky.KeyedPartition(prec, view); ok {
		return p.appendTo(bctx, ts, part, pr, size)
	}
	return p.appendSticky(bctx, ts, view, pr, size)
}

// blockCtx is the caller's context bounded by max.block.ms, created on
// first use: most sends never wait and so never pay for a timer.
type blockCtx struct {
	parent context.Context
	max    time.Duration
	ctx    context.Context
	cancel context.CancelFunc
}

func (b *blockCtx) get() context.Context {
	if b.ctx == nil {
		b.ctx, b.cancel = context.WithTimeout(b.parent, b.max)
	}
	return b.ctx
}

func (b *blockCtx) release() {
	if b.cancel != nil {
		b.cancel()
	}
}

// topic returns the accumulator state of a topic, creating it.
func (p *Producer) topic(name string) *topicState {
	p.topicsMu.RLock()
	t := p.topics[name]
	p.topicsMu.RUnlock()
	if t != nil {
		return t
	}
	p.topicsMu.Lock()
	defer p.topicsMu.Unlock()
	if t = p.topics[name]; t != nil {
		return t
	}
	t = &topicState{name: name}
	if p.custom != nil {
		t.custom = p.custom.ForTopic(name)
	} else {
		pc := p.cfg.part
		pc.OnSwitch = func(from, to int32, produced int64) {
			t.switches.Add(1)
			p.m.switches.Add(1)
			if p.log.Enabled(context.Background(), slog.LevelDebug) {
				p.log.Debug("partitioner switch", logTopic, name, "from", from, logPartition, to, "produced", produced)
			}
		}
		t.sticky = partitioner.NewUniformSticky(pc, p.o.rand)
	}
	p.topics[name] = t
	return t
}

// appendSticky is the built-in path for records without key or partition,
// driving UniformSticky as Java's RecordAccumulator.append drives
// BuiltInPartitioner: bytes counted are the growth of the batch's size
// estimate; a switch deferred while the last batch is open completes once
// every batch is full; a new batch's memory is reserved outside the lock and
// the sticky choice re-checked after.
func (p *Producer) appendSticky(bctx *blockCtx, ts *topicState, view *partitioner.Topic, pr *pendingRecord, size int) error {
	var reserved int64
	defer func() { p.mem.release(reserved) }()
	for {
		s := ts.sticky.Peek(view)
		if s == nil {
			return fmt.Errorf("client: topic %q has no partitions", ts.name)
		}
		q := ts.queue(s.Partition())
		q.mu.Lock()
		if ts.sticky.Recheck(s, q.switchable(), view) {
			q.mu.Unlock()
			continue
		}
		if grew, ok := q.tryAppend(pr); ok {
			ts.sticky.Update(s, grew, q.switchable(), view)
			q.mu.Unlock()
			p.appended(q, false)
			return nil
		}
		q.mu.Unlock()
		if reserved == 0 {
			need := int64(max(p.cfg.batchSize, size))
			if err := p.mem.reserve(bctx, need); err != nil {
				return err
			}
			reserved = need
		}
		q.mu.Lock()
		if ts.sticky.Recheck(s, q.switchable(), view) {
			q.mu.Unlock()
			continue
		}
		grew, ok := q.tryAppend(pr)
		if !ok {
			grew = p.newBatch(q, pr, reserved, size)
			reserved = 0
		}
		ts.sticky.Update(s, grew, q.switchable(), view)
		q.mu.Unlock()
		p.appended(q, !ok)
		return nil
	}
}

// appendTo appends to a known partition (explicit or keyed).
func (p *Producer) appendTo(bctx *blockCtx, ts *topicState, part int32, pr *pendingRecord, size int) error {
	q := ts.queue(part)
	q.mu.Lock()
	if _, ok := q.tryAppend(pr); ok {
		q.mu.Unlock()
		p.appended(q, false)
		return nil
	}
	q.mu.Unlock()
	need := int64(max(p.cfg.batchSize, size))
	if err := p.mem.reserve(bctx, need); err != nil {
		return err
	}
	q.mu.Lock()
	_, ok := q.tryAppend(pr)
	if !ok {
		p.newBatch(q, pr, need, size)
	}
	q.mu.Unlock()
	if ok {
		p.mem.release(need)
	}
	p.appended(q, !ok)
	return nil
}

// appendCustom is the partitioner.class path: when the chosen partition
// needs a new batch, a BatchAware partitioner is asked once where the record
// goes instead (KIP-480's onNewBatch, without Java's second partition call).
func (p *Producer) appendCustom(bctx *blockCtx, ts *topicState, part int32, prec partitioner.Record, view *partitioner.Topic, pr *pendingRecord, size int) error {
	q := ts.queue(part)
	q.mu.Lock()
	if _, ok := q.tryAppend(pr); ok {
		q.mu.Unlock()
		p.appended(q, false)
		return nil
	}
	q.mu.Unlock()
	if ba, ok := ts.custom.(partitioner.BatchAware); ok {
		next := ba.OnNewBatch(prec, view, part)
		if err := partitioner.Check(next, view); err != nil {
			return err
		}
		part = next
	}
	return p.appendTo(bctx, ts, part, pr, size)
}

// newBatch opens a batch on q holding pr; q.mu is held. It returns the
// batch's size estimate, all of which counts as appended bytes.
func (p *Producer) newBatch(q *partQueue, pr *pendingRecord, mem int64, size int) int {
	limit := max(p.cfg.batchSize, size)
	var buf []byte
	if limit == p.cfg.batchSize {
		buf = p.mem.takeBuffer()
	}
	b := &batch{
		pq:          q,
		b:           records.NewBuilderIn(buf, p.cfg.codec, limit, q.topic.compressionRatio()),
		created:     p.now(),
		memBytes:    mem,
		seq:         -1,
		pid:         -1,
		leaderEpoch: -1,
		done:        make(chan struct{}),
	}
	b.lastAttempt = b.created
	grew, _ := b.b.TryAppend(pr.ts, pr.rec.Key, pr.rec.Value, pr.hdrs)
	// Room for as many records like this one as the batch can take, so
	// that appends do not regrow the slice.
	perBatch := (limit-records.HeaderSize)/max(grew-records.HeaderSize, 1) + 1
	b.recs = make([]*pendingRecord, 1, min(perBatch, 1024))
	b.recs[0] = pr
	q.batches = append(q.batches, b)
	p.mu.Lock()
	p.batchSeq++
	b.num = p.batchSeq
	p.incomplete[b] = struct{}{}
	p.mu.Unlock()
	return grew
}

// appended wakes the sender when a batch was created or may be full, so
// linger.ms=0 and full batches go out without waiting for a timer.
func (p *Producer) appended(q *partQueue, created bool) {
	if created || p.cfg.linger == 0 {
		p.wakeup()
		return
	}
	q.mu.Lock()
	full := len(q.batches) > 1 || (len(q.batches) == 1 && q.batches[0].b.IsFull())
	q.mu.Unlock()
	if full {
		p.wakeup()
	}
}

// Flush sends everything queued now and waits until all of it has a result,
// or ctx ends.
func (p *Producer) Flush(ctx context.Context) error {
	p.mu.Lock()
	p.flushing++
	upTo := p.batchSeq // batches created so far; splits keep their origin's number
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.flushing--
		p.mu.Unlock()
	}()
	p.wakeup()
	// A batch split after a MESSAGE_TOO_LARGE completes its own channel and
	// hands its records to new batches with its number: look again until
	// nothing old enough is left.
	for {
		var waits []chan struct{}
		p.mu.Lock()
		for b := range p.incomplete {
			if b.num <= upTo {
				waits = append(waits, b.done)
			}
		}
		p.mu.Unlock()
		if len(waits) == 0 {
			return nil
		}
		for _, ch := range waits {
			select {
			case <-ch:
			case <-ctx.Done():
				return fmt.Errorf("client: flush: %w", ctx.Err())
			}
		}
	}
}

// Close stops accepting records, sends what is queued and waits for the
// results until ctx ends; records still unresolved then fail with
// ErrProducerClosed. It always releases the producer's goroutines and
// connections.
func (p *Producer) Close(ctx context.Context) error {
	var err error
	p.once.Do(func() {
		p.mu.Lock()
		p.closing = true
		p.mu.Unlock()
		err = p.Flush(ctx)
		close(p.stop)
		p.cl.cancel() // ends a producer id request still waiting for a broker
		p.wg.Wait()
		p.aborted.Store(true)
		p.abortAll(ErrProducerClosed)
		p.cl.close()
		close(p.closed)
	})
	return err
}

// abortAll fails every batch still queued or in flight.
func (p *Producer) abortAll(err error) {
	p.mu.Lock()
	all := make([]*batch, 0, len(p.incomplete))
	for b := range p.incomplete {
		all = append(all, b)
	}
	p.mu.Unlock()
	for _, b := range all {
		q := b.pq
		q.mu.Lock()
		for i, x := range q.batches {
			if x == b {
				q.batches = slices.Delete(q.batches, i, i+1)
				break
			}
		}
		q.mu.Unlock()
		p.finish(b, -1, -1, err)
	}
}

// finish completes every record of b with the base offset (or err) and
// releases its memory. Safe to call once per batch; later calls do nothing.
func (p *Producer) finish(b *batch, baseOffset int64, logAppendMs int64, err error) {
	p.finishBatch(b, baseOffset, logAppendMs, err, false)
}

// finishBatch is finish; answered says a Produce response for b arrived,
// so its buffer can be kept for another batch if that response was to its
// only attempt: then no other request ever held the buffer, and this one
// was written before its answer came.
func (p *Producer) finishBatch(b *batch, baseOffset int64, logAppendMs int64, err error, answered bool) {
	q := b.pq
	q.mu.Lock()
	if b.finished {
		q.mu.Unlock()
		return
	}
	b.finished = true
	b.inflight = false
	for i, x := range q.inflight {
		if x == b {
			q.inflight = slices.Delete(q.inflight, i, i+1) // clears the vacated slot
			break
		}
	}
	wireBytes := len(b.wire)
	if answered && b.attempts == 0 {
		p.mem.keepBuffer(b.b.Recycle())
		b.wire = nil
	}
	q.mu.Unlock()
	p.mem.release(b.memBytes)
	now := p.now()
	topic := q.topic.name
	p.txnBatchFailed(err)
	if err == nil {
		p.m.partitionDone(topic, q.partition, len(b.recs), wireBytes)
	} else {
		p.m.recordErrors.Add(int64(len(b.recs)))
	}
	for i, pr := range b.recs {
		md := RecordMetadata{Topic: topic, Partition: q.partition, Offset: -1}
		if err == nil {
			if baseOffset >= 0 {
				md.Offset = baseOffset + int64(i)
			}
			ms := pr.ts
			if logAppendMs >= 0 {
				ms = logAppendMs
			}
			md.Timestamp = time.UnixMilli(ms)
			p.m.latency.observe(now.Sub(pr.appended))
		}
		pr.complete(md, err)
	}
	// Only now does the batch stop counting for Flush: callbacks run before
	// Flush returns, as in the Java client.
	p.mu.Lock()
	delete(p.incomplete, b)
	p.mu.Unlock()
	close(b.done)
}

// isRetriable says whether a produce error may succeed on another attempt.
func isRetriable(err error) bool {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Retriable
	}
	return true // transport errors
}

func float64frombits(v uint64) float64 { return math.Float64frombits(v) }

func (p *Producer) memAvail() int64 { return p.mem.available() }

// incompleteBatches lists batches without a result yet.
func (p *Producer) incompleteBatches() []*batch {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*batch, 0, len(p.incomplete))
	for b := range p.incomplete {
		out = append(out, b)
	}
	return out
}
