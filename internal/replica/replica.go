package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	wlog "weir/internal/log"
	"weir/internal/metadata"
)

// Sentinel errors. Kafka-visible failures wrap kerr errors instead.
var (
	// ErrStaleState is returned when a metadata change carries an older
	// leader epoch than the replica already has.
	ErrStaleState = errors.New("replica: partition state is older than the current one")
	// ErrWrongRole is returned when BecomeLeader gets a state naming
	// another leader, or BecomeFollower one naming this broker.
	ErrWrongRole = errors.New("replica: partition state names another role")
)

// DefaultMaxLag is replica.lag.time.max.ms's default.
const DefaultMaxLag = 30 * time.Second

// Role is what a replica currently is for its partition.
type Role int8

// The roles. A replica starts as RoleNone until the broker applies the
// partition's metadata.
const (
	RoleNone Role = iota
	RoleLeader
	RoleFollower
)

func (r Role) String() string {
	switch r {
	case RoleLeader:
		return "leader"
	case RoleFollower:
		return "follower"
	}
	return "none"
}

// Config are a replica's identity and what it shares with the broker's
// other replicas (Env: settings and callbacks), so that a replica costs
// only its own state.
type Config struct {
	// Env is shared with the broker's other replicas; nil means
	// NewEnv(Env{}). With an Owner it is not read: the Owner's
	// ReplicaEnv is the replica's.
	Env *Env
	// Owner is the caller's object for this replica (Replica.Owner), so
	// that the shared callbacks find it; it names the partition and gives
	// its Env.
	Owner Owner

	// Topic, TopicID and Partition name a replica opened without an
	// Owner; with one they are not read.
	Topic     string
	TopicID   [16]byte
	Partition int32
	// MinISR is min.insync.replicas; below 1 means 1. SetMinISR changes it.
	MinISR int
}

// Owner is what a replica's caller keeps for it: its own object for the
// partition, which names it and gives the Env it shares with the
// broker's other replicas. The replica holds it instead of a copy of the
// names and a pointer to the Env (8 B less per replica, which keeps it
// in the 96-byte size class).
type Owner interface {
	Topic() string
	TopicID() [16]byte
	Partition() int32
	// ReplicaEnv is the Env of the owner's replicas, made by NewEnv;
	// the same one for the replica's whole life.
	ReplicaEnv() *Env
}

// Env is what a broker's replicas share: the broker's id, settings and
// callbacks. NewEnv fills the defaults.
type Env struct {
	// LocalID is this broker's node id.
	LocalID int32
	// MaxLag is replica.lag.time.max.ms; zero means DefaultMaxLag.
	MaxLag time.Duration
	// HoldHWUnderMinISR applies KIP-966's rule: the high watermark does
	// not advance while the committed ISR is smaller than MinISR.
	HoldHWUnderMinISR bool
	// Eligible says whether a broker may join an ISR: registered, not
	// fenced, not shutting down (KIP-841), and, when brokerEpoch >= 0, at
	// the broker epoch its fetches carry (KIP-903: a broker that lost its
	// disk and registered again must not count with an old fetch). nil
	// means every replica.
	Eligible func(brokerID int32, brokerEpoch int64) bool
	// OnISRChange is called, without any replica lock held, with each
	// proposed ISR change; the broker sends it to the controller as
	// AlterPartition and reports the outcome with CompleteISRChange. At
	// most one change per replica is in flight. It must not block.
	OnISRChange func(r *Replica, change ISRChange)
	// OnHighWatermark is called, without any replica lock held, after the
	// high watermark moved (leader or follower), so the broker can wake
	// fetches parked on it. It must not block.
	OnHighWatermark func(r *Replica, hw int64)
	// OnAppend is called, without any replica lock held, after a leader
	// append that did not move the high watermark, so the broker can wake
	// followers' fetches parked on the log end; an append that moved it
	// calls OnHighWatermark instead. It must not block.
	OnAppend func(r *Replica)
	// OnFollowerAppend is called, as follower, for each batch header
	// copied from the leader, in offset order, once the batches are in the
	// log; the broker records idempotent-producer state with it so that a
	// follower that becomes leader checks sequences. OnTruncate is called
	// after the log was cut to end (the broker rebuilds producer state
	// from the log). Both run with the replica's role lock held: they must
	// be quick and must not call the Replica.
	OnFollowerAppend func(r *Replica, h *wlog.BatchHeader)
	OnTruncate       func(r *Replica, end int64)
	// OnLogStart is called, without any replica lock held, after the log
	// start offset rose (retention, DeleteRecords, or a follower
	// following its leader's), so the broker can tell the fetch sessions
	// reading the partition. It must not block.
	OnLogStart func(r *Replica, start int64)
	// LastFetch is when follower last fetched from this broker in a
	// fetch session holding the partition (zero: never, or unknown); see
	// leaderState.noteLEO. Called with the replica's locks held: it must
	// be quick and must not call the Replica. nil: unknown.
	LastFetch func(r *Replica, follower int32) time.Time
	// OpenLog opens the replica's log lazily (nothing on disk until
	// written) with cfg, for OwnLog. With it, a replica opened over a
	// never-written lazy log keeps the blank log of its settings instead
	// (Replica.Log), so a partition never written costs no Log; nil: the
	// replica keeps the log it was opened with.
	OpenLog func(r *Replica, cfg wlog.Config) (*wlog.Log, error)
	// Now is the clock for lag decisions; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger

	// rules are LocalID and the settings above as every leaderState of
	// the broker reads them, made by NewEnv.
	rules *leaderRules
	// counts are the counters of the replicas sharing this Env (Stats),
	// made by NewEnv: kept here rather than in each replica.
	counts *counts
}

