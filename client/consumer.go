package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/client/internal/records"
	"weir/internal/fetchsession"
)

// ConsumerRecord is one consumed record.
type ConsumerRecord struct {
	Topic       string
	Partition   int32
	Offset      int64
	Timestamp   time.Time
	Key, Value  []byte
	Headers     []Header
	LeaderEpoch int32
}

// RebalanceListener receives assignment changes of a group consumer. The
// callbacks run inside Poll (or Close), on the caller's goroutine, so they
// may commit offsets. Any of them may be nil.
type RebalanceListener struct {
	// OnAssigned is called with partitions added to the assignment.
	OnAssigned func(ctx context.Context, c *Consumer, tps []TopicPartition)
	// OnRevoked is called before partitions are given up in a rebalance;
	// committing here keeps their progress.
	OnRevoked func(ctx context.Context, c *Consumer, tps []TopicPartition)
	// OnLost is called when partitions were taken away without a chance to
	// commit (the member was fenced or timed out).
	OnLost func(ctx context.Context, c *Consumer, tps []TopicPartition)
}

// Errors of the consumer.
var (
	ErrNoOffset       = errors.New("client: no committed offset and auto.offset.reset=none")
	ErrNoGroup        = errors.New("client: this needs group.id")
	ErrNotAssigned    = errors.New("client: partition is not assigned")
	ErrCommitFailed   = errors.New("client: commit failed: the group rebalanced; the partitions may be owned by another member now")
	ErrConsumerClosed = errors.New("client: consumer is closed")
)

// Consumer reads records, as a member of a consumer group (Subscribe) or
// from partitions it is given (Assign). Like the Java KafkaConsumer it is
// meant for one goroutine: Poll, Commit, Seek, Pause and friends must not
// run concurrently with each other. Fetch responses and group heartbeats
// are handled by background goroutines that Close stops.
type Consumer struct {
	cfg consumerConfig
	o   options
	log *slog.Logger
	cl  *core

	group      groupMember // nil for an assign-only consumer
	plainCoord *coordinator
	listener   *RebalanceListener

	mu       sync.Mutex // guards parts and fetch bookkeeping (touched by fetch callbacks)
	parts    map[TopicPartition]*partState
	fetching map[int32]bool // node -> a fetch is outstanding
	sessions map[int32]*fetchSession
	// Fetch requests sent full and incremental, and the partitions the
	// incremental ones named (for tests).
	fullFetches, incrementalFetches, incrementalNamed atomic.Uint64
	fetchErr                                          error         // a fatal error seen by a fetch, returned by the next Poll
	drainStart                                        int           // rotates the partition Poll serves first
	data                                              chan struct{} // signalled when a fetch completes

	lastAutoCommit time.Time
	lastPoll       atomic.Int64 // unix nanos of the last Poll, for max.poll.interval.ms
	closed         bool
	wg             sync.WaitGroup
}

type partState struct {
	tp        TopicPartition
	position  int64 // next offset to hand to the application; -1 unknown
	fetchAt   int64 // next offset to fetch (position plus what is buffered)
	paused    bool
	inFlight  bool
	needInit  bool // position must come from the committed offset or the reset policy
	needReset bool // position must come from the reset policy (out of range)
	buffered  []*ConsumerRecord
	epoch     int32 // leader epoch of the last record returned, -1 unknown
}

// NewConsumer validates props and returns a consumer; it connects lazily.
func NewConsumer(props map[string]string, opts ...Option) (*Consumer, error) {
	o := buildOptions(opts)
	cfg, err := parseConsumerConfig(props)
	if err != nil {
		return nil, err
	}
	c := &Consumer{
		cfg:      cfg,
		o:        o,
		log:      o.logger,
		parts:    map[TopicPartition]*partState{},
		fetching: map[int32]bool{},
		sessions: map[int32]*fetchSession{},
		data:     make(chan struct{}, 1),
	}
	c.cl = newCore(cfg.commonConfig, o, cfg.autoCreateTopics)
	return c, nil
}

