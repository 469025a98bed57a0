package broker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
	"weir/internal/share"
)

// A share partition's leader keeps its state with the share coordinator
// of its key: the leader of the __share_group_state partition the key
// hashes to (shareStore). On the same node the records go straight to the
// store; to another node they travel as WriteShareGroupState and
// ReadShareGroupState (keys 85 and 84), queued per node in order, so
// that a key's records reach its coordinator in the order they were made.
//
// weir's records say more than Kafka's write carries (a snapshot or a
// delta, a deletion, an administrative reset), so a weir leader's write
// also carries the record as weir stores it, in tagged fields; a write
// without them is a Kafka-style delta.

// Tags of a WriteShareGroupState partition written by a weir leader.
const (
	// stateRecordTag is the state record's encoding (share.StateRecord
	// AppendTo); absent for a deletion.
	stateRecordTag uint32 = 0x7765
	// stateFlagsTag is one byte of stateFlag bits.
	stateFlagsTag uint32 = 0x7766
)

const (
	stateFlagDelete byte = 1 << iota
	stateFlagReinit
)

// stateFence is what a write or read tells the coordinator to fence it
// with: the share partition's state epoch and the data partition's leader
// epoch. reinit marks an administrative reset, which starts a new state
// epoch above the coordinator's whatever the writer's.
type stateFence struct {
	stateEpoch, leaderEpoch int32
	reinit                  bool
}

// stateWrite sends a share partition's record (nil deletes its state) to
// its coordinator and returns the ticket that completes when the record
// is committed there. It never blocks on the network.
// full says whether value is a snapshot (a deletion always is).
func (c *shareCoordinator) stateWrite(rkey, value []byte, full bool, f stateFence) *storeTicket {
	s := c.store.Load()
	if s == nil {
		return failedTicket(errNoShareStore)
	}
	full = full || value == nil
	e := storeEntry{key: rkey, value: value, full: full, fence: true, stateEpoch: f.stateEpoch, leaderEpoch: f.leaderEpoch, reinit: f.reinit}
	return c.route(s, e)
}

// stateRead returns a share partition's records from its coordinator
// (none when it has no state), fencing older leaders of the data
// partition than leaderEpoch.
func (c *shareCoordinator) stateRead(ctx context.Context, rkey []byte, leaderEpoch int32) ([]share.StateRecord, error) {
	s := c.store.Load()
	if s == nil {
		return nil, errNoShareStore
	}
	t := c.route(s, storeEntry{key: rkey, read: true, fence: true, leaderEpoch: leaderEpoch})
	if err := t.wait(ctx); err != nil {
		return nil, err
	}
	if t.folded != nil {
		return []share.StateRecord{*t.folded}, nil
	}
	recs := make([]share.StateRecord, 0, len(t.recs))
	for _, v := range t.recs {
		r, err := share.DecodeStateRecord(v)
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// route hands an entry to the store when this node coordinates its key,
// else to the sender for the node that does.
func (c *shareCoordinator) route(s *shareStore, e storeEntry) *storeTicket {
	switch node := s.coordinatorOf(s.partFor(e.key)); {
	case node == c.b.cfg.NodeID:
		ctx, cancel := context.WithTimeout(c.b.ctx, 30*time.Second)
		defer cancel()
		return s.submit(ctx, e)
	case node < 0:
		return failedTicket(fmt.Errorf("%w: %s has no leader", kerr.CoordinatorNotAvailable, shareStateTopic))
	default:
		return c.sender.enqueue(node, e)
	}
}

// stateSender carries state entries to coordinators on other nodes: one
// queue and one goroutine per node, sending in order, one request at a
// time. The goroutines belong to the coordinator, which closes the
// sender.
type stateSender struct {
	c      *shareCoordinator
	mu     sync.Mutex // a leaf
	queues map[int32]*sendQueue
	stop   chan struct{}
	closed bool
}

type sendQueue struct {
	entries []storeEntry
	wake    chan struct{}
}

func newStateSender(c *shareCoordinator) *stateSender {
	return &stateSender{c: c, queues: map[int32]*sendQueue{}, stop: make(chan struct{})}
}

func (s *stateSender) enqueue(node int32, e storeEntry) *storeTicket {
	e.t = newTicket()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return failedTicket(fmt.Errorf("%w: the broker is stopping", kerr.CoordinatorNotAvailable))
	}
	q := s.queues[node]
	if q == nil {
		q = &sendQueue{wake: make(chan struct{}, 1)}
		s.queues[node] = q
		s.c.wg.Add(1)
		go func() { defer s.c.wg.Done(); s.run(node, q) }()
	}
	q.entries = append(q.entries, e)
	s.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return e.t
}

func (s *stateSender) close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.stop)
	}
	s.mu.Unlock()
}