// counts are an Env's counters: ISR changes committed through
// CompleteISRChange and follower truncations that removed data, of all
// its replicas together, as Kafka's IsrShrinksPerSec and
// IsrExpandsPerSec count the broker's.
type counts struct {
	isrShrinks, isrExpands, truncations atomic.Uint64
}

// NewEnv returns e with its defaults filled: DefaultMaxLag, time.Now, a
// discarding logger.
func NewEnv(e Env) *Env {
	if e.MaxLag <= 0 {
		e.MaxLag = DefaultMaxLag
	}
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.Logger == nil {
		e.Logger = slog.New(slog.DiscardHandler)
	}
	e.rules = &leaderRules{self: e.LocalID, maxLag: e.MaxLag, eligible: e.Eligible, holdUnderMinISR: e.HoldHWUnderMinISR}
	e.counts = new(counts)
	return &e
}

// defaultEnv serves replicas opened without an Env.
var defaultEnv = NewEnv(Env{})

// PartitionState is a partition's entry in the metadata image.
type PartitionState struct {
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	Replicas       []int32
	ISR            []int32
	// lists are Replicas then ISR in one slice, when StateOf took them
	// from the image, where they lie so: a leader keeps one slice header.
	lists []int32
}

// ISRChange is a proposed ISR, for AlterPartition: the leader epoch and
// partition epoch it was computed from, the new ISR, and for each member
// the broker epoch its last fetch carried (-1 for the leader itself and
// for followers not heard from in this leader epoch; AlterPartition v3
// NewEpochISR wants the broker's registered epoch there).
type ISRChange struct {
	LeaderEpoch    int32
	PartitionEpoch int32
	NewISR         []int32
	BrokerEpochs   []int64
}

// ISRChangeResult is the controller's answer to an ISRChange: Err is the
// partition's error (a kerr error) or the transport's; on success the
// committed leader epoch, partition epoch and ISR.
type ISRChangeResult struct {
	Err            error
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []int32
}

// Replica is one partition replica on this broker: its log, leader-epoch
// cache, role, and as leader the follower progress, ISR and high
// watermark.
//
// Lock order: roleMu, then mu, then the epoch cache's, then the log's.
// roleMu is write-held only to change role or epoch and to truncate, and
// read-held across appends so an append is stamped with, and checked
// against, one leader epoch.
type Replica struct {
	owner Owner // names the replica and gives its Env
	// cache is the leader-epoch cache. Its log is the replica's log (the
	// checkpoint lives in the log's directory): the replica keeps no
	// second pointer to it. The leader of a never-written log holds its
	// epoch's entry implied, not here (endOffsetFor).
	cache EpochCache
	// The high watermark is the one noted in the log (hw, setHW), which
	// its checkpoint writes: the replica keeps no copy.

	mu sync.Mutex
	ls *leaderState // nil unless leader; its hwCh wakes WaitForHW callers

	roleMu roleLock // a sync.RWMutex in half its size (rolelock.go)
	role   Role
	// minISR is min.insync.replicas, guarded by roleMu (SetMinISR), kept
	// in the role's padding: the leader state holds a copy under mu.
	minISR      int16
	leader      int32
	leaderEpoch int32
	// The counters Stats reports are the Env's (counts).
}

