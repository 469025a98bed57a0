package coordinator

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/txn"
)

// markerJob is some of a transaction's markers on their way: the
// partitions of m that one destination (or the router) handles.
type markerJob struct {
	state, epoch int32 // the __transaction_state partition and its coordinator epoch
	m            txn.Markers
	delayed      bool // its retry backoff is over
}

// sender writes transaction markers: it finds each partition's leader,
// batches every marker due to one broker into one WriteTxnMarkers request,
// and reports each partition's outcome to the state machine that asked
// (which asks again for those that failed and may succeed later). A
// router goroutine places jobs, and one goroutine per destination node
// sends one request at a time; all of them belong to the Coordinator.
type sender struct {
	c *Coordinator

	mu       sync.Mutex // guards incoming, nodes and each node's jobs
	incoming []markerJob
	nodes    map[int32]*destination
	wake     chan struct{}
}

// destination is the queue of one node.
type destination struct {
	node int32
	jobs []markerJob
	wake chan struct{}
}

func newSender(c *Coordinator) *sender {
	s := &sender{c: c, nodes: make(map[int32]*destination), wake: make(chan struct{}, 1)}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		s.route()
	}()
	return s
}

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// send queues a state machine's Markers output. It never blocks.
func (s *sender) send(state, epoch int32, m txn.Markers) {
	s.mu.Lock()
	s.incoming = append(s.incoming, markerJob{state: state, epoch: epoch, m: m})
	s.mu.Unlock()
	poke(s.wake)
}

// forget drops the queued markers of an unloaded partition; the next
// leader sends them again.
func (s *sender) forget(state int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := func(js []markerJob) []markerJob {
		out := js[:0]
		for _, j := range js {
			if j.state != state {
				out = append(out, j)
			}
		}
		return out
	}
	s.incoming = keep(s.incoming)
	for _, d := range s.nodes {
		d.jobs = keep(d.jobs)
	}
}

// route is the router goroutine: it waits out a retry's backoff, then
// places each partition with its leader's queue. A partition that no
// longer exists is reported done; one without a leader waits and tries
// again.
func (s *sender) route() {
	ctx := s.c.ctx
	for {
		select {
		case <-s.wake:
		case <-ctx.Done():
			return
		}
		s.mu.Lock()
		jobs := s.incoming
		s.incoming = nil
		s.mu.Unlock()
		for _, j := range jobs {
			if j.m.Retry && !j.delayed {
				s.later(j)
				continue
			}
			s.place(j)
		}
	}
}

// later queues j again once retry.backoff.ms has passed.
func (s *sender) later(j markerJob) {
	j.delayed = true
	s.c.cfg.Clock.AfterFunc(s.c.cfg.RetryBackoff, func() {
		if s.c.ctx.Err() != nil {
			return
		}
		s.mu.Lock()
		s.incoming = append(s.incoming, j)
		s.mu.Unlock()
		poke(s.wake)
	})
}