func (s *stateSender) take(q *sendQueue) []storeEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	es := q.entries
	q.entries = nil
	return es
}

// run sends node's queue until the sender closes; what is left then
// fails.
func (s *stateSender) run(node int32, q *sendQueue) {
	for {
		select {
		case <-q.wake:
			s.send(node, s.take(q))
		case <-s.stop:
			for _, e := range s.take(q) {
				e.t.err = fmt.Errorf("%w: the broker is stopping", kerr.CoordinatorNotAvailable)
				close(e.t.done)
			}
			return
		}
	}
}

// send sends es in order: each run of writes, or of reads, of one group
// is one request.
func (s *stateSender) send(node int32, es []storeEntry) {
	for len(es) > 0 {
		k0, _ := share.DecodeStateKey(es[0].key[1:])
		n := 1
		for n < len(es) && es[n].read == es[0].read {
			k, _ := share.DecodeStateKey(es[n].key[1:])
			if k.Group != k0.Group {
				break
			}
			n++
		}
		s.sendRun(node, k0.Group, es[:n])
		es = es[n:]
	}
}

// sendRun sends one request for es (all reads or all writes of group)
// and completes their tickets. Each entry is a topic of its own in the
// request, so the answer's topics line up with es.
func (s *stateSender) sendRun(node int32, group string, es []storeEntry) {
	var req kmsg.Request
	if es[0].read {
		r := kmsg.NewPtrReadShareGroupStateRequest()
		r.GroupID = group
		for _, e := range es {
			k, _ := share.DecodeStateKey(e.key[1:])
			rt := kmsg.NewReadShareGroupStateRequestTopic()
			rt.TopicID = k.TopicID
			rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
			rp.Partition, rp.LeaderEpoch = k.Partition, e.leaderEpoch
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
		}
		req = r
	} else {
		r := kmsg.NewPtrWriteShareGroupStateRequest()
		r.GroupID = group
		for _, e := range es {
			r.Topics = append(r.Topics, writeTopicOf(e))
		}
		req = r
	}
	ctx, cancel := context.WithTimeout(s.c.b.ctx, 15*time.Second)
	defer cancel()
	resp, err := s.c.b.transport.Send(ctx, node, req)
	for j, e := range es {
		e.t.err = err
		if err == nil {
			e.t.err = s.answer(resp, j, e)
		}
		if e.t.err != nil {
			e.t.err = fmt.Errorf("broker: share state at node %d: %w", node, e.t.err)
		}
		close(e.t.done)
	}
}