// Stats are a replica's figures for metrics (Kafka's
// UnderReplicatedPartitions, UnderMinIsrPartitions, IsrShrinksPerSec,
// IsrExpandsPerSec, and follower truncations).
type Stats struct {
	Role           Role
	Leader         int32
	LeaderEpoch    int32
	HighWatermark  int64
	LogStartOffset int64
	LogEndOffset   int64
	// Leader only: committed ISR and replica counts and what follows.
	ISR             int
	Replicas        int
	UnderReplicated bool
	UnderMinISR     bool
	// Since NewEnv, of every replica sharing this one's Env (a broker's
	// replicas together, as Kafka counts them): ISR changes committed
	// through CompleteISRChange, and truncations that removed data.
	ISRShrinks  uint64
	ISRExpands  uint64
	Truncations uint64
}

// Stats returns the replica's current figures.
func (r *Replica) Stats() Stats {
	r.roleMu.RLock()
	st := Stats{Role: r.role, Leader: r.leader, LeaderEpoch: r.leaderEpoch}
	r.mu.Lock()
	if r.ls != nil {
		st.ISR, st.Replicas = len(r.ls.isr()), len(r.ls.replicas())
		st.UnderReplicated = st.ISR < st.Replicas
		st.UnderMinISR = st.ISR < int(r.minISR)
	}
	r.mu.Unlock()
	r.roleMu.RUnlock()
	st.HighWatermark = r.hw()
	st.LogStartOffset, st.LogEndOffset = r.log().StartOffset(), r.log().EndOffset()
	c := r.env().counts
	st.ISRShrinks, st.ISRExpands, st.Truncations = c.isrShrinks.Load(), c.isrExpands.Load(), c.truncations.Load()
	return st
}

// Open attaches replication state to an open log: it loads the leader-epoch
// checkpoint from the log's directory (rebuilding it from the batch headers
// when missing or unreadable), cuts entries past the log end or below the
// log start, and starts with high watermark hw (the broker's persisted
// value, clamped into the log).
func Open(l *wlog.Log, hw int64, cfg Config) (*Replica, error) {
	owner := cfg.Owner
	if owner == nil {
		env := cfg.Env
		switch {
		case env == nil:
			env = defaultEnv
		case env.rules == nil: // not made by NewEnv: this replica's own
			env = NewEnv(*env)
		}
		owner = &identity{cfg.Topic, cfg.TopicID, cfg.Partition, env}
	}
	env := owner.ReplicaEnv()
	if env == nil || env.rules == nil {
		return nil, errors.New("replica: the owner's Env was not made by NewEnv")
	}
	r := &Replica{owner: owner, leader: -1, leaderEpoch: -1}
	r.SetMinISR(cfg.MinISR)
	cache := &r.cache
	ok, err := cache.load(l)
	if err != nil {
		return nil, err
	}
	if !ok {
		// Rebuilt from the batch headers and kept in memory: the next
		// change of the cache writes the file. Opening reads those headers
		// anyway (extendFromLog), and a restart reopening thousands of
		// logs written once (whose entry came before their directory) then
		// writes no file for each.
		entries, err := epochsFromLog(l)
		if err != nil {
			return nil, err
		}
		cache.restore(entries)
	}
	if err := cache.TruncateFromEnd(l.EndOffset()); err != nil {
		return nil, err
	}
	if err := cache.TruncateFromStart(l.StartOffset()); err != nil {
		return nil, err
	}
	if ok {
		// The checkpoint is replaced without fsync: after a crash it may
		// lag the log. Epochs stamped on batches after its newest entry
		// are added from the batch headers.
		if err := extendFromLog(cache, l); err != nil {
			return nil, err
		}
	}
	r.setHW(min(max(hw, l.StartOffset()), l.EndOffset()))
	if env.OpenLog != nil && l.NeverWritten() {
		// Nothing on disk: the blank of its settings reads the same, and
		// OwnLog opens the partition's log again to write it.
		r.cache.log.Store(l.Blank())
	}
	return r, nil
}

