package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"weir/client/internal/records"
	"weir/client/partitioner"
)

// ErrBufferExhausted is returned when buffer.memory stays full for
// max.block.ms.
var ErrBufferExhausted = errors.New("client: failed to allocate memory within the configured max blocking time")

// bufferPool accounts buffer.memory: every open or queued batch holds a
// reservation of max(batch.size, its first record's upper bound) until it
// completes. Appenders that find it exhausted block up to max.block.ms.
//
// It also keeps the buffers of completed batch.size batches for new ones,
// as the Java client's BufferPool does, at most buffer.memory / batch.size
// of them: a buffer is only kept once its batch is answered, and only
// taken for a batch holding a reservation, so kept and used buffers
// together stay within what buffer.memory allowed at the peak.
type bufferPool struct {
	mu      sync.Mutex
	avail   int64
	waiters int
	freed   chan struct{} // closed and replaced on each release

	batchSize int
	kept      [][]byte
	maxKept   int
	reused    int // buffers taken from kept, for tests
}

func newBufferPool(total int64, batchSize int) *bufferPool {
	return &bufferPool{avail: total, freed: make(chan struct{}), batchSize: batchSize,
		maxKept: int(total / int64(max(batchSize, 1)))}
}

// takeBuffer returns a kept batch buffer, or nil.
func (b *bufferPool) takeBuffer() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.kept)
	if n == 0 {
		return nil
	}
	buf := b.kept[n-1]
	b.kept[n-1] = nil
	b.kept = b.kept[:n-1]
	b.reused++
	return buf
}

// keepBuffer keeps buf for a later batch if it is batch-sized and the
// pool is not full; others are left to the garbage collector.
func (b *bufferPool) keepBuffer(buf []byte) {
	if cap(buf) < b.batchSize || cap(buf) > 2*b.batchSize {
		return
	}
	b.mu.Lock()
	if len(b.kept) < b.maxKept {
		b.kept = append(b.kept, buf[:0])
	}
	b.mu.Unlock()
}

func (b *bufferPool) reserve(bctx *blockCtx, n int64) error {
	b.mu.Lock()
	if b.avail < n {
		b.mu.Unlock()
		ctx := bctx.get()
		b.mu.Lock()
		return b.waitLocked(ctx, n)
	}
	b.avail -= n
	b.mu.Unlock()
	return nil
}

// waitLocked waits for n bytes, b.mu held; it returns with b.mu released.
func (b *bufferPool) waitLocked(ctx context.Context, n int64) error {
	for b.avail < n {
		ch := b.freed
		b.waiters++
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			b.mu.Lock()
			b.waiters--
			b.mu.Unlock()
			return fmt.Errorf("%w (%d bytes wanted): %w", ErrBufferExhausted, n, ctx.Err())
		}
		b.mu.Lock()
		b.waiters--
	}
	b.avail -= n
	b.mu.Unlock()
	return nil
}

func (b *bufferPool) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.avail += n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// exhausted reports whether an appender is waiting for memory: the sender
// then treats every batch as ready, as Java's accumulator does.
func (b *bufferPool) exhausted() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters > 0
}

// batch is one producer batch of one partition.
type batch struct {
	pq       *partQueue
	b        *records.Builder
	recs     []*pendingRecord
	created  time.Time
	memBytes int64
	num      uint64 // creation number (Flush waits for batches up to a number)

	// Sender state, guarded by pq.mu.
	attempts       int
	lastAttempt    time.Time
	backoff        time.Duration // wait before the next attempt (set on re-enqueue)
	seq            int32         // base sequence, -1 until first drained idempotently
	pid            int64
	epoch          int16
	leaderEpoch    int32  // leader epoch when last drained or observed, -1 unknown
	attemptsAtMove int    // attempts when the leader epoch last went up
	wire           []byte // the Builder's own buffer until a rebuild copies
	wireFor        records.Producer
	inflight       bool
	done           chan struct{} // closed when every record has its result
	finished       bool
}