// Subscribe joins the group (group.id) for topics. The assignment arrives
// during later Polls.
func (c *Consumer) Subscribe(topics []string, l *RebalanceListener) error {
	if c.cfg.groupID == "" {
		return ErrNoGroup
	}
	if c.closed {
		return ErrConsumerClosed
	}
	c.listener = l
	c.cl.setInterest(topics, false)
	if c.group == nil {
		if c.cfg.protocol == "consumer" {
			c.group = newConsumerGroup(c, topics)
		} else {
			c.group = newClassicGroup(c, topics)
		}
		return nil
	}
	c.group.subscribe(topics)
	return nil
}

// Assign consumes exactly tps, without group membership. Positions start
// from the committed offsets when group.id is set, else by auto.offset.reset.
func (c *Consumer) Assign(tps []TopicPartition) error {
	if c.group != nil {
		return errors.New("client: Assign on a subscribed consumer")
	}
	topics := map[string]bool{}
	for _, tp := range tps {
		topics[tp.Topic] = true
	}
	var names []string
	for t := range topics {
		names = append(names, t)
	}
	c.cl.setInterest(names, false)
	c.setAssignment(tps)
	return nil
}

// setAssignment replaces the assigned set, keeping state of partitions kept.
func (c *Consumer) setAssignment(tps []TopicPartition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := make(map[TopicPartition]*partState, len(tps))
	for _, tp := range tps {
		if ps := c.parts[tp]; ps != nil {
			next[tp] = ps
			continue
		}
		next[tp] = &partState{tp: tp, position: -1, fetchAt: -1, needInit: true, epoch: -1}
	}
	c.parts = next
}

// addPartitions and removePartitions change the assignment incrementally.
func (c *Consumer) addPartitions(tps []TopicPartition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tp := range tps {
		if c.parts[tp] == nil {
			c.parts[tp] = &partState{tp: tp, position: -1, fetchAt: -1, needInit: true, epoch: -1}
		}
	}
}

func (c *Consumer) removePartitions(tps []TopicPartition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tp := range tps {
		delete(c.parts, tp)
	}
}

// Assignment lists the assigned partitions, sorted.
func (c *Consumer) Assignment() []TopicPartition {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]TopicPartition, 0, len(c.parts))
	for tp := range c.parts {
		out = append(out, tp)
	}
	sortTPs(out)
	return out
}

func sortTPs(tps []TopicPartition) {
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
}

// Poll returns the next records, waiting until some arrive or ctx ends (an
// ended ctx is not an error: Poll then returns what it has, possibly
// nothing). Group work (joining, rebalance callbacks, auto-commit) happens
// inside Poll, as in the Java client.
func (c *Consumer) Poll(ctx context.Context) ([]*ConsumerRecord, error) {
	if c.closed {
		return nil, ErrConsumerClosed
	}
	c.lastPoll.Store(time.Now().UnixNano())
	for {
		if c.group != nil {
			if err := c.group.poll(ctx); err != nil {
				if ctx.Err() != nil {
					return nil, nil
				}
				return nil, err
			}
		}
		c.maybeAutoCommit(ctx)
		if err := c.initPositions(ctx); err != nil {
			if ctx.Err() != nil {
				return nil, nil
			}
			if errors.Is(err, ErrNoOffset) || !isRetriable(err) {
				return nil, err
			}
			// A transient failure (a leader moving, a connection lost):
			// try again after the backoff, within this Poll.
			c.log.Debug("finding positions failed, retrying", logErr, err)
			t := time.NewTimer(c.cfg.retryBackoff)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, nil
			}
			continue
		}
		if recs, err := c.drainBuffered(); len(recs) > 0 || err != nil {
			return recs, err
		}
		// A partition whose leader is not known yet (a Seek right after
		// Assign, before the topic's metadata came) is fetched once the
		// metadata changes: wait for that too.
		metaChanged := c.cl.changedCh()
		if !c.sendFetches() {
			metaChanged = nil
		}
		var groupWake <-chan struct{}
		if c.group != nil {
			groupWake = c.group.wake()
		}
		select {
		case <-c.data:
		case <-groupWake:
		case <-metaChanged:
		case <-ctx.Done():
			return nil, nil
		}
	}
}

