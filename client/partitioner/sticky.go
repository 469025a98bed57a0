package partitioner

import (
	"slices"
	"sync/atomic"
)

// StickyPerBatch returns the KIP-480 sticky partitioner (Kafka 2.4 to 3.2's
// default): records without a key all go to one partition until that
// partition needs a new batch, then to another one chosen uniformly among
// the led partitions, never the one just left when there is a choice. Keyed
// records are hashed with PartitionForKey unless ignoreKeys is set, which
// makes it the old UniformStickyPartitioner. rand nil means DefaultRand.
//
// It is kept for comparison and for users who ask for it: it sends more data
// to slower brokers (see the package documentation). The built-in
// UniformSticky is the better default.
func StickyPerBatch(rand Rand, ignoreKeys bool) Partitioner {
	if rand == nil {
		rand = DefaultRand
	}
	return stickyPerBatch{rand: rand, ignoreKeys: ignoreKeys}
}

type stickyPerBatch struct {
	rand       Rand
	ignoreKeys bool
}

func (s stickyPerBatch) ForTopic(string) TopicPartitioner {
	tp := &stickyTopic{rand: s.rand, ignoreKeys: s.ignoreKeys}
	tp.cached.Store(-1)
	return tp
}

// stickyTopic holds one topic's sticky choice; -1 means none yet. Switches
// are compare-and-swap from the partition being left, so when several
// goroutines hit a full batch on the same partition at once only the first
// switches and the others follow its choice.
type stickyTopic struct {
	rand       Rand
	ignoreKeys bool
	cached     atomic.Int32
}

func (s *stickyTopic) Partition(r Record, t *Topic) int32 {
	if r.Key != nil && !s.ignoreKeys && t.NumPartitions() > 0 {
		return PartitionForKey(r.Key, t.NumPartitions())
	}
	if p := s.cached.Load(); p >= 0 {
		return p
	}
	return s.next(t, -1)
}

// OnNewBatch moves the sticky choice away from prev (if it is still the
// choice) and returns where r goes now. A keyed record still goes where its
// key says; the move then only affects the unkeyed records after it, as in
// KIP-480.
func (s *stickyTopic) OnNewBatch(r Record, t *Topic, prev int32) int32 {
	s.next(t, prev)
	return s.Partition(r, t)
}

// next switches the choice if there is none or it is still prev, and returns
// the choice in force afterwards.
func (s *stickyTopic) next(t *Topic, prev int32) int32 {
	old := s.cached.Load()
	if old >= 0 && old != prev {
		return old // someone else already moved on from prev
	}
	p := pickOther(s.rand(), t, old)
	if p < 0 {
		return s.cached.Load()
	}
	s.cached.CompareAndSwap(old, p)
	return s.cached.Load()
}

// pickOther chooses uniformly among the led partitions other than old, with
// one random draw; with a single led partition it returns that one, and with
// none it draws among all partitions. (Java redraws until the result differs;
// one draw over the n-1 others has the same distribution and cannot spin.)
func pickOther(r uint32, t *Topic, old int32) int32 {
	avail := t.Available()
	if len(avail) < 2 {
		return pickUniform(r, t)
	}
	x := ToPositive(r)
	k, found := slices.BinarySearch(avail, old)
	if !found {
		return avail[x%int32(len(avail))]
	}
	i := x % int32(len(avail)-1)
	if i >= int32(k) {
		i++
	}
	return avail[i]
}

// RoundRobin returns a partitioner that sends consecutive records of a topic
// to consecutive led partitions (all partitions when none has a leader),
// keys ignored, as the Java client's RoundRobinPartitioner. It is not
// BatchAware, so opening a batch never costs a record its turn: every
// partition gets every n-th record (the Java one hit only even or odd
// partitions under KAFKA-9965 until 3.9).
func RoundRobin() Partitioner { return roundRobin{} }

type roundRobin struct{}

func (roundRobin) ForTopic(string) TopicPartitioner { return &roundRobinTopic{} }

type roundRobinTopic struct{ next atomic.Uint64 }

func (rr *roundRobinTopic) Partition(_ Record, t *Topic) int32 {
	c := rr.next.Add(1) - 1
	if avail := t.Available(); len(avail) > 0 {
		return avail[c%uint64(len(avail))]
	}
	if n := t.NumPartitions(); n > 0 {
		return int32(c % uint64(n))
	}
	return -1
}