// leaderMovedForRetry is KIP-951's test: this is a retry and the leader
// epoch went up since the last attempt, so no backoff applies.
func (b *batch) leaderMovedForRetry() bool {
	return b.attempts >= 1 && b.attempts == b.attemptsAtMove
}

// observeLeaderEpoch records the partition's current leader epoch.
func (b *batch) observeLeaderEpoch(epoch int32) {
	if epoch >= 0 && (b.leaderEpoch < 0 || epoch > b.leaderEpoch) {
		b.leaderEpoch = epoch
		b.attemptsAtMove = b.attempts
	}
}

// partQueue is one partition's queue of batches: the first is the oldest,
// only the last can be open for appends.
type partQueue struct {
	topic     *topicState
	partition int32

	mu       sync.Mutex
	batches  []*batch
	nextSeq  int32    // idempotence: next sequence to hand out
	inflight []*batch // idempotence: drained, not finished, by sequence
	excluded bool     // last readiness pass left it out for unavailability
	// slowLeader is set by the sender's readiness pass when the
	// partition's leader is slow (slownode.go).
	slowLeader atomic.Bool
}

func (q *partQueue) allFull() bool {
	n := len(q.batches)
	return n == 0 || q.batches[n-1].b.IsFull()
}

// switchable is what the sticky partitioner's deferred switch waits for
// (KAFKA-14156: do not leave a partly filled batch behind): every batch
// full, or a slow leader, whose open batch goes out when its current
// request is answered anyway. Waiting for it to fill there would give
// the slow broker the longest stints, more than its share of the bytes.
func (q *partQueue) switchable() bool {
	return q.allFull() || q.slowLeader.Load()
}

// tryAppend appends to the open batch; on no room it closes that batch.
func (q *partQueue) tryAppend(pr *pendingRecord) (int, bool) {
	n := len(q.batches)
	if n == 0 {
		return 0, false
	}
	last := q.batches[n-1]
	grew, ok := last.b.TryAppend(pr.ts, pr.rec.Key, pr.rec.Value, pr.hdrs)
	if !ok {
		last.b.Close()
		return 0, false
	}
	last.recs = append(last.recs, pr)
	return grew, true
}

// topicState is the accumulator's view of one topic.
type topicState struct {
	name     string
	sticky   *partitioner.UniformSticky   // built-in partitioning; nil with a custom one
	custom   partitioner.TopicPartitioner // partitioner.class, if set
	queues   atomic.Pointer[[]*partQueue] // index = partition; nil entries until first used
	mu       sync.Mutex                   // guards growing queues
	ratio    atomic.Uint64                // compression ratio estimate (float64 bits)
	switches atomic.Int64
}

func (t *topicState) queue(p int32) *partQueue {
	if qs := t.queues.Load(); qs != nil && int(p) < len(*qs) && (*qs)[p] != nil {
		return (*qs)[p]
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var cur []*partQueue
	if qs := t.queues.Load(); qs != nil {
		cur = *qs
	}
	if int(p) < len(cur) && cur[p] != nil {
		return cur[p]
	}
	next := make([]*partQueue, max(len(cur), int(p)+1))
	copy(next, cur)
	q := &partQueue{topic: t, partition: p}
	next[p] = q
	t.queues.Store(&next)
	return q
}

// all returns the queues created so far (nil entries skipped by callers).
func (t *topicState) all() []*partQueue {
	if qs := t.queues.Load(); qs != nil {
		return *qs
	}
	return nil
}

func (t *topicState) compressionRatio() float64 {
	if v := t.ratio.Load(); v != 0 {
		return float64frombits(v)
	}
	return 1
}

// pendingRecord is a record between Send and its result.
type pendingRecord struct {
	rec      *Record
	hdrs     []records.Header
	ts       int64
	appended time.Time
	cb       func(RecordMetadata, error)
	fut      Future
}

func (b *bufferPool) available() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.avail
}