func (s *sender) place(j markerJob) {
	host := s.c.cfg.Host
	byNode := make(map[int32][]txn.TopicPartition)
	var gone, leaderless []txn.TopicPartition
	for _, tp := range j.m.Partitions {
		leader, ok := host.PartitionLeader(tp.Topic, tp.Partition)
		switch {
		case !ok:
			gone = append(gone, tp)
		case leader < 0:
			leaderless = append(leaderless, tp)
		default:
			byNode[leader] = append(byNode[leader], tp)
		}
	}
	if len(gone) > 0 {
		res := make([]txn.MarkerResult, len(gone))
		for k, tp := range gone {
			res[k] = txn.MarkerResult{Partition: tp, Deleted: true}
		}
		s.report(j, res)
	}
	if len(leaderless) > 0 {
		r := j
		r.m.Partitions, r.m.Retry, r.delayed = leaderless, true, false
		s.later(r)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for node, parts := range byNode {
		d := s.nodes[node]
		if d == nil {
			d = &destination{node: node, wake: make(chan struct{}, 1)}
			s.nodes[node] = d
			s.c.wg.Add(1)
			go func() {
				defer s.c.wg.Done()
				s.deliver(d)
			}()
		}
		nj := j
		nj.m.Partitions = parts
		d.jobs = append(d.jobs, nj)
		poke(d.wake)
	}
}

// report hands partition outcomes to the shard owning the partition.
func (s *sender) report(j markerJob, res []txn.MarkerResult) {
	sh := s.c.shardOf(j.state)
	m := j.m
	sh.enqueue(func() { sh.markersWritten(j.state, j.epoch, &m, res) })
}

// deliver is one node's goroutine: everything queued for the node goes
// out as one WriteTxnMarkers request, one request at a time.
func (s *sender) deliver(d *destination) {
	ctx := s.c.ctx
	for {
		select {
		case <-d.wake:
		case <-ctx.Done():
			return
		}
		for {
			s.mu.Lock()
			batch, rest := takeBatch(d.jobs)
			d.jobs = rest
			s.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			s.write(ctx, d.node, batch)
		}
	}
}

// takeBatch takes the jobs one request can carry: a WriteTxnMarkers
// answer is keyed by producer id, so a producer id appears once (jobs of
// the same transaction merge; another transaction of the same producer id
// waits for the next request).
func takeBatch(jobs []markerJob) (batch, rest []markerJob) {
	byPID := make(map[int64]int)
	for _, j := range jobs {
		k, seen := byPID[j.m.ProducerID]
		switch {
		case !seen:
			byPID[j.m.ProducerID] = len(batch)
			batch = append(batch, j)
		case sameMarker(&batch[k], &j):
			b := &batch[k]
			b.m.Partitions = append(append([]txn.TopicPartition(nil), b.m.Partitions...), j.m.Partitions...)
		default:
			rest = append(rest, j)
		}
	}
	return batch, rest
}

func sameMarker(a, b *markerJob) bool {
	return a.state == b.state && a.epoch == b.epoch && a.m.TransactionalID == b.m.TransactionalID &&
		a.m.ProducerEpoch == b.m.ProducerEpoch && a.m.Commit == b.m.Commit
}

// MarkersRequest builds the WriteTxnMarkers request (v2, as Kafka 4.3's
// coordinator sends) for some markers.
func MarkersRequest(ms []txn.Markers) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 2
	for _, m := range ms {
		rm := kmsg.NewWriteTxnMarkersRequestMarker()
		rm.ProducerID = m.ProducerID
		rm.ProducerEpoch = m.ProducerEpoch
		rm.Committed = m.Commit
		rm.CoordinatorEpoch = m.CoordinatorEpoch
		rm.TransactionVersion = int8(m.Version)
		byTopic(m.Partitions, func(topic string, run []txn.TopicPartition) {
			rt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			rt.Topic, rt.Partitions = topic, partitionIDs(run)
			rm.Topics = append(rm.Topics, rt)
		})
		req.Markers = append(req.Markers, rm)
	}
	return req
}

// write sends one request and reports every partition of every job:
// its error code, or REQUEST_TIMED_OUT for all when the request failed
// (the state machine then asks again, the leaders looked up anew).
func (s *sender) write(ctx context.Context, node int32, batch []markerJob) {
	ms := make([]txn.Markers, len(batch))
	for k := range batch {
		ms[k] = batch[k].m
	}
	rctx, cancel := context.WithTimeout(ctx, s.c.cfg.RequestTimeout)
	resp, err := s.c.cfg.Host.Send(rctx, node, MarkersRequest(ms))
	cancel()
	if ctx.Err() != nil {
		return
	}
	codes, err := markerCodes(resp, err)
	if err != nil {
		s.c.cfg.Logger.Debug("transaction markers not written", "node", node, "err", err)
	}
	for _, j := range batch {
		res := make([]txn.MarkerResult, len(j.m.Partitions))
		for k, tp := range j.m.Partitions {
			code, ok := codes[j.m.ProducerID][tp]
			if err != nil || !ok {
				code = kerr.RequestTimedOut.Code
			}
			res[k] = txn.MarkerResult{Partition: tp, Code: code}
		}
		s.report(j, res)
	}
}

// markerCodes indexes a WriteTxnMarkers answer by producer id and
// partition.
func markerCodes(resp kmsg.Response, err error) (map[int64]map[txn.TopicPartition]int16, error) {
	if err != nil {
		return nil, err
	}
	r, ok := resp.(*kmsg.WriteTxnMarkersResponse)
	if !ok {
		return nil, fmt.Errorf("coordinator: WriteTxnMarkers answered with %T", resp)
	}
	codes := make(map[int64]map[txn.TopicPartition]int16, len(r.Markers))
	for _, m := range r.Markers {
		byTP := codes[m.ProducerID]
		if byTP == nil {
			byTP = make(map[txn.TopicPartition]int16)
			codes[m.ProducerID] = byTP
		}
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				byTP[txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.ErrorCode
			}
		}
	}
	return codes, nil
}
