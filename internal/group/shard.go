package group

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"
)

// errStopped is returned by call when the shard stopped before answering.
var errStopped = errors.New("group: coordinator stopped")

// shard owns a subset of the groups (hashed by id). All of its state is
// touched only by its run goroutine; everything else talks to it through
// ops, closures queued on ops and run in order.
type shard struct {
	idx   int
	cfg   *Config
	log   *slog.Logger
	stats *stats

	ops  chan func(*shard)
	stop chan struct{} // closed by Coordinator.Close
	done chan struct{} // closed when run returns

	groups   map[string]*group
	timers   map[timerKey]*shardTimer
	timerSeq uint64

	// pending holds uncommitted transactional offsets by producer id,
	// then group; seq numbers offset records (see nextSeq).
	pending map[int64]map[string]pendingOffsets
	seq     uint64

	// queued counts calls whose op made it into ops; tests use it to
	// order a barrier behind a call made from another goroutine.
	queued atomic.Uint64
}

func newShard(idx int, cfg *Config, st *stats) *shard {
	return &shard{
		idx:     idx,
		cfg:     cfg,
		log:     cfg.Logger.With("shard", idx),
		stats:   st,
		ops:     make(chan func(*shard), 256),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		groups:  make(map[string]*group),
		timers:  make(map[timerKey]*shardTimer),
		pending: make(map[int64]map[string]pendingOffsets),
	}
}

// run is the shard's owner loop. It returns when stop is closed, after
// answering every parked JoinGroup and SyncGroup with NOT_COORDINATOR (as
// Kafka does when it unloads a coordinator) and stopping its timers.
func (s *shard) run() {
	defer close(s.done)
	for {
		select {
		case op := <-s.ops:
			op(s)
		case <-s.stop:
			s.shutdown()
			return
		}
	}
}

func (s *shard) shutdown() {
	for _, t := range s.timers {
		t.t.Stop()
	}
	clear(s.timers)
	for _, g := range s.groups {
		if g.classic != nil {
			g.classic.failWaiters(notCoordinator)
		}
	}
}

// enqueue hands op to the loop. It gives up if ctx ends or the shard stops.
func (s *shard) enqueue(ctx context.Context, op func(*shard)) bool {
	select {
	case s.ops <- op:
		return true
	case <-ctx.Done():
		return false
	case <-s.stop:
		return false
	}
}

// call runs fn on the shard's goroutine and waits for fn (or a later op)
// to reply. reply may be called at most once; it never blocks. call
// returns ctx's error if ctx ends first and errStopped if the shard stops
// without replying.
func call[T any](ctx context.Context, s *shard, fn func(s *shard, reply func(T))) (T, error) {
	ch := make(chan T, 1)
	reply := func(v T) {
		select {
		case ch <- v:
		default:
		}
	}
	var zero T
	if !s.enqueue(ctx, func(s *shard) { fn(s, reply) }) {
		if err := ctx.Err(); err != nil {
			return zero, err
		}
		return zero, errStopped
	}
	s.queued.Add(1)
	select {
	case v := <-ch:
		return v, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-s.done:
		select {
		case v := <-ch:
			return v, nil
		default:
			return zero, errStopped
		}
	}
}

// Timers. Every timer has a key; scheduling a key replaces its previous
// timer, and a timer whose key was rescheduled or cancelled before its op
// ran does nothing. That makes stale expirations harmless.

type timerKind int8

const (
	timerClassicJoin timerKind = iota
	timerClassicSync
	timerClassicHeartbeat
	timerConsumerSession
	timerConsumerRebalance
	timerOffsetExpiry
	timerStreamsSession
	timerStreamsRebalance
)

type timerKey struct {
	kind   timerKind
	group  string
	member string
}

type shardTimer struct {
	t   Timer
	seq uint64
}

func (s *shard) schedule(key timerKey, d time.Duration, fn func()) {
	s.cancel(key)
	s.timerSeq++
	seq := s.timerSeq
	st := &shardTimer{seq: seq}
	s.timers[key] = st
	st.t = s.cfg.Clock.AfterFunc(d, func() {
		s.enqueue(context.Background(), func(s *shard) {
			cur, ok := s.timers[key]
			if !ok || cur.seq != seq {
				return
			}
			delete(s.timers, key)
			fn()
		})
	})
}

func (s *shard) cancel(key timerKey) {
	if t, ok := s.timers[key]; ok {
		t.t.Stop()
		delete(s.timers, key)
	}
}

func (s *shard) scheduled(key timerKey) bool {
	_, ok := s.timers[key]
	return ok
}

// append persists recs for group g, bounded by the append timeout.
func (s *shard) append(groupID string, recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.AppendTimeout)
	defer cancel()
	err := s.cfg.Store.Append(ctx, groupID, recs)
	if err != nil {
		s.log.Warn("group state append failed", attrGroup, groupID, "records", len(recs), "err", err)
	}
	return err
}

func (s *shard) now() time.Time { return s.cfg.Clock.Now() }
