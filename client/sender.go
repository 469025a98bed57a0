package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/client/internal/records"
	"weir/client/internal/wire"
	"weir/client/partitioner"
)

// senderLoop is the producer's I/O goroutine: each pass decides which
// brokers have sendable batches, drains them into Produce requests and
// sleeps until the next batch can become ready, or until woken.
func (p *Producer) senderLoop() {
	defer p.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := p.runOnce(p.now())
		timer.Reset(max(next, 0))
		select {
		case <-p.stop:
			return
		case <-p.wake:
		case <-timer.C:
		}
	}
}

const maxIdle = 5 * time.Second

// runOnce is one sender pass at now. It returns how long until the next pass
// is needed if nothing wakes the sender earlier.
func (p *Producer) runOnce(now time.Time) time.Duration {
	if p.o.manual {
		p.cl.refreshIfWanted(p.cl.ctx)
	}
	m := p.cl.meta.Load()
	p.expire(now)
	if !p.producerIDReady() {
		return p.cfg.retryBackoff
	}
	p.txnAddPartitions()
	ready, next, unknown := p.ready(m, now)
	if unknown {
		p.cl.requestRefresh()
	}
	nowMs := now.UnixMilli()
	conns := map[int32]brokerConn{}
	for node := range ready {
		conn := p.cl.tryConn(node)
		p.mu.Lock()
		limit := p.cfg.maxInFlight
		if p.cfg.adaptiveInFlight && p.rtt.cautious(node) {
			limit = 1
		}
		busy := p.inflight[node] >= limit
		p.mu.Unlock()
		if conn == nil || busy {
			p.nodes.Observe(node, nowMs, false)
			continue
		}
		p.nodes.Observe(node, nowMs, true)
		conns[node] = conn
	}
	for node, conn := range conns {
		bs := p.drain(m, node, now)
		if len(bs) > 0 {
			p.sendBatches(node, conn, m, bs, now)
		}
	}
	return min(next, maxIdle)
}

// ready walks every partition queue: a leader whose partition has a
// sendable batch (full, lingered long enough, memory exhausted, flushing or
// closing; not backing off) is ready. It also feeds the adaptive partitioner
// with queue sizes, as Java's partitionReady does, and reports whether some
// queued partition has no known leader.
func (p *Producer) ready(m *metadata, now time.Time) (map[int32]bool, time.Duration, bool) {
	ready := map[int32]bool{}
	next := maxIdle
	unknown := false
	p.mu.Lock()
	force := p.flushing > 0 || p.closing
	slow := map[int32]bool{}
	if p.cfg.adaptiveInFlight {
		for n := range p.rtt {
			slow[n] = p.rtt.slow(n)
		}
	}
	p.mu.Unlock()
	force = force || p.mem.exhausted()
	p.topicsMu.RLock()
	topics := make([]*topicState, 0, len(p.topics))
	for _, t := range p.topics {
		topics = append(topics, t)
	}
	p.topicsMu.RUnlock()
	for _, t := range topics {
		tm := m.topics[t.name]
		qs := t.all()
		var loads []partitioner.PartitionQueue
		if t.sticky != nil {
			loads = make([]partitioner.PartitionQueue, 0, len(qs))
		}
		for _, q := range qs {
			if q == nil {
				continue
			}
			leader, epoch := m.leader(t.name, q.partition)
			q.slowLeader.Store(slow[leader])
			q.mu.Lock()
			if loads != nil {
				var bytes int64
				for _, b := range q.batches {
					bytes += int64(b.b.Estimated())
				}
				loads = append(loads, partitioner.PartitionQueue{Partition: q.partition, Batches: len(q.batches), Bytes: bytes})
			}
			if len(q.batches) == 0 {
				q.mu.Unlock()
				continue
			}
			if leader < 0 {
				unknown = true
				q.mu.Unlock()
				continue
			}
			if ready[leader] {
				q.mu.Unlock()
				continue
			}
			first := q.batches[0]
			first.observeLeaderEpoch(epoch)
			waited := now.Sub(first.lastAttempt)
			backingOff := first.attempts > 0 && waited < first.backoff && !first.leaderMovedForRetry()
			wait := p.cfg.linger
			if backingOff {
				wait = first.backoff
			}
			full := len(q.batches) > 1 || first.b.IsFull()
			if (full || waited >= wait || force) && !backingOff {
				ready[leader] = true
			} else {
				next = min(next, wait-waited)
			}
			q.mu.Unlock()
		}
		if t.sticky != nil && tm != nil && tm.view != nil {
			p.trackExclusions(t, tm.view, loads)
			t.sticky.UpdateLoad(tm.view, loads, p.nodes)
		}
	}
	return ready, next, unknown
}

