package partitioner

import (
	"sync"
	"sync/atomic"
)

// DefaultBatchSize is batch.size's default, 16 KiB.
const DefaultBatchSize = 16384

// Config configures the built-in partitioning of one producer. Each field
// carries the Java client property it mirrors.
type Config struct {
	// BatchSize is batch.size: the bytes to produce to a partition before
	// switching. Values below 1 are treated as 1, as the Java client does
	// since KAFKA-14303 (0 used to loop forever).
	BatchSize int
	// Adaptive is partitioner.adaptive.partitioning.enable (Java default
	// true): weight switch targets by queue length instead of choosing
	// uniformly.
	Adaptive bool
	// AvailabilityTimeoutMs is partitioner.availability.timeout.ms (default 0,
	// off). When positive and Adaptive is on, a partition whose leader has had
	// data waiting that it could not take for longer than this stops being a
	// switch target until its node drains again.
	AvailabilityTimeoutMs int64
	// IgnoreKeys is partitioner.ignore.keys (default false): keyed records
	// take the sticky path too.
	IgnoreKeys bool
	// Weighting picks the queue measure of adaptive partitioning. The zero
	// value, WeightBatches, is the Java client's.
	Weighting Weighting
	// OnSwitch, if set, is called after every sticky switch with the partition
	// left (-1 for the first choice), the one chosen and the bytes counted on
	// the old one. It runs under the caller's queue lock: keep it to a counter
	// increment or a guarded debug log.
	OnSwitch func(from, to int32, produced int64)
}

// DefaultConfig returns the Java client's defaults.
func DefaultConfig() Config {
	return Config{BatchSize: DefaultBatchSize, Adaptive: true}
}

// Sticky is the current switch target of a UniformSticky and the bytes
// produced to it so far. A switch installs a new Sticky with a zero count, so
// pointer identity tells a caller whether the target moved under it.
type Sticky struct {
	partition int32
	produced  atomic.Int64
}

// Partition is the partition records go to while this Sticky is current.
func (s *Sticky) Partition() int32 { return s.partition }

// Produced is the bytes counted against this Sticky so far.
func (s *Sticky) Produced() int64 { return s.produced.Load() }

// UniformSticky is the KIP-794 partitioner for records without a partition
// (and, unless keys are used, without a key) of one topic: it sticks to one
// partition until about batch.size bytes went there, then switches, choosing
// the next target uniformly or, when adaptive, with odds that fall as a
// partition's queue grows. The accumulator drives it; see the package
// documentation for the append protocol.
//
// Concurrency: Peek and Changed are safe anywhere. Recheck and Update for a
// Sticky must be called while holding the lock of that Sticky's partition
// queue; this is what serializes switches. UpdateLoad may run concurrently
// with all of them (the sender calls it). Per-record calls do not allocate; a
// switch allocates one Sticky.
type UniformSticky struct {
	batchSize int64
	adaptive  bool
	timeoutMs int64
	ignore    bool
	weighting Weighting
	onSwitch  func(from, to int32, produced int64)
	rand      Rand

	cur   atomic.Pointer[Sticky]
	stats atomic.Pointer[loadStats] // nil: uniform

	scratchMu  sync.Mutex // guards the scratch slices of UpdateLoad
	scratchQ   []int64
	scratchIDs []int32
}

// NewUniformSticky returns the built-in partitioner of one topic. rand nil
// means DefaultRand.
func NewUniformSticky(cfg Config, rand Rand) *UniformSticky {
	if rand == nil {
		rand = DefaultRand
	}
	return &UniformSticky{
		batchSize: int64(max(1, cfg.BatchSize)),
		adaptive:  cfg.Adaptive,
		timeoutMs: cfg.AvailabilityTimeoutMs,
		ignore:    cfg.IgnoreKeys,
		weighting: cfg.Weighting,
		onSwitch:  cfg.OnSwitch,
		rand:      rand,
	}
}

// KeyedPartition returns the partition the key decides, and true, when the
// record has a key and keys are not ignored. Otherwise the record goes to the
// sticky partition (Peek) and the result is (-1, false).
func (u *UniformSticky) KeyedPartition(r Record, t *Topic) (int32, bool) {
	if r.Key == nil || u.ignore || t.NumPartitions() == 0 {
		return -1, false
	}
	return PartitionForKey(r.Key, t.NumPartitions()), true
}

// Peek returns the current Sticky, choosing the first target if there is
// none. It returns nil only when t has no partitions.
func (u *UniformSticky) Peek(t *Topic) *Sticky {
	if s := u.cur.Load(); s != nil {
		return s
	}
	p := u.next(t)
	if p < 0 {
		return nil
	}
	s := &Sticky{partition: p}
	if u.cur.CompareAndSwap(nil, s) {
		u.switched(-1, p, 0)
		return s
	}
	return u.cur.Load() // another goroutine installed the first one
}