// extendFromLog adds the epochs of batches after the cache's newest
// entry.
func extendFromLog(c *EpochCache, l *wlog.Log) error {
	from := l.StartOffset()
	latest, ok := c.Latest()
	if ok {
		from = max(latest.StartOffset, from)
	}
	var add []EpochEntry
	err := l.ScanHeaders(from, func(h wlog.BatchHeader) bool {
		newest := latest.Epoch
		if !ok {
			newest = -1
		}
		if len(add) > 0 {
			newest = add[len(add)-1].Epoch
		}
		if h.LeaderEpoch > newest {
			add = append(add, EpochEntry{Epoch: h.LeaderEpoch, StartOffset: h.BaseOffset})
		}
		return true
	})
	if err != nil {
		return err
	}
	for _, e := range add {
		if err := c.Assign(e.Epoch, e.StartOffset); err != nil {
			return err
		}
	}
	return nil
}

// epochsFromLog rebuilds the cache from the epochs stamped on the batches.
func epochsFromLog(l *wlog.Log) ([]EpochEntry, error) {
	var out []EpochEntry
	err := l.ScanHeaders(l.StartOffset(), func(h wlog.BatchHeader) bool {
		if h.LeaderEpoch >= 0 && (len(out) == 0 || h.LeaderEpoch > out[len(out)-1].Epoch) {
			out = append(out, EpochEntry{Epoch: h.LeaderEpoch, StartOffset: h.BaseOffset})
		}
		return true
	})
	return out, err
}

// Log is the replica's log for reading: its own, or while the partition
// was never written (with Env.OpenLog) the blank log of its settings,
// which reads as the empty log at offset 0 and is not written (see
// internal/log's blank.go). OwnLog is the one to write.
func (r *Replica) Log() *wlog.Log { return r.log() }

func (r *Replica) log() *wlog.Log { return r.cache.log.Load() }

// OwnLog is the replica's own log, opened first through Env.OpenLog when
// it held a blank: for a caller about to write it or give it state of
// its own (producer state; a config of its own is SetLogConfig's).
func (r *Replica) OwnLog() (*wlog.Log, error) {
	for {
		l := r.log()
		if !l.IsBlank() {
			return l, nil
		}
		own, err := r.env().OpenLog(r, l.Config())
		if err != nil {
			return nil, fmt.Errorf("%w: open log: %v", kerr.KafkaStorageError, err)
		}
		own.NoteHighWatermark(0) // the blank's, the only one it can have
		if r.cache.log.CompareAndSwap(l, own) {
			return own, nil
		}
		own.Close() // a config change or another writer came first
	}
}

// LogToWrite is OwnLog for a caller with no error to return: when the
// log cannot be opened it is the blank, whose writes fail with an error
// (and whose producer state is nil), so the failure is reported there.
func (r *Replica) LogToWrite() *wlog.Log {
	if l, err := r.OwnLog(); err == nil {
		return l
	}
	return r.log()
}

// SetLogConfig applies a topic config change to the replica's log: its
// own, or, while it holds a blank, by holding the blank of the new
// settings (the log opened later takes them).
func (r *Replica) SetLogConfig(cfg wlog.Config) error {
	for {
		l := r.log()
		if !l.IsBlank() {
			return l.SetConfig(cfg)
		}
		b, err := l.BlankFor(cfg)
		if err != nil {
			return err
		}
		if r.cache.log.CompareAndSwap(l, b) {
			return nil
		}
	}
}

// EpochCache is the replica's leader-epoch cache.
func (r *Replica) EpochCache() *EpochCache { return &r.cache }

// lead is the leader state with the broker's rules. mu held, leader.
func (r *Replica) lead() leading { return leading{r.ls, r.env().rules} }

// Owner is Config.Owner.
func (r *Replica) Owner() Owner { return r.owner }

// Topic, TopicID and Partition are the replica's identity, as its Owner
// gives it.
func (r *Replica) Topic() string     { return r.owner.Topic() }
func (r *Replica) TopicID() [16]byte { return r.owner.TopicID() }
func (r *Replica) Partition() int32  { return r.owner.Partition() }
func (r *Replica) now() time.Time    { return r.env().Now() }

