package coordinator

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/clock"
	"weir/internal/txn"
)

// Coordinator is a node's transaction coordinator: the state of every
// __transaction_state partition this node leads, served to the
// transactional APIs. Its methods are safe for concurrent use.
type Coordinator struct {
	cfg      Config
	txnCfg   txn.Config
	shards   []*shard
	sender   *sender
	verifier *verifier

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // loaders, writers, senders

	nextRef atomic.Uint64
	events  [txn.NumEventKinds]atomic.Uint64

	timerMu sync.Mutex // guards timers and closed
	timers  []clock.Timer
	closed  bool
}

// New starts a coordinator leading no partition yet: call
// LeadershipChanged (or Elected) once the node leads some.
func New(cfg Config) (*Coordinator, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Coordinator{cfg: cfg, ctx: ctx, cancel: cancel}
	c.txnCfg = cfg.txnConfig(hostIDs{cfg.Host})
	c.sender = newSender(c)
	c.verifier = newVerifier(c)
	for i := range cfg.Shards {
		s := newShard(c, i)
		c.shards = append(c.shards, s)
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			s.run()
		}()
	}
	c.arm(cfg.AbortInterval, func(s *shard) { s.abortTimedOut() })
	c.arm(cfg.ExpirationInterval, func(s *shard) { s.expire() })
	return c, nil
}

type hostIDs struct{ h Host }

func (h hostIDs) NextID() (int64, error) { return h.h.NextProducerID() }

// arm runs fn on every shard every d, until Close.
func (c *Coordinator) arm(d time.Duration, fn func(*shard)) {
	c.timerMu.Lock()
	defer c.timerMu.Unlock()
	if c.closed {
		return
	}
	c.timers = append(c.timers, c.cfg.Clock.AfterFunc(d, func() {
		for _, s := range c.shards {
			s.enqueue(func() { fn(s) })
		}
		c.arm(d, fn)
	}))
}

// Close stops the coordinator: requests waiting for a write are answered
// NOT_COORDINATOR, later ones too. It waits for its goroutines.
func (c *Coordinator) Close() {
	c.timerMu.Lock()
	if c.closed {
		c.timerMu.Unlock()
		return
	}
	c.closed = true
	for _, t := range c.timers {
		t.Stop()
	}
	c.timerMu.Unlock()
	c.verifier.close()
	c.cancel()
	c.wg.Wait()
	for _, s := range c.shards {
		s.shutdown()
	}
}

// now is the clock's time in milliseconds, the coordinator's timestamps.
func (c *Coordinator) now() int64 { return c.cfg.Clock.Now().UnixMilli() }

// PartitionFor returns the __transaction_state partition coordinating a
// transactional id, and false while the topic does not exist here.
func (c *Coordinator) PartitionFor(transactionalID string) (int32, bool) {
	n := c.cfg.Host.Partitions()
	if n <= 0 {
		return 0, false
	}
	return txn.PartitionFor(transactionalID, n), true
}

// CoordinatorNode is the node coordinating a transactional id, as
// FindCoordinator answers it: the leader of its __transaction_state
// partition, -1 while that has none. exists is false while the topic does
// not exist here: the caller creates it (Kafka creates it on the first
// FindCoordinator of a transactional id) and the client retries.
func (c *Coordinator) CoordinatorNode(transactionalID string) (node int32, exists bool) {
	i, ok := c.PartitionFor(transactionalID)
	if !ok {
		return -1, false
	}
	if l, ok := c.cfg.Host.PartitionLeader(Topic, i); ok {
		return l, true
	}
	return -1, true
}

func (c *Coordinator) shardOf(partition int32) *shard {
	return c.shards[int(partition)%len(c.shards)]
}

// LeadershipChanged makes the coordinator follow this node's leadership of
// the __transaction_state partitions: it loads those it started leading
// (or leads at a new epoch) and unloads those it lost. The broker calls it
// after applying metadata that may have moved leaders; it does not wait
// for the loads.
func (c *Coordinator) LeadershipChanged() {
	n := c.cfg.Host.Partitions()
	for _, s := range c.shards {
		s.enqueue(func() { s.syncLeadership(n) })
	}
}