// trackExclusions counts partitions entering the availability-timeout
// exclusion (queued data, leader stalled past the timeout), for metrics.
func (p *Producer) trackExclusions(t *topicState, view *partitioner.Topic, loads []partitioner.PartitionQueue) {
	timeout := p.cfg.part.AvailabilityTimeoutMs
	if timeout <= 0 || !p.cfg.part.Adaptive {
		return
	}
	for _, l := range loads {
		leader := view.Leader(l.Partition)
		out := leader >= 0 && l.Batches > 0 && p.nodes.Stalled(leader) > timeout
		q := t.queue(l.Partition)
		q.mu.Lock()
		if out && !q.excluded {
			p.m.exclusions.Add(1)
			p.log.Debug("partitioner exclusion", logTopic, t.name, logPartition, l.Partition, logNode, leader)
		}
		q.excluded = out
		q.mu.Unlock()
	}
}

// drain takes at most one batch from each partition led by node, rotating
// the starting partition between passes, until max.request.size.
func (p *Producer) drain(m *metadata, node int32, now time.Time) []*batch {
	var qs []*partQueue
	p.topicsMu.RLock()
	for _, t := range p.topics {
		for _, q := range t.all() {
			if q == nil {
				continue
			}
			if l, _ := m.leader(t.name, q.partition); l == node {
				qs = append(qs, q)
			}
		}
	}
	p.topicsMu.RUnlock()
	if len(qs) == 0 {
		return nil
	}
	slices.SortFunc(qs, func(a, b *partQueue) int {
		if a.topic.name != b.topic.name {
			if a.topic.name < b.topic.name {
				return -1
			}
			return 1
		}
		return int(a.partition - b.partition)
	})
	p.mu.Lock()
	start := p.drainIdx[node] % len(qs)
	p.drainIdx[node] = start + 1
	pid, epoch, idem := p.pid, p.epoch, p.idempotent
	p.mu.Unlock()
	var out []*batch
	size := 0
	for i := range qs {
		q := qs[(start+i)%len(qs)]
		if !p.txnDrainable(TopicPartition{Topic: q.topic.name, Partition: q.partition}) {
			continue
		}
		q.mu.Lock()
		if len(q.batches) == 0 {
			q.mu.Unlock()
			continue
		}
		first := q.batches[0]
		_, lepoch := m.leader(q.topic.name, q.partition)
		first.observeLeaderEpoch(lepoch)
		if first.attempts > 0 && now.Sub(first.lastAttempt) < first.backoff && !first.leaderMovedForRetry() {
			q.mu.Unlock()
			continue
		}
		est := first.b.Estimated()
		if len(out) > 0 && size+est > p.cfg.maxRequestSize {
			q.mu.Unlock()
			break
		}
		// A retried batch goes only when it is the oldest in flight: the
		// broker accepts sequences in order.
		if idem && first.seq >= 0 && len(q.inflight) > 0 && q.inflight[0] != first {
			q.mu.Unlock()
			continue
		}
		// Clear the slot: the backing array outlives the slice's start
		// and would keep drained batches (their buffers and records)
		// alive until it is next reallocated.
		q.batches[0] = nil
		q.batches = q.batches[1:]
		first.b.Close()
		if idem {
			if first.seq < 0 || first.pid != pid {
				if first.pid != pid && first.pid >= 0 {
					// A new producer id restarts sequences; re-number.
					first.seq = -1
				}
				if first.seq < 0 {
					first.seq = q.nextSeq
					q.nextSeq = int32((int64(q.nextSeq) + int64(first.b.Len())) & math.MaxInt32)
				}
				first.pid, first.epoch = pid, epoch
			}
			if !slices.Contains(q.inflight, first) {
				q.inflight = append(q.inflight, first)
				slices.SortFunc(q.inflight, func(a, b *batch) int { return int(a.seq - b.seq) })
			}
		}
		first.inflight = true
		first.lastAttempt = now
		q.mu.Unlock()
		size += est
		out = append(out, first)
	}
	return out
}