// env is the Env the replica shares, its Owner's.
func (r *Replica) env() *Env { return r.owner.ReplicaEnv() }

// identity is the Owner of a replica opened without one.
type identity struct {
	topic     string
	id        [16]byte
	partition int32
	env       *Env
}

func (i *identity) Topic() string     { return i.topic }
func (i *identity) TopicID() [16]byte { return i.id }
func (i *identity) Partition() int32  { return i.partition }
func (i *identity) ReplicaEnv() *Env  { return i.env }

// debug and info log with the replica's topic and partition; the
// attributes are built only when the level is on (a replica holds no
// logger of its own).
func (r *Replica) debug(msg string, args ...any) { r.logAt(slog.LevelDebug, msg, args) }
func (r *Replica) info(msg string, args ...any)  { r.logAt(slog.LevelInfo, msg, args) }
func (r *Replica) warn(msg string, args ...any)  { r.logAt(slog.LevelWarn, msg, args) }

func (r *Replica) logAt(level slog.Level, msg string, args []any) {
	l := r.env().Logger
	if !l.Enabled(context.Background(), level) {
		return
	}
	l.Log(context.Background(), level, msg, append([]any{"topic", r.Topic(), "partition", r.Partition()}, args...)...)
}

// HighWatermark is the offset below which records are committed: what
// consumers may read.
func (r *Replica) HighWatermark() int64 { return r.hw() }

// hw is the high watermark, as noted in the log; setHW changes it. Its
// writers are serialised by the replica's locks: the leader's under mu,
// the follower's and truncations under roleMu.
func (r *Replica) hw() int64      { return r.log().NotedHighWatermark() }
func (r *Replica) setHW(hw int64) { r.log().NoteHighWatermark(hw) }

// SetMinISR changes min.insync.replicas (a topic config change). Values
// past 32,767 are stored as that: no ISR can reach either.
func (r *Replica) SetMinISR(n int) {
	r.roleMu.Lock()
	defer r.roleMu.Unlock()
	r.minISR = int16(min(max(n, 1), math.MaxInt16))
	r.mu.Lock()
	if r.ls != nil {
		r.ls.minISR = r.minISR
	}
	r.mu.Unlock()
}

// State returns the role, leader and leader epoch.
func (r *Replica) State() (role Role, leader, leaderEpoch int32) {
	r.roleMu.RLock()
	defer r.roleMu.RUnlock()
	return r.role, r.leader, r.leaderEpoch
}

// ISR returns the committed ISR and, when a change is in flight, the
// proposed one; both nil unless leader.
func (r *Replica) ISR() (committed, pending []int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ls == nil {
		return nil, nil
	}
	if p := r.ls.inFlight(); p != nil {
		pending = slices.Clone(p.NewISR)
	}
	return slices.Clone(r.ls.isr()), pending
}

