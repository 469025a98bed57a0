package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"slices"
	"sync"

	wlog "weir/internal/log"
	"weir/internal/share"
)

// shareStateTopic holds the share coordinator's durable records, as in
// Kafka (there written by a separate share coordinator; here by the
// broker that serves the share partitions).
const shareStateTopic = "__share_group_state"

// Record keys of __share_group_state start with a kind byte.
const (
	// shareKeyState: a share partition's delivery state; the rest of the
	// key is a share.StateKey, the value a share.StateRecord, a null
	// value deletes the partition's state.
	shareKeyState byte = 1
	// shareKeyGroup: a share group exists; the rest is the group id, the
	// value one version byte, a null value deletes the group. Members
	// are not stored: after a restart they rejoin (UNKNOWN_MEMBER_ID).
	shareKeyGroup byte = 2
	// shareKeyConfig: a group's config overrides; the rest is the group
	// id, the value encodeGroupConfigs, a null value clears them.
	shareKeyConfig byte = 3
)

var (
	errShareKey    = errors.New("broker: bad __share_group_state key")
	errShareConfig = errors.New("broker: bad share group config record")
)

func stateRecordKey(k share.StateKey) ([]byte, error) {
	return k.AppendTo([]byte{shareKeyState})
}

func groupRecordKey(kind byte, group string) []byte {
	return append([]byte{kind}, group...)
}

// encodeGroupConfigs is version 0, a uvarint count, then per entry
// uvarint-prefixed name and value, names sorted.
func encodeGroupConfigs(m map[string]string) []byte {
	out := []byte{0}
	out = binary.AppendUvarint(out, uint64(len(m)))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = binary.AppendUvarint(out, uint64(len(k)))
		out = append(out, k...)
		out = binary.AppendUvarint(out, uint64(len(m[k])))
		out = append(out, m[k]...)
	}
	return out
}

// decodeGroupConfigs decodes encodeGroupConfigs' output; it never panics.
func decodeGroupConfigs(b []byte) (map[string]string, error) {
	if len(b) < 1 || b[0] != 0 {
		return nil, fmt.Errorf("%w: version", errShareConfig)
	}
	b = b[1:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, fmt.Errorf("%w: count", errShareConfig)
	}
	b = b[k:]
	str := func() (string, bool) {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return "", false
		}
		s := string(b[k : k+int(l)])
		b = b[k+int(l):]
		return s, true
	}
	m := make(map[string]string, n)
	for range n {
		name, ok1 := str()
		value, ok2 := str()
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%w: truncated entry", errShareConfig)
		}
		m[name] = value
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: trailing bytes", errShareConfig)
	}
	return m, nil
}