// drainBuffered hands out up to max.poll.records buffered records, advancing
// positions past them.
func (c *Consumer) drainBuffered() ([]*ConsumerRecord, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.fetchErr; err != nil {
		c.fetchErr = nil
		return nil, err
	}
	var out []*ConsumerRecord
	tps := make([]TopicPartition, 0, len(c.parts))
	for tp, ps := range c.parts {
		if len(ps.buffered) > 0 && !ps.paused {
			tps = append(tps, tp)
		}
	}
	sortTPs(tps)
	// Start after the partition served first last time, so one busy
	// partition cannot keep the others waiting.
	if len(tps) > 0 {
		c.drainStart++
		k := c.drainStart % len(tps)
		tps = append(tps[k:], tps[:k]...)
	}
	for _, tp := range tps {
		ps := c.parts[tp]
		n := min(len(ps.buffered), c.cfg.maxPollRecords-len(out))
		if n == 0 {
			break
		}
		out = append(out, ps.buffered[:n]...)
		last := ps.buffered[n-1]
		ps.position, ps.epoch = last.Offset+1, last.LeaderEpoch
		ps.buffered = ps.buffered[n:]
		if len(ps.buffered) == 0 {
			ps.buffered = nil
			ps.position = max(ps.position, ps.fetchAt)
		}
	}
	return out, nil
}

// initPositions sets positions that are unknown: from the committed offset
// (with a group), otherwise from auto.offset.reset.
func (c *Consumer) initPositions(ctx context.Context) error {
	c.mu.Lock()
	var need, reset []TopicPartition
	for tp, ps := range c.parts {
		switch {
		case ps.needReset:
			reset = append(reset, tp)
		case ps.needInit:
			need = append(need, tp)
		}
	}
	c.mu.Unlock()
	if len(need)+len(reset) == 0 {
		return nil
	}
	committed := map[TopicPartition]int64{}
	if c.cfg.groupID != "" && len(need) > 0 {
		var err error
		if committed, err = c.Committed(ctx, need); err != nil {
			return err
		}
	}
	c.mu.Lock()
	for _, tp := range need {
		ps := c.parts[tp]
		if ps == nil {
			continue
		}
		if off, ok := committed[tp]; ok && off >= 0 {
			ps.position, ps.fetchAt, ps.needInit = off, off, false
			continue
		}
		reset = append(reset, tp)
	}
	c.mu.Unlock()
	return c.resetPositions(ctx, reset)
}

// resetPositions applies auto.offset.reset to tps.
func (c *Consumer) resetPositions(ctx context.Context, tps []TopicPartition) error {
	if len(tps) == 0 {
		return nil
	}
	spec := OffsetLatest
	switch c.cfg.reset {
	case "earliest":
		spec = OffsetEarliest
	case "none":
		return fmt.Errorf("%w: %v", ErrNoOffset, tps)
	}
	return c.seekToSpec(ctx, tps, spec)
}

func (c *Consumer) seekToSpec(ctx context.Context, tps []TopicPartition, spec int64) error {
	byTopic := map[string][]int32{}
	for _, tp := range tps {
		byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
	}
	for topic, parts := range byTopic {
		if _, err := c.cl.waitTopic(ctx, topic); err != nil {
			return err
		}
		offs, err := listOffsets(ctx, c.cl, topic, parts, spec, c.cfg.isolation)
		if err != nil {
			c.cl.requestRefresh()
			return err
		}
		c.mu.Lock()
		for p, lo := range offs {
			ps := c.parts[TopicPartition{topic, p}]
			if ps == nil || lo.Err != nil {
				continue
			}
			ps.position, ps.fetchAt, ps.needInit, ps.needReset, ps.buffered = lo.Offset, lo.Offset, false, false, nil
		}
		c.mu.Unlock()
	}
	return nil
}