// BecomeLeader applies metadata that names this broker leader. A new
// leader epoch records (epoch, log end offset) in the epoch cache, resets
// follower progress (ISR members count as caught up now) and fails acks=all
// waiters of the previous epoch; the same leader epoch with a newer
// partition epoch only applies replicas and ISR (clearing any ISR change in
// flight). Older leader epochs fail with ErrStaleState; a partition epoch
// not newer than the leader's is a no-op.
func (r *Replica) BecomeLeader(st PartitionState) error {
	if st.Leader != r.env().LocalID {
		return fmt.Errorf("%w: leader %d, this broker %d", ErrWrongRole, st.Leader, r.env().LocalID)
	}
	r.roleMu.Lock()
	if st.LeaderEpoch < r.leaderEpoch {
		r.roleMu.Unlock()
		return fmt.Errorf("%w: leader epoch %d, have %d", ErrStaleState, st.LeaderEpoch, r.leaderEpoch)
	}
	now := r.now()
	leo := r.log().EndOffset()
	if r.role == RoleLeader && st.LeaderEpoch == r.leaderEpoch {
		r.mu.Lock()
		// An AlterPartition answer may already have brought the leader
		// this partition epoch or a newer one.
		if st.PartitionEpoch <= r.ls.partitionEpoch {
			r.mu.Unlock()
			r.roleMu.Unlock()
			return nil
		}
		isrChanged, proposed := !slices.Equal(r.ls.isr(), st.ISR), r.ls.inFlight() != nil
		r.lead().setAssignment(st, now)
		moved := r.lead().advanceHW(leo, now)
		r.afterHWLocked(moved)
		r.mu.Unlock()
		r.roleMu.Unlock()
		r.notifyHW(moved)
		switch {
		case isrChanged && proposed:
			// Most likely this leader's change, committed and in the
			// image before the controller's answer came (always possible
			// on the controller's own node): the answer will match no
			// change in flight and goes unlogged.
			r.info("replica: ISR changed", "isr", st.ISR, "partition_epoch", st.PartitionEpoch, "from", "metadata")
		case isrChanged:
			// The controller's own change (a fenced broker leaves the
			// ISRs), or a restart replaying the metadata log: one line
			// per partition and change, so not at INFO.
			r.debug("replica: ISR changed", "isr", st.ISR, "partition_epoch", st.PartitionEpoch, "from", "metadata")
		}
		return nil
	}
	// A never-written log's leader leaves its epoch's entry implied
	// (epochEntries) until its first append or the leadership's end.
	if !r.cache.empty() || leo != r.log().StartOffset() {
		if err := r.cache.Assign(st.LeaderEpoch, leo); err != nil {
			r.roleMu.Unlock()
			return err
		}
	}
	r.role, r.leader, r.leaderEpoch = RoleLeader, st.Leader, st.LeaderEpoch
	r.mu.Lock()
	r.wakeLocked() // the previous epoch's waiters
	r.ls = newLeaderState(r.env().rules, st, leo, r.hw(), now)
	r.ls.minISR = r.minISR
	moved := r.lead().advanceHW(leo, now)
	r.afterHWLocked(moved)
	r.wakeLocked()
	r.mu.Unlock()
	r.roleMu.Unlock()
	r.debug("replica: became leader", "epoch", st.LeaderEpoch, "partition_epoch", st.PartitionEpoch, "isr", st.ISR, "leo", leo, "hw", r.hw())
	r.notifyHW(moved)
	return nil
}

// BecomeFollower applies metadata that names another broker (or none,
// leader -1) leader. The log is not truncated here: the fetcher finds the
// divergence point from the leader (Fetch v12+ DivergingEpoch). Waiters for
// acks=all fail with NOT_LEADER_OR_FOLLOWER. The broker must remove the
// partition from the fetcher of its previous leader and add it to the new
// one (Manager.AddPartitions) after this call.
func (r *Replica) BecomeFollower(st PartitionState) error {
	if st.Leader == r.env().LocalID {
		return fmt.Errorf("%w: this broker %d is the leader", ErrWrongRole, st.Leader)
	}
	r.roleMu.Lock()
	defer r.roleMu.Unlock()
	if st.LeaderEpoch < r.leaderEpoch {
		return fmt.Errorf("%w: leader epoch %d, have %d", ErrStaleState, st.LeaderEpoch, r.leaderEpoch)
	}
	changed := r.role != RoleFollower || r.leaderEpoch != st.LeaderEpoch || r.leader != st.Leader
	r.endLeadershipLocked()
	r.role, r.leader, r.leaderEpoch = RoleFollower, st.Leader, st.LeaderEpoch
	r.mu.Lock()
	r.wakeLocked()
	r.ls = nil
	r.mu.Unlock()
	if changed {
		r.debug("replica: became follower", "leader", st.Leader, "epoch", st.LeaderEpoch, "leo", r.log().EndOffset(), "hw", r.hw())
	}
	return nil
}

// Stop ends the replica's role when the broker stops hosting it (a
// reassignment moved it elsewhere, its topic was deleted): acks=all
// waiters fail at once with NOT_LEADER_OR_FOLLOWER instead of waiting for
// their timeout, and appends are refused. The broker removes it from its
// fetcher too (Manager.RemovePartitions).
func (r *Replica) Stop() {
	r.roleMu.Lock()
	defer r.roleMu.Unlock()
	r.endLeadershipLocked()
	r.role, r.leader = RoleNone, -1
	r.mu.Lock()
	r.wakeLocked()
	r.ls = nil
	r.mu.Unlock()
}

