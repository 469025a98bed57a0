package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	wlog "weir/internal/log"
	"weir/internal/share"
)

// shareStateTopic holds the share coordinators' durable records, as in
// Kafka: a replicated internal topic whose partition leaders coordinate
// the keys that hash to them.
const shareStateTopic = "__share_group_state"

// Record keys of __share_group_state start with a kind byte.
const (
	// shareKeyState: a share partition's delivery state; the rest of the
	// key is a share.StateKey, the value a share.StateRecord, a null
	// value deletes the partition's state.
	shareKeyState byte = 1
	// shareKeyGroup and shareKeyConfig are records of share groups and
	// their configs that a single node kept here before share groups
	// moved to __consumer_offsets and configs to the metadata log; a
	// replay keeps them as whole records and uses neither.
	shareKeyGroup  byte = 2
	shareKeyConfig byte = 3
)

var errShareKey = errors.New("broker: bad __share_group_state key")

func stateRecordKey(k share.StateKey) ([]byte, error) {
	return k.AppendTo([]byte{shareKeyState})
}

// storeTicket completes when a write is committed in __share_group_state
// (held by every in-sync replica, and fsynced where the topic syncs
// before acknowledging), or when a read has its answer.
type storeTicket struct {
	done chan struct{}
	err  error
	// recs is a read's answer: the key's values from its latest full
	// record on, none when the key has no state.
	recs [][]byte
	// folded is a remote read's answer, the state folded into one
	// snapshot; nil when the key has no state.
	folded *share.StateRecord
}