// answer reads entry j's part of a response.
func (s *stateSender) answer(resp kmsg.Response, j int, e storeEntry) error {
	switch r := resp.(type) {
	case *kmsg.ReadShareGroupStateResponse:
		if j >= len(r.Topics) || len(r.Topics[j].Partitions) != 1 {
			return fmt.Errorf("%w: short ReadShareGroupState answer", kerr.CoordinatorNotAvailable)
		}
		p := &r.Topics[j].Partitions[0]
		if p.ErrorCode == 0 && p.StateEpoch < 0 {
			return nil // no state
		}
		rec, err := share.StateOfRead(p, e.leaderEpoch)
		if err != nil {
			return err
		}
		e.t.folded = &rec
		return nil
	case *kmsg.WriteShareGroupStateResponse:
		if j >= len(r.Topics) || len(r.Topics[j].Partitions) != 1 {
			return fmt.Errorf("%w: short WriteShareGroupState answer", kerr.CoordinatorNotAvailable)
		}
		p := r.Topics[j].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			if p.ErrorMessage != nil {
				return fmt.Errorf("%w: %s", err, *p.ErrorMessage)
			}
			return err
		}
		return nil
	}
	return fmt.Errorf("%w: unexpected answer %T", kerr.UnknownServerError, resp)
}

// writeTopicOf is a write entry as a WriteShareGroupState topic of one
// partition.
func writeTopicOf(e storeEntry) kmsg.WriteShareGroupStateRequestTopic {
	k, _ := share.DecodeStateKey(e.key[1:])
	rt := kmsg.NewWriteShareGroupStateRequestTopic()
	rt.TopicID = k.TopicID
	var flags byte
	var p kmsg.WriteShareGroupStateRequestTopicPartition
	if e.value == nil {
		flags |= stateFlagDelete
		p = kmsg.NewWriteShareGroupStateRequestTopicPartition()
		p.Partition, p.StateEpoch, p.LeaderEpoch, p.StartOffset = k.Partition, e.stateEpoch, e.leaderEpoch, -1
	} else {
		r, _ := share.DecodeStateRecord(e.value) // stateWrite decoded it
		p = share.WriteStateOf(k.Partition, r)
		p.StateEpoch, p.LeaderEpoch = e.stateEpoch, e.leaderEpoch
		p.UnknownTags.Set(stateRecordTag, e.value)
	}
	if e.reinit {
		flags |= stateFlagReinit
	}
	if flags != 0 {
		p.UnknownTags.Set(stateFlagsTag, []byte{flags})
	}
	rt.Partitions = append(rt.Partitions, p)
	return rt
}

// entryOfWrite is the store entry a WriteShareGroupState partition asks
// for. It never panics; what it cannot read is INVALID_REQUEST.
func entryOfWrite(group string, topicID [16]byte, p *kmsg.WriteShareGroupStateRequestTopicPartition) (storeEntry, error) {
	key, err := stateRecordKey(share.StateKey{Group: group, TopicID: topicID, Partition: p.Partition})
	if err != nil {
		return storeEntry{}, fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
	}
	e := storeEntry{key: key, fence: true, stateEpoch: p.StateEpoch, leaderEpoch: p.LeaderEpoch}
	var flags byte
	var raw []byte
	p.UnknownTags.Each(func(tag uint32, v []byte) {
		switch tag {
		case stateFlagsTag:
			if len(v) == 1 {
				flags = v[0]
			}
		case stateRecordTag:
			raw = v
		}
	})
	e.reinit = flags&stateFlagReinit != 0
	if flags&stateFlagDelete != 0 {
		e.full = true
		return e, nil
	}
	var r share.StateRecord
	if raw != nil {
		if r, err = share.DecodeStateRecord(raw); err != nil {
			return storeEntry{}, fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
		}
	} else if r, err = share.StateOfWrite(p); err != nil {
		return storeEntry{}, err
	}
	if e.value, err = r.AppendTo(nil); err != nil {
		return storeEntry{}, fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
	}
	e.full = r.Kind == share.Snapshot
	return e, nil
}

// WriteShareGroupState v0-1 (broker to broker): a share partition's
// leader writes its state to the key's coordinator, this node.
var _ = register(handler{key: 85, min: 0, max: 1, serve: (*Broker).handleWriteShareGroupState})

