package coordinator

import (
	"bytes"
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kerr"

	wlog "weir/internal/log"
	"weir/internal/txn"
)

// shard owns some of the __transaction_state partitions led here (i %
// Shards): their txn.Partition state machines, the requests waiting for
// their answers and their writers. Only its run goroutine touches them;
// everything else queues closures on ops.
type shard struct {
	c   *Coordinator
	idx int
	log *slog.Logger
	ops chan func()

	slots   map[int32]*slot
	waiters map[txn.Ref]chan<- txn.Answer
}

// slot is one partition led here: loading (p nil) or loaded.
type slot struct {
	index, epoch int32
	rep          Replica
	p            *txn.Partition
	w            *writer
	ctx          context.Context // ends when the partition is unloaded
	cancel       context.CancelFunc
}

func newShard(c *Coordinator, idx int) *shard {
	return &shard{
		c:       c,
		idx:     idx,
		log:     c.cfg.Logger.With("shard", idx),
		ops:     make(chan func(), 256),
		slots:   make(map[int32]*slot),
		waiters: make(map[txn.Ref]chan<- txn.Answer),
	}
}

func (s *shard) run() {
	for {
		select {
		case op := <-s.ops:
			op()
		case <-s.c.ctx.Done():
			return
		}
	}
}

// enqueue hands op to the loop; false once the coordinator is closed.
// The loop itself never calls it (it could block on its own queue).
func (s *shard) enqueue(op func()) bool {
	select {
	case s.ops <- op:
		return true
	case <-s.c.ctx.Done():
		return false
	}
}

// shutdown answers every waiting request NOT_COORDINATOR, as Kafka does
// when it unloads a partition. Called by Close once run has returned.
func (s *shard) shutdown() {
	for ref, ch := range s.waiters {
		ch <- txn.Answer{Ref: ref, Code: kerr.NotCoordinator.Code, ProducerID: txn.NoProducerID, ProducerEpoch: txn.NoProducerEpoch}
	}
	clear(s.waiters)
}

// loaded returns partition i's state machine, or the code to answer while
// it is not led here (NOT_COORDINATOR) or still loading
// (COORDINATOR_LOAD_IN_PROGRESS).
func (s *shard) loaded(i int32) (*txn.Partition, int16) {
	sl := s.slots[i]
	switch {
	case sl == nil:
		return nil, kerr.NotCoordinator.Code
	case sl.p == nil:
		return nil, kerr.CoordinatorLoadInProgress.Code
	}
	return sl.p, 0
}

// call runs a request on partition i; its answer goes to ch, now or once
// the records it writes are committed.
func (s *shard) call(i int32, ref txn.Ref, ch chan<- txn.Answer, fn func(p *txn.Partition, ref txn.Ref, now int64) txn.Output) {
	p, code := s.loaded(i)
	if code != 0 {
		ch <- txn.Answer{Ref: ref, Code: code, ProducerID: txn.NoProducerID, ProducerEpoch: txn.NoProducerEpoch}
		return
	}
	s.waiters[ref] = ch
	s.process(s.slots[i], fn(p, ref, s.c.now()))
}

// process carries out a state machine's output: answers go to their
// waiters, writes to the partition's writer, markers to the sender.
func (s *shard) process(sl *slot, out txn.Output) {
	for _, a := range out.Answers {
		if ch, ok := s.waiters[a.Ref]; ok {
			delete(s.waiters, a.Ref)
			ch <- a
		}
	}
	if len(out.Writes) > 0 && sl.w != nil {
		sl.w.add(out.Writes)
	}
	for _, m := range out.Markers {
		s.c.sender.send(sl.index, sl.epoch, m)
	}
	for _, ev := range out.Events {
		s.c.events[ev.Kind].Add(1)
		s.log.Debug(ev.Kind.String(), "transactional_id", ev.TransactionalID, "producer_id", ev.ProducerID, "epoch", ev.ProducerEpoch, "partition", sl.index)
	}
}

// current reports whether sl is still partition sl.index's slot: results
// of an unloaded or reloaded partition's writes and markers are dropped.
func (s *shard) current(sl *slot) bool {
	return sl != nil && s.slots[sl.index] == sl && sl.p != nil
}

// appended reports the outcome of a write of sl's.
func (s *shard) appended(sl *slot, ids []uint64, code int16) {
	if !s.current(sl) {
		return
	}
	now := s.c.now()
	for _, id := range ids {
		s.process(sl, sl.p.Appended(id, code, now))
	}
}