// storeTicket completes when a record is in the log (and fsynced, for a
// topic that syncs before acknowledging).
type storeTicket struct {
	done chan struct{}
	err  error
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

type storeEntry struct {
	part       int
	key, value []byte
	// full marks a record that replaces every earlier one of its key (a
	// snapshot, a group or config record, a tombstone).
	full bool
	t    *storeTicket
}

// shareStore appends the share coordinator's records to
// __share_group_state. Callers enqueue under their own lock, so records
// of one key reach the log in the order their changes were made; one
// writer goroutine appends whatever is queued as one batch per state
// partition (group commit) and completes the tickets.
//
// The log is kept short: the writer knows where each key's latest full
// record is, and when a partition holds more than StateLogRecords records
// it asks (refresh) for fresh snapshots of the keys that pin its start,
// then raises the log start offset to the oldest full record still
// needed. cleanup.policy=compact keeps retention away from it.
type shareStore struct {
	logger  *slog.Logger
	parts   []*partition
	limit   int64
	refresh func(keys [][]byte)

	mu    sync.Mutex
	queue []storeEntry

	wake    chan struct{}
	stop    chan struct{}
	stopped chan struct{}

	// Owned by the writer goroutine (filled by replay before it starts).
	fullAt []map[string]int64
	asked  []map[string]bool
}

func newShareStore(logger *slog.Logger, parts []*partition, limit int64) *shareStore {
	s := &shareStore{
		logger:  logger,
		parts:   parts,
		limit:   limit,
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
		fullAt:  make([]map[string]int64, len(parts)),
		asked:   make([]map[string]bool, len(parts)),
	}
	for i := range parts {
		s.fullAt[i] = map[string]int64{}
		s.asked[i] = map[string]bool{}
	}
	return s
}

// partFor is the state partition a key lives in.
func (s *shareStore) partFor(key []byte) int {
	h := fnv.New32a()
	h.Write(key)
	return int(h.Sum32() % uint32(len(s.parts)))
}

// enqueue queues a record (a nil value is a tombstone) and returns its
// ticket. It never blocks.
func (s *shareStore) enqueue(key, value []byte, full bool) *storeTicket {
	t := &storeTicket{done: make(chan struct{})}
	s.mu.Lock()
	s.queue = append(s.queue, storeEntry{part: s.partFor(key), key: key, value: value, full: full || value == nil, t: t})
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return t
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
	byPart := make([][]storeEntry, len(s.parts))
	for _, e := range batch {
		byPart[e.part] = append(byPart[e.part], e)
	}
	for i, es := range byPart {
		if len(es) > 0 {
			s.write(i, es)
		}
	}
	return true
}

// maxStateBatch bounds one appended batch; a bigger run of entries is cut.
const maxStateBatch = 512 << 10

// write appends es to state partition i, in order, and completes their
// tickets.
func (s *shareStore) write(i int, es []storeEntry) {
	p := s.parts[i]
	var bb wlog.BatchBuilder
	for len(es) > 0 {
		ts := int64(0)
		bb.Reset(ts)
		n, size := 0, 0
		for n < len(es) && (n == 0 || size+len(es[n].key)+len(es[n].value) < maxStateBatch) {
			bb.Add(ts, es[n].key, es[n].value, nil)
			size += len(es[n].key) + len(es[n].value) + 16
			n++
		}
		res, err := p.log.Append(bb.Build(), wlog.AppendOptions{LeaderEpoch: p.leaderEpoch.Load()})
		if err == nil {
			p.advanced(res.LastOffset + 1)
			if p.log.Config().SyncBeforeAck {
				err = p.log.WaitDurable(context.Background(), res.LastOffset+1)
			}
		}
		if err != nil {
			s.logger.Error("share state write failed", "partition", i, "err", err)
			for _, e := range es {
				e.t.err = fmt.Errorf("broker: share state write: %w", err)
				close(e.t.done)
			}
			return
		}
		for k, e := range es[:n] {
			s.noteWritten(i, e, res.BaseOffset+int64(k))
			close(e.t.done)
		}
		es = es[n:]
	}
	s.compact(i)
}

// noteWritten tracks where each key's latest full record is.
func (s *shareStore) noteWritten(i int, e storeEntry, off int64) {
	if !e.full {
		return
	}
	k := string(e.key)
	delete(s.asked[i], k)
	if e.value == nil {
		delete(s.fullAt[i], k)
		return
	}
	s.fullAt[i][k] = off
}

// compact keeps state partition i short: past the limit, keys whose full
// record is old are asked for a new one, and the log start moves up to
// the oldest full record still needed.
func (s *shareStore) compact(i int) {
	p := s.parts[i]
	start, end := p.log.StartOffset(), p.log.EndOffset()
	if end-start <= s.limit {
		return
	}
	low := end
	var stale [][]byte
	for k, off := range s.fullAt[i] {
		low = min(low, off)
		if off < end-s.limit/2 && !s.asked[i][k] {
			s.asked[i][k] = true
			stale = append(stale, []byte(k))
		}
	}
	if len(stale) > 0 && s.refresh != nil {
		s.refresh(stale)
	}
	if low > start {
		if _, err := p.log.AdvanceStartOffset(low, p.highWatermark()); err != nil {
			s.logger.Warn("share state log start not advanced", "partition", i, "err", err)
		}
	}
}

// replayed is what __share_group_state holds.
type replayed struct {
	states  map[share.StateKey][]share.StateRecord
	groups  map[string]bool
	configs map[string]map[string]string
}

// replay reads every state partition and keeps, per key, what a restore
// needs: a partition's records from its newest snapshot on, a group's
// latest records. It also fills the writer's record positions, so it runs
// before the writer starts.
func (s *shareStore) replay(ctx context.Context) (replayed, error) {
	r := replayed{
		states:  map[share.StateKey][]share.StateRecord{},
		groups:  map[string]bool{},
		configs: map[string]map[string]string{},
	}
	for i, p := range s.parts {
		err := eachLogRecord(ctx, p, func(rec *wlog.Record) error {
			full, err := r.apply(rec.Key, rec.Value)
			if err != nil {
				s.logger.Warn("share state record skipped", "partition", i, "offset", rec.Offset, "err", err)
				return nil
			}
			s.noteWritten(i, storeEntry{key: append([]byte(nil), rec.Key...), value: rec.Value, full: full}, rec.Offset)
			return nil
		})
		if err != nil {
			return r, fmt.Errorf("broker: replay %s-%d: %w", shareStateTopic, i, err)
		}
	}
	return r, nil
}

// apply adds one record to the replayed state and reports whether it is a
// full record.
func (r *replayed) apply(key, value []byte) (bool, error) {
	if len(key) == 0 {
		return false, errShareKey
	}
	switch key[0] {
	case shareKeyState:
		k, err := share.DecodeStateKey(key[1:])
		if err != nil {
			return false, err
		}
		if value == nil {
			delete(r.states, k)
			return true, nil
		}
		rec, err := share.DecodeStateRecord(value)
		if err != nil {
			return false, err
		}
		recs := r.states[k]
		switch {
		case rec.Kind == share.Snapshot && (len(recs) == 0 || rec.StateEpoch >= recs[0].StateEpoch):
			recs = append(recs[:0], rec)
		case len(recs) == 0:
			// A delta whose snapshot was dropped from the log: a newer
			// snapshot follows it.
			return false, nil
		default:
			recs = append(recs, rec)
		}
		r.states[k] = recs
		return rec.Kind == share.Snapshot, nil
	case shareKeyGroup:
		g := string(key[1:])
		if value == nil {
			delete(r.groups, g)
		} else {
			r.groups[g] = true
		}
		return true, nil
	case shareKeyConfig:
		g := string(key[1:])
		if value == nil {
			delete(r.configs, g)
			return true, nil
		}
		m, err := decodeGroupConfigs(value)
		if err != nil {
			return false, err
		}
		r.configs[g] = m
		return true, nil
	}
	return false, fmt.Errorf("%w: kind %d", errShareKey, key[0])
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