// endLeadershipLocked writes the epoch entry a leader of a never-written
// log held implied into the cache, as the leadership ends: the cache then
// holds what Kafka's would. A checkpoint that cannot be written is
// logged: the role changes regardless, and the next change of the cache
// writes it again. roleMu held for writing.
func (r *Replica) endLeadershipLocked() {
	if r.role != RoleLeader {
		return
	}
	if err := r.cache.assignFirst(r.leaderEpoch); err != nil {
		r.env().Logger.Warn("replica: leader-epoch checkpoint not written", "topic", r.Topic(), "partition", r.Partition(), "err", err)
	}
}

// endOffsetFor is the cache's EndOffsetFor with the entry a leader of a
// never-written log holds implied: (leader epoch, log end), as
// BecomeLeader would have assigned it. Only the leader's own first append
// writes its log, and that assigns the entry first, so while the cache is
// empty leo is where the epoch starts. roleMu held.
func (r *Replica) endOffsetFor(requested int32, leo int64) (int32, int64) {
	if r.role == RoleLeader && r.cache.empty() {
		implied := [1]EpochEntry{{Epoch: r.leaderEpoch, StartOffset: leo}}
		return endOffsetIn(implied[:], requested, leo)
	}
	return r.cache.EndOffsetFor(requested, leo)
}

// checkLeaderEpoch is Kafka's check of a request's current leader epoch
// against this leader's: -1 skips it, older is FENCED_LEADER_EPOCH, newer
// UNKNOWN_LEADER_EPOCH (this broker has not seen the change yet).
func checkLeaderEpoch(requested, current int32) error {
	switch {
	case requested < 0 || requested == current:
		return nil
	case requested < current:
		return fmt.Errorf("%w: request epoch %d, leader epoch %d", kerr.FencedLeaderEpoch, requested, current)
	default:
		return fmt.Errorf("%w: request epoch %d, leader epoch %d", kerr.UnknownLeaderEpoch, requested, current)
	}
}

// wakeLocked wakes every WaitForHW caller so they re-check. Only a
// leader has waiters (WaitForHW returns at once otherwise), so the
// channel is its leaderState's, made only when someone waits: an append
// nobody waits on (acks=0 or 1) allocates nothing here. Whatever replaces
// or drops the leaderState wakes its waiters first. mu held.
func (r *Replica) wakeLocked() {
	if ls := r.ls; ls != nil && ls.busy != nil && ls.hwCh != nil {
		close(ls.hwCh)
		ls.hwCh = nil
	}
}

// waitChLocked returns the channel wakeLocked closes next. mu held, and
// the replica leads.
func (r *Replica) waitChLocked() chan struct{} {
	r.lead().expand()
	if r.ls.hwCh == nil {
		r.ls.hwCh = make(chan struct{})
	}
	return r.ls.hwCh
}

// afterHWLocked publishes a moved leader high watermark. mu held.
func (r *Replica) afterHWLocked(moved bool) {
	if moved {
		r.setHW(r.ls.hw)
		r.wakeLocked()
	}
}

func (r *Replica) notifyHW(moved bool) {
	if moved && r.env().OnHighWatermark != nil {
		r.env().OnHighWatermark(r, r.hw())
	}
}

func (r *Replica) proposeISR(c *ISRChange) {
	if c == nil {
		return
	}
	r.debug("replica: proposing ISR change", "epoch", c.LeaderEpoch, "partition_epoch", c.PartitionEpoch, "isr", c.NewISR)
	if r.env().OnISRChange != nil {
		r.env().OnISRChange(r, *c)
	}
}

// StateOf is a metadata image partition as a PartitionState. Its
// slices are the image's (which never change), capped so that an append
// copies: a leader keeps them rather than a copy of its own.
func StateOf(p metadata.Partition) PartitionState {
	r, isr := p.Replicas(), p.ISR()
	return PartitionState{
		Leader:         p.Leader(),
		LeaderEpoch:    p.LeaderEpoch(),
		PartitionEpoch: p.PartitionEpoch(),
		Replicas:       r[:len(r):len(r)],
		ISR:            isr[:len(isr):len(isr)],
		lists:          p.ReplicasAndISR(),
	}
}