// sendFetches sends one Fetch per leader that has fetchable partitions and
// no fetch outstanding. It reports whether a fetchable partition had no
// known leader (a metadata refresh is asked for).
func (c *Consumer) sendFetches() (leaderless bool) {
	m := c.cl.meta.Load()
	byNode := map[int32][]*partState{}
	c.mu.Lock()
	for _, ps := range c.parts {
		if ps.paused || ps.needInit || ps.needReset || ps.inFlight || len(ps.buffered) > 0 || ps.fetchAt < 0 {
			continue
		}
		leader, _ := m.leader(ps.tp.Topic, ps.tp.Partition)
		if leader < 0 {
			c.cl.requestRefresh()
			leaderless = true
			continue
		}
		if c.fetching[leader] {
			continue
		}
		byNode[leader] = append(byNode[leader], ps)
	}
	for node := range byNode {
		c.fetching[node] = true
		for _, ps := range byNode[node] {
			ps.inFlight = true
		}
	}
	c.mu.Unlock()
	for node, pss := range byNode {
		conn := c.cl.tryConn(node)
		if conn == nil {
			c.fetchDone(node, pss)
			if c.o.manual {
				continue
			}
			c.wg.Add(1)
			go func() { // wait briefly for the dial so Poll does not spin
				defer c.wg.Done()
				t := time.NewTimer(c.cfg.reconnectBackoff + 10*time.Millisecond)
				defer t.Stop()
				select {
				case <-t.C:
				case <-c.cl.ctx.Done():
				}
				c.signal()
			}()
			continue
		}
		c.fetch(node, conn, m, pss)
	}
	return leaderless
}

func (c *Consumer) signal() {
	select {
	case c.data <- struct{}{}:
	default:
	}
}

func (c *Consumer) fetchDone(node int32, pss []*partState) {
	c.mu.Lock()
	c.fetching[node] = false
	for _, ps := range pss {
		ps.inFlight = false
	}
	c.mu.Unlock()
}

// fetchSession is the consumer's fetch session (KIP-227) with one
// broker: a partition is keyed by its name and, from Fetch v13, its
// topic id (a topic deleted and made again is another partition to the
// session).
type fetchSession = fetchsession.Client[fetchsession.TopicRef, struct{}]

// sessionKey is a partition in a fetch session: its topic's name and,
// from Fetch v13, id.
type sessionKey = fetchsession.Key[fetchsession.TopicRef]

// fetch sends one Fetch to node in its fetch session: pss are every
// partition fetchable from node now; the session is told to hold exactly
// those, so the request names only the ones whose position or leader
// epoch changed and forgets the ones no longer fetched here (buffered,
// paused, moved, unassigned).
func (c *Consumer) fetch(node int32, conn brokerConn, m *metadata, pss []*partState) {
	v, _ := conn.Version(1)
	for _, ps := range pss {
		if t := m.topics[ps.tp.Topic]; t == nil || t.id == ([16]byte{}) {
			v = min(v, 12)
		}
	}
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(v)
	req.ReplicaID = -1
	req.ReplicaState.ID = -1
	req.MaxWaitMillis = int32(c.cfg.fetchMaxWait / time.Millisecond)
	req.MinBytes = c.cfg.fetchMinBytes
	req.MaxBytes = c.cfg.fetchMaxBytes
	req.IsolationLevel = c.cfg.isolation
	req.Rack = c.cfg.rack
	key := func(tp TopicPartition) sessionKey {
		k := sessionKey{Topic: fetchsession.TopicRef{Name: tp.Topic}, Partition: tp.Partition}
		if t := m.topics[tp.Topic]; t != nil && v >= 13 {
			k.Topic.ID = t.id
		}
		return k
	}
	c.mu.Lock()
	cl := c.sessions[node]
	if cl == nil {
		cl = fetchsession.NewClient[fetchsession.TopicRef, struct{}]()
		c.sessions[node] = cl
	}
	cl.SetSessionless(v < 7)
	wanted := make(map[sessionKey]bool, len(pss))
	for _, ps := range pss {
		_, epoch := m.leader(ps.tp.Topic, ps.tp.Partition)
		k := key(ps.tp)
		wanted[k] = true
		cl.Want(k, fetchsession.PartitionData{FetchOffset: ps.fetchAt, LogStartOffset: -1, MaxBytes: c.cfg.partitionMax, LeaderEpoch: epoch, LastFetchedEpoch: -1})
	}
	var drop []sessionKey
	cl.Range(func(k sessionKey, _ *fetchsession.Partition[struct{}]) bool {
		if !wanted[k] {
			drop = append(drop, k)
		}
		return true
	})
	for _, k := range drop {
		cl.Delete(k)
	}
	pl := cl.Next()
	if pl.Full {
		c.fullFetches.Add(1)
	} else {
		c.incrementalFetches.Add(1)
		c.incrementalNamed.Add(uint64(len(pl.Send)))
	}
	rb := fetchsession.NewRequestBuilder(req, pl)
	for _, k := range pl.Send {
		rb.Add(k.Topic, k.Partition, cl.Data(cl.Get(k)))
	}
	for _, k := range pl.Forget {
		rb.Forget(k.Topic, k.Partition)
	}
	c.mu.Unlock()
	timeout := c.cfg.requestTimeout + c.cfg.fetchMaxWait
	conn.Send(req, timeout, false, func(raw kmsg.Response, err error) {
		c.handleFetch(node, m, cl, pl, v, raw, err)
		c.fetchDone(node, pss)
		c.signal()
	})
}