// wait returns the write's error, or ctx's.
func (t *storeTicket) wait(ctx context.Context) error {
	if t == nil {
		return nil
	}
	select {
	case <-t.done:
		return t.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func newTicket() *storeTicket { return &storeTicket{done: make(chan struct{})} }

// failedTicket is a ticket already completed with err.
func failedTicket(err error) *storeTicket {
	t := newTicket()
	t.err = err
	close(t.done)
	return t
}

// storeEntry is one queued write (a nil value is a tombstone) or read of
// a key.
type storeEntry struct {
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
	t      *storeTicket
}

// keyFence is what a state key's coordinator has admitted: the highest
// state epoch written and the highest leader epoch of the data partition
// that read or wrote it.
type keyFence struct {
	state, leader int32
	// stored: the key has state (a read alone fences without it).
	stored bool
}

// stateHome is a __share_group_state partition this node leads, loaded
// at one leader epoch of it: every key's records since its latest full
// one, to answer reads and to write again when the log is cut.
type stateHome struct {
	p     *partition
	epoch int32
	// fences is guarded by shareStore.mu.
	fences map[string]keyFence
	// held and fullAt are filled by load, then owned by the writer.
	held   map[string][][]byte
	fullAt map[string]int64
}

// current reports whether this node still leads the partition at the
// epoch the home was loaded at.
func (h *stateHome) current() bool {
	return h.p.isLeader() && h.p.leaderEpoch.Load() == h.epoch
}

// shareStore is the share coordinator's side of __share_group_state, a
// replicated internal topic: the node leading a state partition
// coordinates the keys that hash to it, as in Kafka. Share-partition
// leaders on any node send it their records (locally, or with
// WriteShareGroupState) and read the state back when they start leading
// a partition (ReadShareGroupState).
//
// Writes and reads of a key are admitted in order under mu, against the
// key's fence: a write of an older state epoch is FENCED_STATE_EPOCH,
// one from an older leader epoch of the data partition than has read or
// written the key FENCED_LEADER_EPOCH, so that a deposed leader cannot
// overwrite what its successor read. One writer goroutine appends what is
// queued as one batch per state partition (group commit), waits until
// every in-sync replica has it, then completes the tickets in order;
// reads travel the same queue, so a read sees every write admitted
// before it.
//
// A state partition is loaded (replayed from its log) on first use after
// this node becomes its leader; a failed write drops it, to be loaded
// again. The log is kept short: past StateLogRecords records, the writer
// appends again the records of keys whose latest full record is old, then
// raises the log start offset to the oldest full record still needed.
// cleanup.policy=compact keeps retention away from it.
type shareStore struct {
	b      *Broker
	logger *slog.Logger
	n      int // partitions of __share_group_state
	limit  int64

	// loadMu serialises loads with the writer's writes.
	loadMu sync.Mutex
	mu     sync.Mutex // guards queue, homes and their fences; a leaf
	queue  []storeEntry
	homes  map[int]*stateHome

	ctx     context.Context // ends at close: stops waits for replicas
	cancel  context.CancelFunc
	wake    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
}

func newShareStore(b *Broker, logger *slog.Logger, n int, limit int64) *shareStore {
	ctx, cancel := context.WithCancel(context.Background())
	return &shareStore{
		b:       b,
		logger:  logger,
		n:       n,
		limit:   limit,
		homes:   map[int]*stateHome{},
		ctx:     ctx,
		cancel:  cancel,
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
}

// partFor is the state partition a key lives in.
func (s *shareStore) partFor(key []byte) int {
	h := fnv.New32a()
	h.Write(key)
	return int(h.Sum32() % uint32(s.n))
}

// statePartition is this node's replica of state partition i, or nil.
func (s *shareStore) statePartition(i int) *partition {
	t := s.b.lookupTopic(shareStateTopic)
	if t == nil {
		return nil
	}
	s.b.mu.RLock()
	defer s.b.mu.RUnlock()
	if i >= len(t.partitions) {
		return nil
	}
	return t.partitions[i]
}

// coordinatorOf is the node leading state partition i, or -1.
func (s *shareStore) coordinatorOf(i int) int32 {
	if p := s.statePartition(i); p != nil {
		return p.leader.Load()
	}
	return -1
}

// home returns state partition i loaded at its current leader epoch,
// loading it if needed; NOT_COORDINATOR when this node does not lead it.
func (s *shareStore) home(ctx context.Context, i int) (*stateHome, error) {
	p := s.statePartition(i)
	if p == nil {
		return nil, fmt.Errorf("%w: %s-%d is not here yet", kerr.CoordinatorNotAvailable, shareStateTopic, i)
	}
	lookup := func() *stateHome {
		s.mu.Lock()
		defer s.mu.Unlock()
		if h := s.homes[i]; h != nil && h.p == p && h.current() {
			return h
		}
		return nil
	}
	if !p.isLeader() || !s.b.started.Load() {
		return nil, fmt.Errorf("%w: this node does not lead %s-%d", kerr.NotCoordinator, shareStateTopic, i)
	}
	if h := lookup(); h != nil {
		return h, nil
	}
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if h := lookup(); h != nil {
		return h, nil
	}
	h, err := s.load(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("%w: load %s-%d: %v", kerr.CoordinatorLoadInProgress, shareStateTopic, i, err)
	}
	s.mu.Lock()
	s.homes[i] = h
	s.mu.Unlock()
	return h, nil
}

// load replays a state partition this node leads. loadMu held.
func (s *shareStore) load(ctx context.Context, p *partition) (*stateHome, error) {
	h := &stateHome{p: p, epoch: p.leaderEpoch.Load(), fences: map[string]keyFence{}, held: map[string][][]byte{}, fullAt: map[string]int64{}}
	if !p.isLeader() {
		return nil, kerr.NotCoordinator
	}
	err := eachLogRecord(ctx, p, func(rec *wlog.Record) error {
		full, err := recordIsFull(rec.Key, rec.Value)
		if err != nil {
			s.logger.Warn("share state record skipped", "partition", p.index, "offset", rec.Offset, "err", err)
			return nil
		}
		e := storeEntry{key: bytes.Clone(rec.Key), value: cloneNullable(rec.Value), full: full}
		h.note(e, rec.Offset)
		if e.key[0] == shareKeyState {
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
	if h.epoch != p.leaderEpoch.Load() {
		return nil, fmt.Errorf("%w: leader epoch moved during the load", kerr.NotCoordinator)
	}
	return h, nil
}

// recordIsFull checks a record's key and reports whether it replaces the
// key's earlier records.
func recordIsFull(key, value []byte) (bool, error) {
	if len(key) == 0 {
		return false, errShareKey
	}
	switch key[0] {
	case shareKeyState:
		if _, err := share.DecodeStateKey(key[1:]); err != nil {
			return false, err
		}
		if value == nil {
			return true, nil
		}
		r, err := share.DecodeStateRecord(value)
		if err != nil {
			return false, err
		}
		return r.Kind == share.Snapshot, nil
	case shareKeyGroup, shareKeyConfig:
		return true, nil
	}
	return false, fmt.Errorf("%w: kind %d", errShareKey, key[0])
}

// note adds a written (or replayed) record to the held records. Writer
// (or load) only.
func (h *stateHome) note(e storeEntry, off int64) {
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
// shareStore.mu held.
func (h *stateHome) admit(e *storeEntry) error {
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
func (s *shareStore) keysOf(ctx context.Context, group string) []share.StateKey {
	var out []share.StateKey
	for i := range s.n {
		h, err := s.home(ctx, i)
		if err != nil {
			continue
		}
		s.mu.Lock()
		for k, f := range h.fences {
			if !f.stored {
				continue
			}
			if sk, err := share.DecodeStateKey([]byte(k)[1:]); err == nil && sk.Group == group {
				out = append(out, sk)
			}
		}
		s.mu.Unlock()
	}
	return out
}

// submit admits an entry for a key this node coordinates and queues it;
// it never blocks on the log (a first use of a state partition loads it).
func (s *shareStore) submit(ctx context.Context, e storeEntry) *storeTicket {
	e.part = s.partFor(e.key)
	h, err := s.home(ctx, e.part)
	if err != nil {
		return failedTicket(err)
	}
	e.t = newTicket()
	s.mu.Lock()
	if s.homes[e.part] != h {
		s.mu.Unlock()
		return failedTicket(fmt.Errorf("%w: %s-%d moved", kerr.NotCoordinator, shareStateTopic, e.part))
	}
	if err := h.admit(&e); err != nil {
		s.mu.Unlock()
		return failedTicket(err)
	}
	e.full = e.full || (!e.read && e.value == nil)
	s.queue = append(s.queue, e)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return e.t
}

// run is the writer goroutine; close stops it after the queue is drained.
func (s *shareStore) run() {
	defer close(s.stopped)
	for {
		select {
		case <-s.wake:
		case <-s.stop:
			for s.flush() {
			}
			return
		}
		s.flush()
	}
}

func (s *shareStore) close() {
	s.cancel()
	close(s.stop)
	<-s.stopped
}

// flush writes what is queued; false when nothing was.
func (s *shareStore) flush() bool {
	s.mu.Lock()
	batch := s.queue
	s.queue = nil
	s.mu.Unlock()
	if len(batch) == 0 {
		return false
	}
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	byPart := map[int][]storeEntry{}
	var order []int
	for _, e := range batch {
		if _, ok := byPart[e.part]; !ok {
			order = append(order, e.part)
		}
		byPart[e.part] = append(byPart[e.part], e)
	}
	// Every partition's records are appended before any wait for the
	// replicas, so the waits overlap.
	type written struct {
		h    *stateHome
		es   []storeEntry
		offs []int64
		w    commitWait
		err  error
	}
	ws := make([]written, 0, len(order))
	for _, i := range order {
		es := byPart[i]
		s.mu.Lock()
		h := s.homes[i]
		s.mu.Unlock()
		w := written{h: h, es: es}
		if h == nil || !h.current() {
			w.err = fmt.Errorf("%w: this node no longer leads %s-%d", kerr.NotCoordinator, shareStateTopic, i)
		} else {
			w.offs, w.w, w.err = s.append(h, es)
		}
		ws = append(ws, w)
	}
	for _, w := range ws {
		if w.err == nil {
			w.err = w.w.wait(s.ctx)
		}
		if w.err != nil {
			s.logger.Warn("share state write failed", "err", w.err)
			s.drop(w.h)
			for _, e := range w.es {
				e.t.err = fmt.Errorf("broker: share state: %w", w.err)
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
		s.compact(w.h)
	}
	return true
}

// drop forgets a home after a failed write: its held records may differ
// from the log, which the next use loads again.
func (s *shareStore) drop(h *stateHome) {
	if h == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.homes {
		if x == h {
			delete(s.homes, i)
		}
	}
}

// commitWait is what an append waits for: the replicas, and the fsync
// where the topic syncs before acknowledging.
type commitWait struct {
	p     *partition
	epoch int32
	end   int64 // 0 when nothing was appended
}

func (w commitWait) wait(ctx context.Context) error {
	if w.end == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if w.p.log.Config().SyncBeforeAck {
		if err := w.p.log.WaitDurable(ctx, w.end); err != nil {
			return err
		}
	}
	return w.p.rep.WaitForHW(ctx, w.epoch, w.end)
}

// maxStateBatch bounds one appended batch; a bigger run of entries is cut.
const maxStateBatch = 512 << 10

// append appends the writes among es to h's partition, as a producer
// with acks=all would, and returns each entry's offset (-1 for reads).
func (s *shareStore) append(h *stateHome, es []storeEntry) ([]int64, commitWait, error) {
	p := h.p
	offs := make([]int64, len(es))
	w := commitWait{p: p}
	var bb wlog.BatchBuilder
	for j := 0; j < len(es); {
		bb.Reset(0)
		var idx []int
		size := 0
		for ; j < len(es) && (len(idx) == 0 || size+len(es[j].key)+len(es[j].value) < maxStateBatch); j++ {
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
		res, err := p.rep.Append(bb.Build(), -1, wlog.AppendOptions{})
		if err != nil {
			return nil, w, err
		}
		for k, at := range idx {
			offs[at] = res.BaseOffset + int64(k)
		}
		w.epoch, w.end = res.LeaderEpoch, res.LastOffset+1
	}
	return offs, w, nil
}

// compact keeps h's partition short: past the limit, the records of keys
// whose full record is old are appended again, and the log start moves
// up to the oldest full record still needed. Writer only.
func (s *shareStore) compact(h *stateHome) {
	p := h.p
	start, end := p.log.StartOffset(), p.log.EndOffset()
	if end-start <= s.limit {
		return
	}
	var again []storeEntry
	for k, off := range h.fullAt {
		if off >= end-s.limit/2 {
			continue
		}
		for n, v := range h.held[k] {
			again = append(again, storeEntry{key: []byte(k), value: v, full: n == 0})
		}
	}
	if len(again) > 0 {
		offs, w, err := s.append(h, again)
		if err == nil {
			err = w.wait(s.ctx)
		}
		if err != nil {
			s.logger.Warn("share state records not rewritten", "partition", p.index, "err", err)
			return
		}
		for k, e := range again {
			h.note(e, offs[k])
		}
	}
	low := p.log.EndOffset()
	for _, off := range h.fullAt {
		low = min(low, off)
	}
	if low > start {
		if _, err := p.log.AdvanceStartOffset(low, p.highWatermark()); err != nil {
			s.logger.Warn("share state log start not advanced", "partition", p.index, "err", err)
		}
	}
}

// eachLogRecord calls fn for every record of p's log, in offset order.
// Keys and values alias a read buffer: fn copies what it keeps.
func eachLogRecord(ctx context.Context, p *partition, fn func(*wlog.Record) error) error {
	end := p.log.EndOffset()
	for off := p.log.StartOffset(); off < end; {
		if err := ctx.Err(); err != nil {
			return err
		}
		data, err := p.log.ReadBytes(off, 1<<20, end)
		if err != nil {
			return err
		}
		if len(data) == 0 {
			return nil
		}
		for len(data) > 0 {
			h, err := wlog.ParseBatchHeader(data)
			if err != nil {
				return err
			}
			var ferr error
			if err := wlog.EachRecord(data[:h.Length], func(r *wlog.Record) bool {
				ferr = fn(r)
				return ferr == nil
			}); err != nil {
				return err
			}
			if ferr != nil {
				return ferr
			}
			off = h.NextOffset()
			data = data[h.Length:]
		}
	}
	return nil
}