func (b *Broker) handleWriteShareGroupState(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.WriteShareGroupStateRequest)
	resp := r.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	s, serr := b.shares.coordinatorStore()
	type pending struct {
		p *kmsg.WriteShareGroupStateResponseTopicPartition
		t *storeTicket
	}
	var waits []pending
	for _, rt := range r.Topics {
		t := kmsg.NewWriteShareGroupStateResponseTopic()
		t.TopicID = rt.TopicID
		t.Partitions = make([]kmsg.WriteShareGroupStateResponseTopicPartition, len(rt.Partitions))
		for i := range rt.Partitions {
			p := &t.Partitions[i]
			*p = kmsg.NewWriteShareGroupStateResponseTopicPartition()
			p.Partition = rt.Partitions[i].Partition
			e, err := entryOfWrite(r.GroupID, rt.TopicID, &rt.Partitions[i])
			if err == nil {
				err = serr
			}
			if err != nil {
				p.ErrorCode, p.ErrorMessage = errCode(err), errMessage(err)
				continue
			}
			waits = append(waits, pending{p, s.submit(ctx, e)})
		}
		resp.Topics = append(resp.Topics, t)
	}
	// Queued together, the writes are committed together.
	for _, w := range waits {
		err := w.t.wait(ctx)
		w.p.ErrorCode, w.p.ErrorMessage = errCode(err), errMessage(err)
	}
	return server.Ready(resp)
}

// ReadShareGroupState v0 (broker to broker): a share partition's new
// leader reads its state, folded into one snapshot; a partition without
// state answers state epoch -1.
var _ = register(handler{key: 84, min: 0, max: 0, serve: (*Broker).handleReadShareGroupState})

func (b *Broker) handleReadShareGroupState(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.ReadShareGroupStateRequest)
	resp := r.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	s, serr := b.shares.coordinatorStore()
	for _, rt := range r.Topics {
		t := kmsg.NewReadShareGroupStateResponseTopic()
		t.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			p, err := readState(ctx, s, serr, r.GroupID, rt.TopicID, rp)
			if err != nil {
				p = kmsg.NewReadShareGroupStateResponseTopicPartition()
				p.ErrorCode, p.ErrorMessage = errCode(err), errMessage(err)
			}
			p.Partition = rp.Partition
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return server.Ready(resp)
}

// readState answers one partition of a ReadShareGroupState.
func readState(ctx context.Context, s *shareStore, serr error, group string, topicID [16]byte, rp kmsg.ReadShareGroupStateRequestTopicPartition) (kmsg.ReadShareGroupStateResponseTopicPartition, error) {
	var none kmsg.ReadShareGroupStateResponseTopicPartition
	if serr != nil {
		return none, serr
	}
	key, err := stateRecordKey(share.StateKey{Group: group, TopicID: topicID, Partition: rp.Partition})
	if err != nil {
		return none, fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
	}
	t := s.submit(ctx, storeEntry{key: key, read: true, fence: true, leaderEpoch: rp.LeaderEpoch})
	if err := t.wait(ctx); err != nil {
		return none, err
	}
	if len(t.recs) == 0 {
		p := kmsg.NewReadShareGroupStateResponseTopicPartition()
		p.StateEpoch, p.StartOffset = -1, -1
		return p, nil
	}
	recs := make([]share.StateRecord, 0, len(t.recs))
	for _, v := range t.recs {
		r, err := share.DecodeStateRecord(v)
		if err != nil {
			return none, fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
		}
		recs = append(recs, r)
	}
	snap, err := share.Fold(recs)
	if err != nil {
		return none, fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	return share.ReadStateOf(rp.Partition, snap), nil
}

// coordinatorStore is the store, for a request from another node's
// leader: __share_group_state exists once any node created it.
func (c *shareCoordinator) coordinatorStore() (*shareStore, error) {
	if err := c.ensureStore(); err != nil {
		return nil, fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
	}
	return c.store.Load(), nil
}