// handleFetch buffers the records of a fetch response. It runs on the
// connection's reader goroutine.
func (c *Consumer) handleFetch(node int32, m *metadata, cl *fetchSession, pl fetchsession.Plan[sessionKey], version int16, raw kmsg.Response, err error) {
	if err != nil {
		c.log.Debug("fetch failed", logNode, node, logErr, err)
		c.mu.Lock()
		cl.Failed()
		c.mu.Unlock()
		c.cl.requestRefresh()
		return
	}
	resp := raw.(*kmsg.FetchResponse)
	// Each answered partition's key and the offset the session fetched
	// it from.
	var keys []sessionKey
	for _, rt := range resp.Topics {
		name := rt.Topic
		id := [16]byte{}
		if version >= 13 {
			name, id = m.byID[rt.TopicID], rt.TopicID
		}
		for _, rp := range rt.Partitions {
			keys = append(keys, sessionKey{Topic: fetchsession.TopicRef{ID: id, Name: name}, Partition: rp.Partition})
		}
	}
	c.mu.Lock()
	usable := cl.Answered(pl, resp.ErrorCode, resp.SessionID, keys)
	offsets := make([]int64, len(keys))
	for i, k := range keys {
		offsets[i] = -1
		if p := cl.Get(k); p != nil {
			offsets[i] = cl.Data(p).FetchOffset
		}
	}
	c.mu.Unlock()
	if !usable {
		c.log.Debug("fetch session answer not used", logNode, node, logErr, kerr.ErrorForCode(resp.ErrorCode))
		return
	}
	var hints []leaderHint
	var reset []TopicPartition
	resetFrom := map[TopicPartition]int64{}
	i := -1
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			i++
			tp, from := TopicPartition{keys[i].Topic.Name, keys[i].Partition}, offsets[i]
			if tp.Topic == "" || from < 0 {
				continue // a partition dropped from the session meanwhile
			}
			perr := kerr.ErrorForCode(rp.ErrorCode)
			switch {
			case perr == nil:
			case errors.Is(perr, kerr.OffsetOutOfRange):
				reset = append(reset, tp)
				resetFrom[tp] = from
				continue
			case errors.Is(perr, kerr.NotLeaderForPartition) || errors.Is(perr, kerr.FencedLeaderEpoch):
				if rp.CurrentLeader.LeaderID >= 0 && rp.CurrentLeader.LeaderEpoch >= 0 {
					hints = append(hints, leaderHint{topic: tp.Topic, partition: rp.Partition, leader: rp.CurrentLeader.LeaderID, epoch: rp.CurrentLeader.LeaderEpoch})
				}
				c.cl.requestRefresh()
				continue
			case kerr.IsRetriable(perr):
				c.cl.requestRefresh()
				continue
			default:
				c.mu.Lock()
				c.fetchErr = fmt.Errorf("client: fetch %s/%d: %w", tp.Topic, rp.Partition, perr)
				c.mu.Unlock()
				continue
			}
			c.buffer(tp, from, &rp)
		}
	}
	if len(hints) > 0 {
		eps := make([]nodeEndpoint, len(resp.Brokers))
		for i, b := range resp.Brokers {
			eps[i] = nodeEndpoint{id: b.NodeID, host: b.Host, port: b.Port, rack: b.Rack}
		}
		c.cl.applyLeaderHints(hints, eps)
	}
	if len(reset) > 0 {
		c.mu.Lock()
		for _, tp := range reset {
			ps := c.parts[tp]
			if ps == nil || ps.fetchAt != resetFrom[tp] {
				continue
			}
			if c.cfg.reset == "none" {
				c.fetchErr = fmt.Errorf("%w: offset %d out of range for %s/%d", ErrNoOffset, resetFrom[tp], tp.Topic, tp.Partition)
				continue
			}
			// Out of range: apply auto.offset.reset directly; the committed
			// offset is what led here.
			ps.position, ps.fetchAt, ps.buffered, ps.needReset = -1, -1, nil, true
		}
		c.mu.Unlock()
	}
}