// Changed reports whether s is no longer current: the caller raced a switch
// and must Peek again.
func (u *UniformSticky) Changed(s *Sticky) bool { return s != nil && u.cur.Load() != s }

// Recheck runs after the caller has locked s's partition queue and before it
// appends. It returns true, and the caller must unlock and start over with
// Peek, if s was switched away meanwhile, or if a switch deferred earlier can
// now complete because every batch in the queue is full (allBatchesFull).
func (u *UniformSticky) Recheck(s *Sticky, allBatchesFull bool, t *Topic) bool {
	if u.Changed(s) {
		return true
	}
	if allBatchesFull {
		u.Update(s, 0, true, t)
		return u.Changed(s)
	}
	return false
}

// Update counts appendedBytes against s and switches when enough has been
// produced. Call it under s's queue lock right after the append, with the
// growth of the batch's size estimate (record overhead, headers, compression
// estimate and, for a new batch, the batch header) and whether every batch in
// the queue is now full.
//
// The switch happens once batch.size bytes were counted if every batch is
// full; otherwise it waits for the open batch to fill, up to 2×batch.size
// bytes (KAFKA-14156). The new target starts from zero: bytes over the
// threshold are not carried. A nil s (no sticky in use) is ignored.
func (u *UniformSticky) Update(s *Sticky, appendedBytes int, allBatchesFull bool, t *Topic) {
	if s == nil {
		return
	}
	produced := s.produced.Add(int64(appendedBytes))
	if !(produced >= u.batchSize && allBatchesFull || produced >= 2*u.batchSize) {
		return
	}
	p := u.next(t)
	if p < 0 {
		return
	}
	if u.cur.CompareAndSwap(s, &Sticky{partition: p}) {
		u.switched(s.partition, p, produced)
	}
}

func (u *UniformSticky) switched(from, to int32, produced int64) {
	if u.onSwitch != nil {
		u.onSwitch(from, to, produced)
	}
}

// next draws the next target: weighted by the load stats when there are any,
// uniformly among led partitions otherwise.
func (u *UniformSticky) next(t *Topic) int32 {
	r := u.rand()
	if s := u.stats.Load(); s != nil {
		return s.pick(r)
	}
	return pickUniform(r, t)
}

// UpdateLoad refreshes the adaptive weights from the accumulator's queues; the
// sender calls it on each readiness pass. queues has one entry per partition
// that has a queue in the accumulator, empty or not. Weights are used only
// when adaptive partitioning is on and every partition of t has a queue
// (until each has had a batch, a missing one would never be chosen).
// Partitions without a leader are left out; with an availability timeout, so
// is a partition with queued data whose leader has been stalled longer than
// the timeout according to nodes (nil: no exclusion).
//
// It allocates the new table only when the result is not uniform.
func (u *UniformSticky) UpdateLoad(t *Topic, queues []PartitionQueue, nodes *NodeLatency) {
	if !u.adaptive || len(queues) < int(t.NumPartitions()) {
		u.stats.Store(nil)
		return
	}
	u.scratchMu.Lock()
	defer u.scratchMu.Unlock()
	checkNodes := u.timeoutMs > 0 && nodes != nil
	if checkNodes {
		nodes.mu.RLock()
		defer nodes.mu.RUnlock()
	}
	u.scratchQ = u.scratchQ[:0]
	u.scratchIDs = u.scratchIDs[:0]
	for _, pq := range queues {
		leader := t.Leader(pq.Partition)
		if leader == NoLeader {
			continue
		}
		// An empty queue is never excluded: nothing of it is stuck.
		if checkNodes && pq.Batches > 0 && nodes.stalledLocked(leader) > u.timeoutMs {
			continue
		}
		v := int64(pq.Batches)
		if u.weighting != WeightBatches {
			v = pq.Bytes
		}
		u.scratchQ = append(u.scratchQ, v)
		u.scratchIDs = append(u.scratchIDs, pq.Partition)
	}
	u.stats.Store(buildLoadStats(u.scratchQ, u.scratchIDs, len(u.scratchQ), len(queues), u.weighting, u.batchSize))
}

// PartitionWeight is one entry of the adaptive weights, for metrics.
type PartitionWeight struct {
	Partition int32
	Weight    int64
}

// Weights returns the adaptive weights in use, or nil when the next switch
// will choose uniformly. It allocates; meant for metrics and debugging.
func (u *UniformSticky) Weights() []PartitionWeight {
	s := u.stats.Load()
	if s == nil {
		return nil
	}
	out := make([]PartitionWeight, len(s.ids))
	var prev int64
	for i, id := range s.ids {
		out[i] = PartitionWeight{Partition: id, Weight: s.cft[i] - prev}
		prev = s.cft[i]
	}
	return out
}
