package partitioner

import (
	"math/rand/v2"
	"sync"
)

// batchHeaderBytes is the size of a v2 record batch header; a new batch's
// first append reports it on top of the record, as the Java estimate does.
const batchHeaderBytes = 61

// queue is the part of an accumulator's per-partition batch queue that the
// append protocols below need. The fake accumulator's queues lock for real;
// the single-threaded simulation's do not.
type queue interface {
	lock()
	unlock()
	// allFull reports whether every queued batch is closed to appends (only
	// the last one can be open).
	allFull() bool
	// tryAppend adds n record bytes to the open batch and returns n, or
	// closes the batch and returns -1 when it has no room.
	tryAppend(n int) int
	// newBatch opens a batch holding the record and returns its size.
	newBatch(n int) int
}

// appendSticky places one unkeyed record of n bytes the way the Java
// RecordAccumulator.append loop does with the built-in partitioner, and
// returns the partition it went to. It is the reference for how the real
// accumulator must drive UniformSticky.
func appendSticky(u *UniformSticky, t *Topic, queueOf func(int32) queue, n int) int32 {
	for {
		s := u.Peek(t)
		q := queueOf(s.Partition())
		q.lock()
		if u.Recheck(s, q.allFull(), t) {
			q.unlock()
			continue
		}
		if app := q.tryAppend(n); app >= 0 {
			u.Update(s, app, q.allFull(), t)
			q.unlock()
			return s.Partition()
		}
		q.unlock()
		// A real accumulator allocates the new batch's buffer here, outside
		// the lock, and so must check again: the batch it just closed may be
		// what completes a deferred switch.
		q.lock()
		if u.Recheck(s, q.allFull(), t) {
			q.unlock()
			continue
		}
		app := q.tryAppend(n) // another appender may have opened a batch meanwhile
		if app < 0 {
			app = q.newBatch(n)
		}
		u.Update(s, app, q.allFull(), t)
		q.unlock()
		return s.Partition()
	}
}

// appendCustom places one record of n bytes with a TopicPartitioner,
// following the BatchAware protocol: Partition once, OnNewBatch at most once
// when the chosen partition needs a new batch.
func appendCustom(tp TopicPartitioner, r Record, t *Topic, queueOf func(int32) queue, n int) int32 {
	p := tp.Partition(r, t)
	q := queueOf(p)
	q.lock()
	if q.tryAppend(n) >= 0 {
		q.unlock()
		return p
	}
	q.unlock()
	if ba, ok := tp.(BatchAware); ok {
		p = ba.OnNewBatch(r, t, p)
		q = queueOf(p)
	}
	q.lock()
	if q.tryAppend(n) < 0 {
		q.newBatch(n)
	}
	q.unlock()
	return p
}

// fakeQueue is a counting stand-in for a partition's batch deque: it tracks
// only the open batch's size and totals.
type fakeQueue struct {
	mu        sync.Mutex
	batchSize int
	open      bool
	lastBytes int
	batches   int
	bytes     int64 // everything ever appended, batch headers included
	records   int64
}

func (q *fakeQueue) lock()         { q.mu.Lock() }
func (q *fakeQueue) unlock()       { q.mu.Unlock() }
func (q *fakeQueue) allFull() bool { return !q.open }

func (q *fakeQueue) tryAppend(n int) int {
	if !q.open {
		return -1
	}
	if q.lastBytes+n > q.batchSize {
		q.open = false
		return -1
	}
	q.lastBytes += n
	q.bytes += int64(n)
	q.records++
	q.open = q.lastBytes < q.batchSize
	return n
}

func (q *fakeQueue) newBatch(n int) int {
	size := batchHeaderBytes + n
	q.lastBytes = size
	q.open = size < q.batchSize // a record bigger than a batch gets a full batch of its own
	q.batches++
	q.bytes += int64(size)
	q.records++
	return size
}

// fakeAccum is a minimal accumulator: one fakeQueue per partition.
type fakeAccum struct {
	t      *Topic
	queues []fakeQueue
}

func newFakeAccum(t *Topic, batchSize int) *fakeAccum {
	a := &fakeAccum{t: t, queues: make([]fakeQueue, t.NumPartitions())}
	for i := range a.queues {
		a.queues[i].batchSize = max(1, batchSize)
	}
	return a
}

func (a *fakeAccum) queueOf(p int32) queue { return &a.queues[p] }

func (a *fakeAccum) bytesPerPartition() []int64 {
	out := make([]int64, len(a.queues))
	for i := range a.queues {
		out[i] = a.queues[i].bytes
	}
	return out
}

func (a *fakeAccum) recordsPerPartition() []int64 {
	out := make([]int64, len(a.queues))
	for i := range a.queues {
		out[i] = a.queues[i].records
	}
	return out
}

// leaders returns a leader list for n partitions on node 1, with the given
// partitions leaderless.
func leaders(n int, leaderless ...int32) []int32 {
	l := make([]int32, n)
	for i := range l {
		l[i] = 1
	}
	for _, p := range leaderless {
		l[p] = NoLeader
	}
	return l
}

// seeded returns a deterministic Rand for single-goroutine tests.
func seeded(seed uint64) Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)).Uint32 }