// markersWritten reports the outcome of markers sl asked for.
func (s *shard) markersWritten(i, epoch int32, m *txn.Markers, res []txn.MarkerResult) {
	sl := s.slots[i]
	if !s.current(sl) || sl.epoch != epoch {
		return
	}
	s.process(sl, sl.p.MarkersWritten(m.TransactionalID, m.ProducerID, m.ProducerEpoch, m.Commit, res, s.c.now()))
}

// syncLeadership loads this shard's partitions that this node leads at an
// epoch it has not loaded, and unloads those it no longer leads.
func (s *shard) syncLeadership(n int) {
	for i := int32(0); i < int32(n); i++ {
		if s.c.shardOf(i) != s {
			continue
		}
		var epoch int32
		ok := false
		if rep := s.c.cfg.Host.Replica(i); rep != nil {
			epoch, ok = rep.Leading()
		}
		sl := s.slots[i]
		switch {
		case ok && (sl == nil || sl.epoch != epoch):
			s.elect(i, epoch)
		case !ok && sl != nil:
			s.resign(i)
		}
	}
	for i := range s.slots {
		if int(i) >= n {
			s.resign(i)
		}
	}
}

// elect starts loading partition i at epoch, dropping what was held.
func (s *shard) elect(i, epoch int32) {
	if sl := s.slots[i]; sl != nil {
		if sl.epoch == epoch {
			return
		}
		s.resign(i)
	}
	rep := s.c.cfg.Host.Replica(i)
	if rep == nil {
		return
	}
	ctx, cancel := context.WithCancel(s.c.ctx)
	sl := &slot{index: i, epoch: epoch, rep: rep, ctx: ctx, cancel: cancel}
	s.slots[i] = sl
	s.log.Info("loading transaction state", "partition", i, "epoch", epoch)
	s.c.wg.Add(1)
	go func() {
		defer s.c.wg.Done()
		p, err := s.c.load(ctx, sl)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("transaction state not loaded", "partition", i, "epoch", epoch, "err", err)
			}
			s.enqueue(func() {
				// Leave the slot out: LeadershipChanged tries again.
				if s.slots[i] == sl {
					sl.cancel()
					delete(s.slots, i)
				}
			})
			return
		}
		s.enqueue(func() { s.install(sl, p) })
	}()
}

// install makes a loaded partition serve, and completes the transactions
// it found prepared.
func (s *shard) install(sl *slot, p *txn.Partition) {
	if s.slots[sl.index] != sl {
		return
	}
	sl.p = p
	sl.w = newWriter(s, sl)
	s.c.wg.Add(1)
	go func() {
		defer s.c.wg.Done()
		sl.w.run()
	}()
	s.log.Info("transaction state loaded", "partition", sl.index, "epoch", sl.epoch, "transactional_ids", p.Len())
	s.process(sl, p.Loaded(s.c.now()))
}

// resign unloads partition i: requests waiting for its writes are
// answered NOT_COORDINATOR; its writer and markers stop.
func (s *shard) resign(i int32) {
	sl := s.slots[i]
	if sl == nil {
		return
	}
	delete(s.slots, i)
	sl.cancel()
	if sl.p != nil {
		out := sl.p.Abandon()
		s.process(sl, txn.Output{Answers: out.Answers})
	}
	s.c.sender.forget(i)
	s.log.Info("transaction state unloaded", "partition", i, "epoch", sl.epoch)
}

func (s *shard) abortTimedOut() {
	now := s.c.now()
	for _, sl := range s.slots {
		if sl.p != nil {
			s.process(sl, sl.p.AbortTimedOut(now))
		}
	}
}

func (s *shard) expire() {
	now := s.c.now()
	for _, sl := range s.slots {
		if sl.p != nil {
			s.process(sl, sl.p.Expire(now))
		}
	}
}

// load replays partition sl.index's log into a new state machine. It runs
// on its own goroutine; the state machine is the shard's only once
// installed.
func (c *Coordinator) load(ctx context.Context, sl *slot) (*txn.Partition, error) {
	if epoch, ok := sl.rep.Leading(); !ok || epoch != sl.epoch {
		return nil, kerr.NotLeaderForPartition
	}
	p := txn.NewPartition(c.txnCfg, sl.index, sl.epoch)
	err := sl.rep.Log().ScanRecords(ctx, func(r *wlog.Record) error {
		var value []byte
		if r.Value != nil {
			value = bytes.Clone(r.Value)
		}
		if err := p.Replay(bytes.Clone(r.Key), value); err != nil {
			c.cfg.Logger.Warn("transaction state record skipped", "partition", sl.index, "offset", r.Offset, "err", err)
		}
		return nil
	})
	return p, err
}