// sendBatches builds one Produce request for node and sends it.
func (p *Producer) sendBatches(node int32, conn brokerConn, m *metadata, bs []*batch, now time.Time) {
	v, ok := conn.Version(0)
	if !ok {
		for _, b := range bs {
			p.retryOrFail(b, fmt.Errorf("%w: node %d does not serve Produce", wire.ErrUnsupported, node), now)
		}
		return
	}
	useIDs := v >= 13
	for _, b := range bs {
		if t := m.topics[b.pq.topic.name]; t == nil || t.id == ([16]byte{}) {
			useIDs = false
		}
	}
	if !useIDs && v >= 13 {
		v = 12
	}
	if v >= 12 && !p.txnVersion2Active() {
		// Produce v12 means transaction version 2 to the broker: the
		// classic protocol stays below it.
		v = 11
	}
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(v)
	req.Acks = p.cfg.acks
	if p.txn != nil {
		req.TransactionID = &p.txn.id
	}
	req.TimeoutMillis = int32(p.cfg.requestTimeout / time.Millisecond)
	idx := map[string]int{}
	for _, b := range bs {
		prod := records.NoProducer
		if b.pid >= 0 {
			prod = records.Producer{ID: b.pid, Epoch: b.epoch, BaseSequence: b.seq, Transactional: p.txn != nil}
		}
		if b.wire == nil || b.wireFor != prod {
			// The first build writes the header into the batch's own
			// buffer; a rebuild (a new producer id or epoch) copies, as
			// an earlier request may still hold the first bytes.
			var raw []byte
			var ratio float64
			var err error
			if b.wire == nil {
				raw, ratio, err = b.b.Wire(prod, p.cfg.codecOpts)
			} else {
				raw, ratio, err = b.b.Build(nil, prod, p.cfg.codecOpts)
			}
			if err != nil {
				p.finish(b, -1, -1, err)
				continue
			}
			b.wire, b.wireFor = raw, prod
			if p.cfg.codec != records.None {
				t := b.pq.topic
				t.ratio.Store(math.Float64bits(records.UpdateRatio(t.compressionRatio(), ratio)))
			}
		}
		p.m.batchSent(len(b.wire))
		name := b.pq.topic.name
		i, ok := idx[name]
		if !ok {
			i = len(req.Topics)
			idx[name] = i
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = name
			if useIDs {
				rt.TopicID = m.topics[name].id
			}
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = b.pq.partition
		rp.Records = b.wire
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	if len(req.Topics) == 0 {
		return
	}
	p.mu.Lock()
	p.inflight[node]++
	p.mu.Unlock()
	noResp := p.cfg.acks == 0
	conn.Send(req, p.cfg.requestTimeout+5*time.Second, noResp, func(resp kmsg.Response, err error) {
		p.mu.Lock()
		p.inflight[node]--
		if err == nil {
			p.rtt.observe(node, p.now().Sub(now))
		}
		p.mu.Unlock()
		p.handleProduce(node, m, bs, resp, err)
		p.wakeup()
	})
}

// handleProduce completes, retries or fails every batch of one request.
func (p *Producer) handleProduce(node int32, m *metadata, bs []*batch, raw kmsg.Response, err error) {
	now := p.now()
	if err != nil {
		p.cl.requestRefresh()
		for _, b := range bs {
			p.retryOrFail(b, err, now)
		}
		return
	}
	if raw == nil { // acks=0: written is all we learn
		for _, b := range bs {
			p.finish(b, -1, -1, nil)
		}
		return
	}
	resp := raw.(*kmsg.ProduceResponse)
	type key struct {
		topic string
		part  int32
	}
	got := map[key]*kmsg.ProduceResponseTopicPartition{}
	var hints []leaderHint
	for ti := range resp.Topics {
		rt := &resp.Topics[ti]
		name := rt.Topic
		if rt.TopicID != ([16]byte{}) {
			if n, ok := m.byID[rt.TopicID]; ok {
				name = n
			} else if n, ok := p.cl.meta.Load().byID[rt.TopicID]; ok {
				name = n
			}
		}
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			got[key{name, rp.Partition}] = rp
			if (rp.ErrorCode == kerr.NotLeaderForPartition.Code || rp.ErrorCode == kerr.FencedLeaderEpoch.Code) &&
				rp.CurrentLeader.LeaderID >= 0 && rp.CurrentLeader.LeaderEpoch >= 0 {
				hints = append(hints, leaderHint{topic: name, partition: rp.Partition, leader: rp.CurrentLeader.LeaderID, epoch: rp.CurrentLeader.LeaderEpoch})
			}
		}
	}
	if len(hints) > 0 {
		eps := make([]nodeEndpoint, len(resp.Brokers))
		for i, b := range resp.Brokers {
			eps[i] = nodeEndpoint{id: b.NodeID, host: b.Host, port: b.Port, rack: b.Rack}
		}
		if n := p.cl.applyLeaderHints(hints, eps); n > 0 {
			p.m.leaderHints.Add(int64(n))
		}
	}
	for _, b := range bs {
		rp := got[key{b.pq.topic.name, b.pq.partition}]
		if rp == nil {
			p.retryOrFail(b, fmt.Errorf("client: node %d left partition %s/%d out of its Produce response", node, b.pq.topic.name, b.pq.partition), now)
			continue
		}
		perr := kerr.ErrorForCode(rp.ErrorCode)
		switch {
		case perr == nil:
			p.finishBatch(b, rp.BaseOffset, rp.LogAppendTime, nil, true)
		case errors.Is(perr, kerr.DuplicateSequenceNumber):
			p.finish(b, -1, -1, nil) // already written by an earlier attempt
		case (errors.Is(perr, kerr.MessageTooLarge) || errors.Is(perr, kerr.RecordListTooLarge)) && len(b.recs) > 1:
			p.split(b, now)
		case errors.Is(perr, kerr.OutOfOrderSequenceNumber) || errors.Is(perr, kerr.UnknownProducerID):
			p.sequenceError(b, perr, now)
		default:
			if !kerr.IsRetriable(perr) {
				p.finish(b, -1, -1, fmt.Errorf("client: produce to %s/%d: %w", b.pq.topic.name, b.pq.partition, perr))
				continue
			}
			if errors.Is(perr, kerr.NotLeaderForPartition) || errors.Is(perr, kerr.FencedLeaderEpoch) || errors.Is(perr, kerr.UnknownTopicOrPartition) {
				p.cl.requestRefresh()
			}
			p.retryOrFail(b, perr, now)
		}
	}
}

// split breaks a batch the broker found too large into batches of at most
// half its size (or batch.size) and puts them at the head of the queue.
// Nothing of the original was written, so with idempotence the pieces take
// over its sequence range in order and later batches keep theirs.
func (p *Producer) split(b *batch, now time.Time) {
	q := b.pq
	limit := max(1, min(p.cfg.batchSize, b.b.Estimated()/2))
	ratio := q.topic.compressionRatio()
	var parts []*batch
	var cur *batch
	for _, pr := range b.recs {
		if cur != nil {
			if _, ok := cur.b.TryAppend(pr.ts, pr.rec.Key, pr.rec.Value, pr.hdrs); ok {
				cur.recs = append(cur.recs, pr)
				continue
			}
		}
		cur = &batch{
			pq: q, created: b.created, num: b.num, seq: -1, pid: -1, epoch: -1,
			leaderEpoch: b.leaderEpoch, attempts: b.attempts, attemptsAtMove: b.attemptsAtMove,
			lastAttempt: now, done: make(chan struct{}),
			b: records.NewBuilder(p.cfg.codec, max(limit, records.UpperBound(pr.rec.Key, pr.rec.Value, pr.hdrs)), ratio),
		}
		cur.b.TryAppend(pr.ts, pr.rec.Key, pr.rec.Value, pr.hdrs)
		cur.recs = append(cur.recs, pr)
		parts = append(parts, cur)
	}
	for _, nb := range parts {
		nb.b.Close()
	}
	q.mu.Lock()
	if b.finished {
		q.mu.Unlock()
		return
	}
	b.finished, b.inflight = true, false
	if i := slices.Index(q.inflight, b); i >= 0 {
		q.inflight = slices.Delete(q.inflight, i, i+1)
	}
	if b.seq >= 0 {
		seq := b.seq
		for _, nb := range parts {
			nb.seq, nb.pid, nb.epoch = seq, b.pid, b.epoch
			seq += int32(nb.b.Len())
		}
		q.inflight = append(q.inflight, parts...)
		slices.SortFunc(q.inflight, func(x, y *batch) int { return int(x.seq - y.seq) })
	}
	i := 0
	for i < len(q.batches) && q.batches[i].seq >= 0 && (b.seq < 0 || q.batches[i].seq < b.seq) {
		i++
	}
	q.batches = slices.Insert(q.batches, i, parts...)
	q.mu.Unlock()
	parts[0].memBytes = b.memBytes
	p.mu.Lock()
	delete(p.incomplete, b)
	for _, nb := range parts {
		p.incomplete[nb] = struct{}{}
	}
	p.mu.Unlock()
	p.m.splits.Add(1)
	p.log.Debug("batch split after a size rejection", logTopic, q.topic.name, logPartition, q.partition, "records", len(b.recs), "batches", len(parts))
	close(b.done)
}

// sequenceError handles OUT_OF_ORDER_SEQUENCE_NUMBER and UNKNOWN_PRODUCER_ID.
// Either way the batch was not written. When an earlier batch of the
// partition is still unresolved, this one was rejected only because that one
// failed first: retry it after. Otherwise the broker's sequence state and
// ours disagree, which happens when a partition's first batch fails (say,
// NOT_LEADER_OR_FOLLOWER on a new topic) while a later one, pipelined behind
// it, is accepted: a broker takes any sequence from a producer it has no
// state for. As the Java client does with an epoch bump, start over: a new
// producer id, sequences from 0, and the batch retried at the head of its
// queue (records of the two batches then land in the other order).
func (p *Producer) sequenceError(b *batch, err error, now time.Time) {
	q := b.pq
	q.mu.Lock()
	earlier := len(q.inflight) > 0 && q.inflight[0] != b
	q.mu.Unlock()
	if earlier {
		p.retry(b, err, now, true)
		return
	}
	if p.txn != nil {
		// A transaction cannot take a new producer id midway: the
		// batch fails and the transaction must abort.
		p.finish(b, -1, -1, err)
		return
	}
	p.resetProducerID()
	p.retry(b, err, now, true)
}

// retryOrFail retries b if err is retriable, else fails it.
func (p *Producer) retryOrFail(b *batch, err error, now time.Time) {
	p.retry(b, err, now, false)
}

// retry puts b back at the head of its queue (in sequence order) with an
// exponential backoff, or fails it once retries or delivery.timeout.ms are
// exhausted or err is final. force retries even an error not marked
// retriable, for a batch known not to be written.
func (p *Producer) retry(b *batch, err error, now time.Time, force bool) {
	q := b.pq
	q.mu.Lock()
	if b.finished {
		q.mu.Unlock()
		return
	}
	if b.attempts+1 > p.cfg.retries || now.Sub(b.created) >= p.cfg.deliveryTimeout || !(force || isRetriable(err)) {
		q.mu.Unlock()
		if now.Sub(b.created) >= p.cfg.deliveryTimeout {
			err = fmt.Errorf("%w: last error: %w", ErrDeliveryTimeout, err)
		}
		p.finish(b, -1, -1, err)
		return
	}
	b.attempts++
	b.inflight = false
	b.lastAttempt = now
	b.backoff = backoff(p.cfg.retryBackoff, p.cfg.retryBackoffMax, b.attempts, p.o.rand)
	// Insert before the first batch that has no sequence or a later one.
	i := 0
	for i < len(q.batches) && q.batches[i].seq >= 0 && (b.seq < 0 || q.batches[i].seq < b.seq) {
		i++
	}
	q.batches = slices.Insert(q.batches, i, b)
	q.mu.Unlock()
	p.m.retries.Add(1)
	if p.log.Enabled(context.Background(), slog.LevelDebug) {
		p.log.Debug("batch retry", logTopic, q.topic.name, logPartition, q.partition, "seq", b.seq, "attempt", b.attempts, "backoff", b.backoff, logErr, err)
	}
}

// expire fails queued batches older than delivery.timeout.ms. In-flight
// batches are bounded by request.timeout.ms and decided when they return.
func (p *Producer) expire(now time.Time) {
	var dead []*batch
	p.topicsMu.RLock()
	for _, t := range p.topics {
		for _, q := range t.all() {
			if q == nil {
				continue
			}
			q.mu.Lock()
			keep := q.batches[:0]
			for _, b := range q.batches {
				if now.Sub(b.created) >= p.cfg.deliveryTimeout {
					dead = append(dead, b)
				} else {
					keep = append(keep, b)
				}
			}
			clear(q.batches[len(keep):])
			q.batches = keep
			q.mu.Unlock()
		}
	}
	p.topicsMu.RUnlock()
	for _, b := range dead {
		p.finish(b, -1, -1, fmt.Errorf("%w: %d records for %s/%d", ErrDeliveryTimeout, len(b.recs), b.pq.topic.name, b.pq.partition))
	}
}

// producerIDReady reports whether batches may be drained: always when not
// idempotent; otherwise once InitProducerId has answered. It starts the
// request when needed.
func (p *Producer) producerIDReady() bool {
	if p.txn != nil {
		// InitTransactions gets a transactional producer's id.
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.pidState == pidReady
	}
	p.mu.Lock()
	if !p.idempotent || p.pidState == pidReady {
		p.mu.Unlock()
		return true
	}
	if p.pidState == pidInitializing {
		p.mu.Unlock()
		return false
	}
	if p.pidState == pidFailed {
		err := p.pidErr
		p.mu.Unlock()
		p.abortAll(err)
		return false
	}
	p.pidState = pidInitializing
	p.mu.Unlock()
	if p.o.manual {
		p.initProducerID()
		return p.producerIDReady()
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.initProducerID()
		p.wakeup()
	}()
	return false
}

// initProducerID asks any broker for a producer id and epoch. If the broker
// does not serve InitProducerId and idempotence was only on by default, the
// producer continues without it (logged); if the user asked for it, records
// fail.
func (p *Producer) initProducerID() {
	ctx, cancel := context.WithTimeout(p.cl.ctx, p.cfg.maxBlock)
	defer cancel()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionTimeoutMillis = int32(p.cfg.txnTimeout / time.Millisecond)
	req.ProducerID, req.ProducerEpoch = -1, -1
	for attempt := 1; ; attempt++ {
		raw, _, err := p.cl.doAny(ctx, req)
		if err == nil {
			resp := raw.(*kmsg.InitProducerIDResponse)
			err = kerr.ErrorForCode(resp.ErrorCode)
			if err == nil {
				p.mu.Lock()
				p.pid, p.epoch, p.pidState = resp.ProducerID, resp.ProducerEpoch, pidReady
				p.mu.Unlock()
				p.log.Info("producer id assigned", "producer_id", resp.ProducerID, logEpoch, resp.ProducerEpoch)
				return
			}
		}
		if errors.Is(err, wire.ErrUnsupported) {
			p.mu.Lock()
			if p.cfg.idempotentSet {
				p.pidState, p.pidErr = pidFailed, fmt.Errorf("client: enable.idempotence=true but the broker does not serve InitProducerId: %w", err)
			} else {
				p.idempotent, p.pidState = false, pidReady
				p.log.Warn("broker does not serve InitProducerId: producing without idempotence", logErr, err)
			}
			p.mu.Unlock()
			return
		}
		if ctx.Err() != nil || (err != nil && !isRetriable(err)) {
			p.mu.Lock()
			p.pidState, p.pidErr = pidFailed, fmt.Errorf("client: InitProducerId: %w", err)
			p.mu.Unlock()
			return
		}
		t := time.NewTimer(backoff(p.cfg.retryBackoff, p.cfg.retryBackoffMax, attempt, p.o.rand))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

// resetProducerID drops the producer id after a sequence error the broker
// will not forgive; the next pass fetches a new one, and every partition's
// sequences restart from 0.
func (p *Producer) resetProducerID() {
	p.mu.Lock()
	if p.pidState != pidReady || !p.idempotent {
		p.mu.Unlock()
		return
	}
	p.pidState, p.pid, p.epoch = pidNone, -1, -1
	p.mu.Unlock()
	p.resetSequences()
	p.log.Warn("producer id reset after a sequence error")
}
