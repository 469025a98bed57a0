package partitioner

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
)

// NoLeader marks a partition whose leader is unknown in a Topic's leader list.
const NoLeader int32 = -1

// ErrInvalidPartition is returned by Check for a partition outside the topic.
var ErrInvalidPartition = errors.New("partitioner: partition out of range")

// Record is what a partitioner may look at. Key nil means "no key"; an empty
// but non-nil Key is a key like any other (it hashes to a fixed partition), as
// a zero-length byte[] is in the Java client.
type Record struct {
	Key   []byte
	Value []byte
}

// Topic is an immutable view of one topic's partitions, built by the caller
// from its metadata and replaced (not modified) when the metadata changes.
// Partitioners keep no reference to it past a call.
type Topic struct {
	name      string
	leaders   []int32
	available []int32
}

// NewTopic builds the view of topic name whose partition i is led by node
// leaders[i] (NoLeader, or any negative id, when unknown). The slice is
// copied. A topic always has at least one partition; a view with none makes
// every partitioner answer -1 ("nothing to choose from yet").
func NewTopic(name string, leaders []int32) *Topic {
	t := &Topic{name: name, leaders: slices.Clone(leaders)}
	for p, l := range t.leaders {
		if l < 0 {
			t.leaders[p] = NoLeader
			continue
		}
		t.available = append(t.available, int32(p))
	}
	return t
}

// Name is the topic's name.
func (t *Topic) Name() string { return t.name }

// NumPartitions counts every partition, led or not.
func (t *Topic) NumPartitions() int32 { return int32(len(t.leaders)) }

// Available lists, in ascending order, the partitions whose leader is known.
// The slice is shared: do not modify it.
func (t *Topic) Available() []int32 { return t.available }

// Leader returns the node leading partition p, or NoLeader.
func (t *Topic) Leader(p int32) int32 {
	if p < 0 || int(p) >= len(t.leaders) {
		return NoLeader
	}
	return t.leaders[p]
}

// Check reports whether p is a partition of t; a custom partitioner's answer
// goes through it before the record is queued.
func Check(p int32, t *Topic) error {
	if p < 0 || p >= t.NumPartitions() {
		return fmt.Errorf("%w: %d not in [0,%d) for topic %q", ErrInvalidPartition, p, t.NumPartitions(), t.name)
	}
	return nil
}

// Rand returns uniformly distributed 32-bit values. Partitioners shared
// between goroutines call it concurrently, so it must be safe for that;
// DefaultRand is. Tests inject a seeded source to make choices repeatable.
type Rand func() uint32

// DefaultRand draws from math/rand/v2's per-thread generator: safe for
// concurrent use and allocation free.
func DefaultRand() uint32 { return rand.Uint32() }

// pickUniform is the switch target when nothing better is known: a uniform
// choice among the partitions with a leader or, if none has one, among all of
// them (records then wait in the queue until a leader appears). It consumes
// exactly one random value, like the Java client.
func pickUniform(r uint32, t *Topic) int32 {
	x := ToPositive(r)
	if n := int32(len(t.available)); n > 0 {
		return t.available[x%n]
	}
	if n := t.NumPartitions(); n > 0 {
		return x % n
	}
	return -1
}

// Partitioner is the pluggable partitioning strategy of a producer, the
// counterpart of the Java client's partitioner.class. The producer calls
// ForTopic once per topic and keeps the result; per-topic state (a sticky
// choice, a counter) lives in the TopicPartitioner, so the per-record path
// needs no map lookup.
//
// A producer with no Partitioner configured uses the built-in logic instead:
// PartitionForKey for keyed records and a UniformSticky per topic for the
// rest.
type Partitioner interface {
	ForTopic(topic string) TopicPartitioner
}

// TopicPartitioner chooses partitions for the records of one topic. It is
// called from many goroutines at once and must be safe for that.
type TopicPartitioner interface {
	// Partition returns a partition in [0, t.NumPartitions()) for r. The
	// producer calls it exactly once per record (see BatchAware for the one
	// exception) and rejects answers that fail Check.
	Partition(r Record, t *Topic) int32
}

// BatchAware is implemented by a TopicPartitioner that wants to move records
// when the partition it chose has no room left in its open batch: the KIP-480
// "change the sticky partition on a new batch" hook (onNewBatch in Java).
//
// The producer's protocol, which the implementations here rely on:
//
//  1. p := Partition(r, t).
//  2. If r fits in p's open batch, append it there. Done.
//  3. Otherwise, if the TopicPartitioner is BatchAware, p = OnNewBatch(r, t, p),
//     called once for this record. Append r to p, opening a batch there if its
//     open batch has no room either. Partition is not called again for r and
//     OnNewBatch is not called twice.
//
// Calling OnNewBatch once and taking its answer, instead of calling Partition
// a second time as the Java producer does, is what keeps a round-robin
// partitioner from skipping every other partition (KAFKA-9965).
type BatchAware interface {
	OnNewBatch(r Record, t *Topic, prev int32) int32
}

// Func adapts a stateless function to both Partitioner and TopicPartitioner.
type Func func(r Record, t *Topic) int32

// ForTopic returns f itself: a Func keeps no per-topic state.
func (f Func) ForTopic(string) TopicPartitioner { return f }

// Partition calls f.
func (f Func) Partition(r Record, t *Topic) int32 { return f(r, t) }
