package sharestate

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	wlog "weir/internal/log"
	"weir/internal/replica"
	"weir/internal/share"
)

// Replica is what the coordinator needs of this node's replica of a
// state partition (*replica.Replica has it): its leadership, leader
// appends and the one acknowledgement rule, and its log to replay.
type Replica interface {
	Leading() (epoch int32, ok bool)
	Append(batch []byte, acks int16, opts wlog.AppendOptions) (replica.AppendResult, error)
	WaitAcked(ctx context.Context, res replica.AppendResult, acks int16) error
	Log() *wlog.Log
	HighWatermark() int64
}

// entry is one queued write (a nil value is a tombstone) or read of a
// key.
type entry struct {
	part       int
	key, value []byte
	// full marks a record that replaces every earlier one of its key (a
	// snapshot, a group or config record, a tombstone).
	full bool
	read bool
	// fence asks for the epochs to be checked (state records).
	fence       bool
	stateEpoch  int32
	leaderEpoch int32
	// reinit marks an administrative reset: the record starts a state
	// epoch above every one the key had.
	reinit bool
	t      *Ticket
}

// keyFence is what a state key's coordinator has admitted: the highest
// state epoch written and the highest leader epoch of the data partition
// that read or wrote it.
type keyFence struct {
	state, leader int32
	// stored: the key has state (a read alone fences without it).
	stored bool
}

// home is a __share_group_state partition this node leads, loaded at one
// leader epoch of it: every key's records since its latest full one, to
// answer reads and to write again when the log is cut.
type home struct {
	rep   Replica
	epoch int32
	// fences is guarded by Coordinator.mu.
	fences map[string]keyFence
	// held and fullAt are filled by load, then owned by the writer.
	held   map[string][][]byte
	fullAt map[string]int64
}

// current reports whether this node still leads the partition at the
// epoch the home was loaded at.
func (h *home) current() bool {
	epoch, ok := h.rep.Leading()
	return ok && epoch == h.epoch
}

// Coordinator is Kafka's share coordinator: the side of
// __share_group_state that holds the state of the keys hashing to the
// partitions this node leads. Share-partition leaders on any node send it
// their records (locally, or with WriteShareGroupState) and read the
// state back when they start leading a partition (ReadShareGroupState).
//
// Writes and reads of a key are admitted in order under mu, against the
// key's fence: a write of an older state epoch is FENCED_STATE_EPOCH,
// one from an older leader epoch of the data partition than has read or
// written the key FENCED_LEADER_EPOCH, so that a deposed leader cannot
// overwrite what its successor read. One writer goroutine appends what is
// queued as one batch per state partition (group commit), waits until
// the batch is committed, then completes the tickets in order; reads
// travel the same queue, so a read sees every write admitted before it.
//
// A state partition is loaded (replayed from its log) on first use after
// this node becomes its leader; a failed write drops it, to be loaded
// again. The log is kept short: past LogRecords records, the writer
// appends again the records of keys whose latest full record is old, then
// raises the log start offset to the oldest full record still needed.
type Coordinator struct {
	host   Host
	logger *slog.Logger
	n      int // partitions of __share_group_state
	limit  int64

	// loadMu serialises loads with the writer's writes.
	loadMu sync.Mutex
	mu     sync.Mutex // guards queue, homes and their fences; a leaf
	queue  []entry
	homes  map[int]*home

	ctx     context.Context // ends at close: stops waits for replicas
	cancel  context.CancelFunc
	wake    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
}

