package sharestate

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/errcode"
	"weir/internal/share"
	"weir/internal/wiretag"
)

// A share partition's leader keeps its state with the coordinator of its
// key. On the same node the records go straight to the Coordinator; to
// another node they travel as WriteShareGroupState and
// ReadShareGroupState (keys 85 and 84), queued per node in order, so that
// a key's records reach its coordinator in the order they were made. A
// weir leader's write carries the record as weir stores it in tagged
// fields (wiretag.ShareStateRecord, wiretag.ShareStateFlags).

// sender carries entries to coordinators on other nodes: one queue and
// one goroutine per node, sending in order, one request at a time. The
// goroutines belong to the service, which closes the sender.
type sender struct {
	s      *Service
	mu     sync.Mutex // a leaf
	queues map[int32]*sendQueue
	stop   chan struct{}
	closed bool
}

type sendQueue struct {
	entries []entry
	wake    chan struct{}
}

func (s *sender) enqueue(node int32, e entry) *Ticket {
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
		s.s.wg.Add(1)
		go func() { defer s.s.wg.Done(); s.run(node, q) }()
	}
	q.entries = append(q.entries, e)
	s.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return e.t
}

func (s *sender) close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.stop)
	}
	s.mu.Unlock()
}

func (s *sender) take(q *sendQueue) []entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	es := q.entries
	q.entries = nil
	return es
}

// run sends node's queue until the sender closes; what is left then
// fails.
func (s *sender) run(node int32, q *sendQueue) {
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
func (s *sender) send(node int32, es []entry) {
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
func (s *sender) sendRun(node int32, group string, es []entry) {
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
	ctx, cancel := context.WithTimeout(s.s.ctx, 15*time.Second)
	defer cancel()
	resp, err := s.s.host.Send(ctx, node, req)
	for j, e := range es {
		e.t.err = err
		if err == nil {
			e.t.err = answer(resp, j, e)
		}
		if e.t.err != nil {
			e.t.err = fmt.Errorf("sharestate: state at node %d: %w", node, e.t.err)
		}
		close(e.t.done)
	}
}

// answer reads entry j's part of a response.
func answer(resp kmsg.Response, j int, e entry) error {
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
func writeTopicOf(e entry) kmsg.WriteShareGroupStateRequestTopic {
	k, _ := share.DecodeStateKey(e.key[1:])
	rt := kmsg.NewWriteShareGroupStateRequestTopic()
	rt.TopicID = k.TopicID
	var flags byte
	var p kmsg.WriteShareGroupStateRequestTopicPartition
	if e.value == nil {
		flags |= wiretag.ShareStateDelete
		p = kmsg.NewWriteShareGroupStateRequestTopicPartition()
		p.Partition, p.StateEpoch, p.LeaderEpoch, p.StartOffset = k.Partition, e.stateEpoch, e.leaderEpoch, -1
	} else {
		r, _ := share.DecodeStateRecord(e.value) // Write's caller encoded it
		p = share.WriteStateOf(k.Partition, r)
		p.StateEpoch, p.LeaderEpoch = e.stateEpoch, e.leaderEpoch
		p.UnknownTags.Set(wiretag.ShareStateRecord, e.value)
	}
	if e.reinit {
		flags |= wiretag.ShareStateReinit
	}
	if flags != 0 {
		p.UnknownTags.Set(wiretag.ShareStateFlags, []byte{flags})
	}
	rt.Partitions = append(rt.Partitions, p)
	return rt
}

// entryOfWrite is the entry a WriteShareGroupState partition asks for. It
// never panics; what it cannot read is INVALID_REQUEST.
func entryOfWrite(group string, topicID [16]byte, p *kmsg.WriteShareGroupStateRequestTopicPartition) (entry, error) {
	key, err := RecordKey(share.StateKey{Group: group, TopicID: topicID, Partition: p.Partition})
	if err != nil {
		return entry{}, fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
	}
	e := entry{key: key, fence: true, stateEpoch: p.StateEpoch, leaderEpoch: p.LeaderEpoch}
	var flags byte
	var raw []byte
	p.UnknownTags.Each(func(tag uint32, v []byte) {
		switch tag {
		case wiretag.ShareStateFlags:
			if len(v) == 1 {
				flags = v[0]
			}
		case wiretag.ShareStateRecord:
			raw = v
		}
	})
	e.reinit = flags&wiretag.ShareStateReinit != 0
	if flags&wiretag.ShareStateDelete != 0 {
		e.full = true
		return e, nil
	}
	var r share.StateRecord
	if raw != nil {
		if r, err = share.DecodeStateRecord(raw); err != nil {
			return entry{}, fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
		}
	} else if r, err = share.StateOfWrite(p); err != nil {
		return entry{}, err
	}
	if e.value, err = r.AppendTo(nil); err != nil {
		return entry{}, fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
	}
	e.full = r.Kind == share.Snapshot
	return e, nil
}

// HandleWrite answers WriteShareGroupState: a share partition's leader
// on another node writes its state to this node's coordinator. The
// partitions' writes are queued together, so they are committed together.
func (s *Service) HandleWrite(ctx context.Context, r *kmsg.WriteShareGroupStateRequest) *kmsg.WriteShareGroupStateResponse {
	resp := r.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	c, cerr := s.coordinator()
	type pending struct {
		p *kmsg.WriteShareGroupStateResponseTopicPartition
		t *Ticket
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
				err = cerr
			}
			if err != nil {
				p.ErrorCode, p.ErrorMessage = errcode.Of(err), errcode.Message(err)
				continue
			}
			waits = append(waits, pending{p, c.submit(ctx, e)})
		}
		resp.Topics = append(resp.Topics, t)
	}
	for _, w := range waits {
		err := w.t.Wait(ctx)
		w.p.ErrorCode, w.p.ErrorMessage = errcode.Of(err), errcode.Message(err)
	}
	return resp
}

// HandleRead answers ReadShareGroupState: a share partition's new leader
// on another node reads its state, folded into one snapshot; a partition
// without state answers state epoch -1.
func (s *Service) HandleRead(ctx context.Context, r *kmsg.ReadShareGroupStateRequest) *kmsg.ReadShareGroupStateResponse {
	resp := r.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	c, cerr := s.coordinator()
	for _, rt := range r.Topics {
		t := kmsg.NewReadShareGroupStateResponseTopic()
		t.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			var p kmsg.ReadShareGroupStateResponseTopicPartition
			err := cerr
			if err == nil {
				p, err = readState(ctx, c, r.GroupID, rt.TopicID, rp)
			}
			if err != nil {
				p = kmsg.NewReadShareGroupStateResponseTopicPartition()
				p.ErrorCode, p.ErrorMessage = errcode.Of(err), errcode.Message(err)
			}
			p.Partition = rp.Partition
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// readState answers one partition of a ReadShareGroupState.
func readState(ctx context.Context, c *Coordinator, group string, topicID [16]byte, rp kmsg.ReadShareGroupStateRequestTopicPartition) (kmsg.ReadShareGroupStateResponseTopicPartition, error) {
	var none kmsg.ReadShareGroupStateResponseTopicPartition
	key, err := RecordKey(share.StateKey{Group: group, TopicID: topicID, Partition: rp.Partition})
	if err != nil {
		return none, fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
	}
	t := c.submit(ctx, entry{key: key, read: true, fence: true, leaderEpoch: rp.LeaderEpoch})
	if err := t.Wait(ctx); err != nil {
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