// buffer decodes one partition's records into its buffer, unless the
// position moved (a seek) while the fetch was out.
func (c *Consumer) buffer(tp TopicPartition, from int64, rp *kmsg.FetchResponseTopicPartition) {
	var out []*ConsumerRecord
	next := from
	aborted := abortedTracker{list: rp.AbortedTransactions}
	err := records.Decode(rp.RecordBatches, 256<<20, func(b *records.Batch) {
		if b.LastOffset < from {
			return
		}
		next = max(next, b.LastOffset+1)
		if c.cfg.isolation == 1 && aborted.skip(b) {
			return
		}
		if b.Control {
			return
		}
		for _, r := range b.Records {
			if r.Offset < from {
				continue
			}
			cr := &ConsumerRecord{Topic: tp.Topic, Partition: tp.Partition, Offset: r.Offset, Timestamp: time.UnixMilli(r.Timestamp), Key: r.Key, Value: r.Value, LeaderEpoch: r.LeaderEpoch}
			for _, h := range r.Headers {
				cr.Headers = append(cr.Headers, Header{Key: h.Key, Value: h.Value})
			}
			out = append(out, cr)
		}
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	ps := c.parts[tp]
	if ps == nil || ps.fetchAt != from {
		return
	}
	if err != nil {
		c.fetchErr = fmt.Errorf("client: fetch %s/%d at %d: %w", tp.Topic, tp.Partition, from, err)
		return
	}
	ps.buffered = append(ps.buffered, out...)
	ps.fetchAt = next
	if len(ps.buffered) == 0 {
		ps.position = next // only control or aborted batches: skip past them
	}
}

// abortedTracker implements read_committed filtering: a transactional batch
// is skipped when its producer has an aborted transaction that started at or
// before it and whose abort marker has not been passed yet.
type abortedTracker struct {
	list   []kmsg.FetchResponseTopicPartitionAbortedTransaction
	active map[int64]bool
}

func (a *abortedTracker) skip(b *records.Batch) bool {
	for len(a.list) > 0 && a.list[0].FirstOffset <= b.LastOffset {
		if a.active == nil {
			a.active = map[int64]bool{}
		}
		a.active[a.list[0].ProducerID] = true
		a.list = a.list[1:]
	}
	if b.Control {
		delete(a.active, b.ProducerID) // the marker ends the transaction
		return true
	}
	return b.Transactional && a.active[b.ProducerID]
}

// Seek sets the next offset to consume from tp.
func (c *Consumer) Seek(tp TopicPartition, offset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps := c.parts[tp]
	if ps == nil {
		return fmt.Errorf("%w: %s/%d", ErrNotAssigned, tp.Topic, tp.Partition)
	}
	ps.position, ps.fetchAt, ps.needInit, ps.needReset, ps.buffered = offset, offset, false, false, nil
	return nil
}

// SeekToBeginning moves tps to their log start offsets.
func (c *Consumer) SeekToBeginning(ctx context.Context, tps ...TopicPartition) error {
	return c.seekToSpec(ctx, tps, OffsetEarliest)
}

// SeekToEnd moves tps to their end offsets.
func (c *Consumer) SeekToEnd(ctx context.Context, tps ...TopicPartition) error {
	return c.seekToSpec(ctx, tps, OffsetLatest)
}

// Position is the offset of the next record Poll returns for tp.
func (c *Consumer) Position(ctx context.Context, tp TopicPartition) (int64, error) {
	if err := c.initPositions(ctx); err != nil {
		return -1, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ps := c.parts[tp]
	if ps == nil {
		return -1, fmt.Errorf("%w: %s/%d", ErrNotAssigned, tp.Topic, tp.Partition)
	}
	return ps.position, nil
}

// Pause stops fetching tps until Resume; records already fetched for them
// are kept and not returned while paused.
func (c *Consumer) Pause(tps ...TopicPartition) {
	c.setPaused(tps, true)
}

// Resume undoes Pause.
func (c *Consumer) Resume(tps ...TopicPartition) {
	c.setPaused(tps, false)
}

func (c *Consumer) setPaused(tps []TopicPartition, v bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tp := range tps {
		if ps := c.parts[tp]; ps != nil {
			ps.paused = v
		}
	}
}

// Paused lists paused partitions.
func (c *Consumer) Paused() []TopicPartition {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []TopicPartition
	for tp, ps := range c.parts {
		if ps.paused {
			out = append(out, tp)
		}
	}
	sortTPs(out)
	return out
}

// positions returns the current positions of assigned partitions (for
// commits), skipping unknown ones.
func (c *Consumer) positions(only []TopicPartition) map[TopicPartition]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[TopicPartition]int64{}
	for tp, ps := range c.parts {
		if ps.position >= 0 && (only == nil || slices.Contains(only, tp)) {
			out[tp] = ps.position
		}
	}
	return out
}

// pollOverdue reports whether the application has not called Poll for
// longer than max.poll.interval.ms: the member is then considered stuck and
// gives up its membership, as in the Java client.
func (c *Consumer) pollOverdue() bool {
	last := c.lastPoll.Load()
	return last != 0 && time.Since(time.Unix(0, last)) > c.cfg.maxPollInterval
}

// Close commits (with auto-commit on), leaves the group and closes
// connections. ctx bounds the commit and the leave.
func (c *Consumer) Close(ctx context.Context) error {
	if c.closed {
		return nil
	}
	c.closed = true
	var errs []error
	if c.cfg.autoCommit && c.cfg.groupID != "" {
		if err := c.CommitSync(ctx, nil); err != nil {
			errs = append(errs, err)
		}
	}
	if c.group != nil {
		errs = append(errs, c.group.leave(ctx))
	}
	c.cl.close()
	c.wg.Wait()
	return errors.Join(errs...)
}

func (c *Consumer) maybeAutoCommit(ctx context.Context) {
	if !c.cfg.autoCommit || c.cfg.groupID == "" {
		return
	}
	now := time.Now()
	if c.lastAutoCommit.IsZero() {
		c.lastAutoCommit = now // the first interval starts with the first Poll
		return
	}
	if now.Sub(c.lastAutoCommit) < c.cfg.autoCommitEvery {
		return
	}
	c.lastAutoCommit = now
	if err := c.CommitSync(ctx, nil); err != nil {
		c.log.Debug("auto-commit failed", logGroup, c.cfg.groupID, logErr, err)
	}
}