func newCoordinator(host Host, logger *slog.Logger, n int, limit int64) *Coordinator {
	ctx, cancel := context.WithCancel(context.Background())
	return &Coordinator{
		host:    host,
		logger:  logger,
		n:       n,
		limit:   limit,
		homes:   map[int]*home{},
		ctx:     ctx,
		cancel:  cancel,
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
}

// partFor is the state partition a key lives in.
func (c *Coordinator) partFor(key []byte) int { return PartitionFor(key, c.n) }

// PartitionFor is the partition of __share_group_state, of n, that a
// record key lives in: its leader is the key's coordinator.
func PartitionFor(key []byte, n int) int {
	h := fnv.New32a()
	h.Write(key)
	return int(h.Sum32() % uint32(n))
}

// home returns state partition i loaded at its current leader epoch,
// loading it if needed; NOT_COORDINATOR when this node does not lead it.
func (c *Coordinator) home(ctx context.Context, i int) (*home, error) {
	rep := c.host.Replica(i)
	if rep == nil {
		return nil, fmt.Errorf("%w: %s-%d is not here yet", kerr.CoordinatorNotAvailable, Topic, i)
	}
	lookup := func() *home {
		c.mu.Lock()
		defer c.mu.Unlock()
		if h := c.homes[i]; h != nil && h.rep == rep && h.current() {
			return h
		}
		return nil
	}
	if _, ok := rep.Leading(); !ok || !c.host.Serving() {
		return nil, fmt.Errorf("%w: this node does not lead %s-%d", kerr.NotCoordinator, Topic, i)
	}
	if h := lookup(); h != nil {
		return h, nil
	}
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	if h := lookup(); h != nil {
		return h, nil
	}
	h, err := c.load(ctx, i, rep)
	if err != nil {
		return nil, fmt.Errorf("%w: load %s-%d: %v", kerr.CoordinatorLoadInProgress, Topic, i, err)
	}
	c.mu.Lock()
	c.homes[i] = h
	c.mu.Unlock()
	return h, nil
}

// load replays a state partition this node leads. loadMu held.
func (c *Coordinator) load(ctx context.Context, i int, rep Replica) (*home, error) {
	epoch, ok := rep.Leading()
	if !ok {
		return nil, kerr.NotCoordinator
	}
	h := &home{rep: rep, epoch: epoch, fences: map[string]keyFence{}, held: map[string][][]byte{}, fullAt: map[string]int64{}}
	err := rep.Log().ScanRecords(ctx, func(rec *wlog.Record) error {
		full, err := RecordIsFull(rec.Key, rec.Value)
		if err != nil {
			c.logger.Warn("share state record skipped", "partition", i, "offset", rec.Offset, "err", err)
			return nil
		}
		e := entry{key: bytes.Clone(rec.Key), value: cloneNullable(rec.Value), full: full}
		h.note(e, rec.Offset)
		if e.key[0] == KeyState {
			k := string(e.key)
			if e.value == nil {
				delete(h.fences, k)
			} else if r, err := share.DecodeStateRecord(e.value); err == nil {
				f, ok := h.fences[k]
				if !ok || r.StateEpoch >= f.state {
					f.state = r.StateEpoch
				}
				f.leader = max(f.leader, r.LeaderEpoch)
				f.stored = true
				h.fences[k] = f
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !h.current() {
		return nil, fmt.Errorf("%w: leader epoch moved during the load", kerr.NotCoordinator)
	}
	return h, nil
}

func cloneNullable(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// note adds a written (or replayed) record to the held records. Writer
// (or load) only.
func (h *home) note(e entry, off int64) {
	k := string(e.key)
	switch {
	case e.value == nil:
		delete(h.held, k)
		delete(h.fullAt, k)
	case e.full:
		h.held[k] = [][]byte{e.value}
		h.fullAt[k] = off
	default:
		if _, ok := h.held[k]; ok {
			// A delta whose full record was cut from the log is dropped:
			// a newer full record follows it.
			h.held[k] = append(h.held[k], e.value)
		}
	}
}

// admit checks an entry against its key's fence and moves the fence.
// Coordinator.mu held.
func (h *home) admit(e *entry) error {
	if !e.fence {
		return nil
	}
	k := string(e.key)
	f, ok := h.fences[k]
	switch {
	case e.read && e.leaderEpoch < 0:
		return nil // a look, not a leader's load: nothing to fence
	case e.read:
		if ok && e.leaderEpoch < f.leader {
			return fmt.Errorf("%w: read at leader epoch %d, the state was used at %d", kerr.FencedLeaderEpoch, e.leaderEpoch, f.leader)
		}
	case e.value == nil:
		delete(h.fences, k)
		return nil
	case e.reinit:
		if ok && e.stateEpoch <= f.state {
			r, err := share.DecodeStateRecord(e.value)
			if err != nil {
				return fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
			}
			r.StateEpoch = f.state + 1
			if e.value, err = r.AppendTo(nil); err != nil {
				return fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
			}
			e.stateEpoch = r.StateEpoch
		}
	case ok && e.stateEpoch < f.state:
		return fmt.Errorf("%w: state epoch %d, the coordinator holds %d", kerr.FencedStateEpoch, e.stateEpoch, f.state)
	case ok && e.stateEpoch == f.state && e.leaderEpoch < f.leader:
		return fmt.Errorf("%w: leader epoch %d, the coordinator holds %d", kerr.FencedLeaderEpoch, e.leaderEpoch, f.leader)
	}
	if !ok {
		f = keyFence{state: e.stateEpoch, leader: e.leaderEpoch}
	}
	if !e.read {
		f.state = max(f.state, e.stateEpoch)
		f.stored = true
	}
	f.leader = max(f.leader, e.leaderEpoch)
	h.fences[k] = f
	return nil
}

// keysOf lists the state keys of a group held by the state partitions
// this node leads (loading them).
func (c *Coordinator) keysOf(ctx context.Context, group string) []share.StateKey {
	var out []share.StateKey
	for i := range c.n {
		h, err := c.home(ctx, i)
		if err != nil {
			continue
		}
		c.mu.Lock()
		for k, f := range h.fences {
			if !f.stored {
				continue
			}
			if sk, err := share.DecodeStateKey([]byte(k)[1:]); err == nil && sk.Group == group {
				out = append(out, sk)
			}
		}
		c.mu.Unlock()
	}
	return out
}

// submit admits an entry for a key this node coordinates and queues it;
// it never blocks on the log (a first use of a state partition loads it).
func (c *Coordinator) submit(ctx context.Context, e entry) *Ticket {
	e.part = c.partFor(e.key)
	h, err := c.home(ctx, e.part)
	if err != nil {
		return failedTicket(err)
	}
	e.t = newTicket()
	c.mu.Lock()
	if c.homes[e.part] != h {
		c.mu.Unlock()
		return failedTicket(fmt.Errorf("%w: %s-%d moved", kerr.NotCoordinator, Topic, e.part))
	}
	if err := h.admit(&e); err != nil {
		c.mu.Unlock()
		return failedTicket(err)
	}
	e.full = e.full || (!e.read && e.value == nil)
	c.queue = append(c.queue, e)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return e.t
}

// run is the writer goroutine; close stops it after the queue is drained.
func (c *Coordinator) run() {
	defer close(c.stopped)
	for {
		select {
		case <-c.wake:
		case <-c.stop:
			for c.flush() {
			}
			return
		}
		c.flush()
	}
}

func (c *Coordinator) close() {
	c.cancel()
	close(c.stop)
	<-c.stopped
}

// written is one state partition's share of a flush.
type written struct {
	h    *home
	es   []entry
	offs []int64
	res  replica.AppendResult
	end  bool // something was appended: wait for res
	err  error
}

// flush writes what is queued; false when nothing was.
func (c *Coordinator) flush() bool {
	c.mu.Lock()
	batch := c.queue
	c.queue = nil
	c.mu.Unlock()
	if len(batch) == 0 {
		return false
	}
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	byPart := map[int][]entry{}
	var order []int
	for _, e := range batch {
		if _, ok := byPart[e.part]; !ok {
			order = append(order, e.part)
		}
		byPart[e.part] = append(byPart[e.part], e)
	}
	// Every partition's records are appended before any wait for the
	// replicas, so the waits overlap.
	ws := make([]written, 0, len(order))
	for _, i := range order {
		c.mu.Lock()
		h := c.homes[i]
		c.mu.Unlock()
		w := written{h: h, es: byPart[i]}
		if h == nil || !h.current() {
			w.err = fmt.Errorf("%w: this node no longer leads %s-%d", kerr.NotCoordinator, Topic, i)
		} else {
			w.offs, w.res, w.end, w.err = c.append(h, w.es)
		}
		ws = append(ws, w)
	}
	for _, w := range ws {
		if w.err == nil && w.end {
			w.err = c.waitCommitted(w.h, w.res)
		}
		if w.err != nil {
			c.logger.Warn("share state write failed", "err", w.err)
			c.drop(w.h)
			for _, e := range w.es {
				e.t.err = fmt.Errorf("sharestate: %w", w.err)
				close(e.t.done)
			}
			continue
		}
		for k, e := range w.es {
			if e.read {
				e.t.recs = slices.Clone(w.h.held[string(e.key)])
			} else {
				w.h.note(e, w.offs[k])
			}
			close(e.t.done)
		}
		c.compact(w.h)
	}
	return true
}

// waitCommitted waits, at most 30 s, for an append to be committed.
func (c *Coordinator) waitCommitted(h *home, res replica.AppendResult) error {
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	return h.rep.WaitAcked(ctx, res, -1)
}

// drop forgets a home after a failed write: its held records may differ
// from the log, which the next use loads again.
func (c *Coordinator) drop(h *home) {
	if h == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.homes {
		if x == h {
			delete(c.homes, i)
		}
	}
}

// maxBatch bounds one appended batch; a bigger run of entries is cut.
const maxBatch = 512 << 10

// append appends the writes among es to h's partition, as a producer
// with acks=all would, and returns each entry's offset (-1 for reads) and
// the last append to wait for (appended false when es held only reads).
func (c *Coordinator) append(h *home, es []entry) (offs []int64, last replica.AppendResult, appended bool, err error) {
	offs = make([]int64, len(es))
	var bb wlog.BatchBuilder
	for j := 0; j < len(es); {
		bb.Reset(0)
		var idx []int
		size := 0
		for ; j < len(es) && (len(idx) == 0 || size+len(es[j].key)+len(es[j].value) < maxBatch); j++ {
			if es[j].read {
				offs[j] = -1
				continue
			}
			bb.Add(0, es[j].key, es[j].value, nil)
			size += len(es[j].key) + len(es[j].value) + 16
			idx = append(idx, j)
		}
		if len(idx) == 0 {
			continue
		}
		res, err := h.rep.Append(bb.Build(), -1, wlog.AppendOptions{})
		if err != nil {
			return nil, last, false, err
		}
		for k, at := range idx {
			offs[at] = res.BaseOffset + int64(k)
		}
		last, appended = res, true
	}
	return offs, last, appended, nil
}

// compact keeps h's partition short: past the limit, the records of keys
// whose full record is old are appended again, and the log start moves
// up to the oldest full record still needed. Writer only.
func (c *Coordinator) compact(h *home) {
	l := h.rep.Log()
	start, end := l.StartOffset(), l.EndOffset()
	if end-start <= c.limit {
		return
	}
	var again []entry
	for k, off := range h.fullAt {
		if off >= end-c.limit/2 {
			continue
		}
		for n, v := range h.held[k] {
			again = append(again, entry{key: []byte(k), value: v, full: n == 0})
		}
	}
	if len(again) > 0 {
		offs, res, appended, err := c.append(h, again)
		if err == nil && appended {
			err = c.waitCommitted(h, res)
		}
		if err != nil {
			c.logger.Warn("share state records not rewritten", "dir", l.Dir(), "err", err)
			return
		}
		for k, e := range again {
			h.note(e, offs[k])
		}
	}
	low := l.EndOffset()
	for _, off := range h.fullAt {
		low = min(low, off)
	}
	if low > start {
		if _, err := l.AdvanceStartOffset(low, h.rep.HighWatermark()); err != nil {
			c.logger.Warn("share state log start not advanced", "dir", l.Dir(), "err", err)
		}
	}
}