// Elected loads partition i, led here at epoch (the coordinator epoch),
// replacing whatever this node held of it.
func (c *Coordinator) Elected(i, epoch int32) {
	s := c.shardOf(i)
	s.enqueue(func() { s.elect(i, epoch) })
}

// Resigned unloads partition i: this node no longer leads it.
func (c *Coordinator) Resigned(i int32) {
	s := c.shardOf(i)
	s.enqueue(func() { s.resign(i) })
}

// errClosed is returned when the coordinator closed before answering.
var errClosed = errors.New("coordinator: closed")

// call runs fn on the partition coordinating id and waits for its answer.
// A partition not led here is NOT_COORDINATOR, one still loading
// COORDINATOR_LOAD_IN_PROGRESS. It returns an error only when ctx ends
// first (the request was abandoned; nothing should be sent).
func (c *Coordinator) call(ctx context.Context, id string, fn func(p *txn.Partition, ref txn.Ref, now int64) txn.Output) (txn.Answer, error) {
	i, ok := c.PartitionFor(id)
	if !ok {
		return txn.Answer{Code: kerr.NotCoordinator.Code}, nil
	}
	ref := txn.Ref(c.nextRef.Add(1))
	ch := make(chan txn.Answer, 1)
	s := c.shardOf(i)
	if !s.enqueue(func() { s.call(i, ref, ch, fn) }) {
		return txn.Answer{Code: kerr.NotCoordinator.Code}, nil
	}
	select {
	case a := <-ch:
		return a, nil
	case <-ctx.Done():
		return txn.Answer{}, ctx.Err()
	case <-c.ctx.Done():
		// Closed before the op ran (Close answers the ones that did).
		return txn.Answer{Code: kerr.NotCoordinator.Code, ProducerID: txn.NoProducerID, ProducerEpoch: txn.NoProducerEpoch}, nil
	}
}

// read runs fn on the partition coordinating id, loaded here, and
// returns its result; code is NOT_COORDINATOR or
// COORDINATOR_LOAD_IN_PROGRESS when it cannot.
func read[T any](ctx context.Context, c *Coordinator, id string, fn func(p *txn.Partition, now int64) T) (res T, code int16, err error) {
	i, ok := c.PartitionFor(id)
	if !ok {
		return res, kerr.NotCoordinator.Code, nil
	}
	type result struct {
		v    T
		code int16
	}
	ch := make(chan result, 1)
	s := c.shardOf(i)
	ok = s.enqueue(func() {
		p, code := s.loaded(i)
		if code != 0 {
			ch <- result{code: code}
			return
		}
		ch <- result{v: fn(p, c.now())}
	})
	if !ok {
		return res, kerr.NotCoordinator.Code, nil
	}
	select {
	case r := <-ch:
		return r.v, r.code, nil
	case <-ctx.Done():
		return res, 0, ctx.Err()
	case <-c.ctx.Done():
		return res, kerr.NotCoordinator.Code, nil
	}
}

// Stats are counters for the broker's metrics.
type Stats struct {
	// Partitions is the number of __transaction_state partitions loaded
	// here; Loading of those still being loaded.
	Partitions, Loading int
	// TransactionalIDs held by the loaded partitions.
	TransactionalIDs int
	// Events counts, since New, the transitions of txn.EventKind, by
	// name (txn_committed, txn_aborted, txn_timed_out, txn_fenced,
	// txn_id_expired): the metric names; the debug log of each uses the
	// same name.
	Events map[string]uint64
}

// Stats returns the current counters. It waits for every shard.
func (c *Coordinator) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	var mu sync.Mutex
	done := make(chan struct{}, len(c.shards))
	for _, s := range c.shards {
		if !s.enqueue(func() {
			mu.Lock()
			defer mu.Unlock()
			for _, sl := range s.slots {
				st.Partitions++
				if sl.p == nil {
					st.Loading++
					continue
				}
				st.TransactionalIDs += sl.p.Len()
			}
			done <- struct{}{}
		}) {
			return st, errClosed
		}
	}
	for range c.shards {
		select {
		case <-done:
		case <-ctx.Done():
			return st, ctx.Err()
		}
	}
	mu.Lock()
	defer mu.Unlock()
	st.Events = make(map[string]uint64, txn.NumEventKinds)
	for k := range txn.NumEventKinds {
		st.Events[k.String()] = c.events[k].Load()
	}
	return st, nil
}
