package partitioner

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// Weighting says which queue measure adaptive partitioning inverts into
// switch-target weights.
type Weighting uint8

const (
	// WeightBatches is the Java client's rule: weight = maxBatches+1 - batches,
	// from the number of batches queued per partition. The default.
	WeightBatches Weighting = iota
	// WeightBytes is the same linear inversion measured in queued bytes with one
	// batch.size of headroom: weight = maxBytes + batchSize - bytes. When every
	// queue holds whole batches it gives exactly WeightBatches' odds; in between
	// it sees the partly filled batch that a batch count rounds away.
	WeightBytes
	// WeightBytesInverse makes odds proportional to 1/(bytes + batchSize): a
	// true inverse with one batch of headroom so empty queues stay finite.
	WeightBytesInverse
)

func (w Weighting) String() string {
	switch w {
	case WeightBatches:
		return "batches"
	case WeightBytes:
		return "bytes"
	case WeightBytesInverse:
		return "bytes-inverse"
	}
	return fmt.Sprintf("Weighting(%d)", uint8(w))
}

// normalizedTotal is the sum the byte weightings scale their weights to. Byte
// counts can add up past the 31 bits a random draw covers; scaling keeps the
// table small enough that the modulo bias of a 31-bit draw stays below 0.05%.
const normalizedTotal = 1 << 20

// PartitionQueue is one partition's backlog in the producer's accumulator, as
// the sender sees it on a readiness pass.
type PartitionQueue struct {
	Partition int32
	Batches   int   // batches queued and not yet drained (in-flight ones excluded)
	Bytes     int64 // their estimated size in bytes
}

// loadStats is an immutable cumulative frequency table over the partitions
// that may be chosen. cft is strictly increasing (every weight is at least 1);
// a draw r in [0, cft[last]) selects the first index whose entry exceeds r.
type loadStats struct {
	cft []int64
	ids []int32
}

func (s *loadStats) pick(r uint32) int32 {
	x := int64(ToPositive(r)) % s.cft[len(s.cft)-1]
	i, found := slices.BinarySearch(s.cft, x)
	if found {
		i++ // an exact hit belongs to the next bucket: entries are exclusive upper bounds
	}
	return s.ids[i]
}

// buildLoadStats turns queue measures into a frequency table, following the
// Java client's updatePartitionLoadStats. queue[:length] and ids[:length] are
// the partitions that may be chosen (they have a leader and were not excluded
// for unavailability); total is how many partitions have a queue at all.
// It returns nil, meaning "pick uniformly", when there is nothing to adapt to:
// fewer than two queues, nothing choosable, or all choosable queues equal with
// none excluded. queue is read only; the result shares no memory with it.
func buildLoadStats(queue []int64, ids []int32, length, total int, w Weighting, batchSize int64) *loadStats {
	if length < 1 || total < 2 {
		return nil
	}
	q := queue[:length]
	maxQ, allEqual := q[0], true
	for _, v := range q[1:] {
		if v != q[0] {
			allEqual = false
		}
		maxQ = max(maxQ, v)
	}
	if allEqual && length == total {
		return nil
	}
	s := &loadStats{cft: make([]int64, length), ids: slices.Clone(ids[:length])}
	switch w {
	case WeightBytes:
		for i, v := range q {
			s.cft[i] = maxQ + batchSize - v
		}
		normalize(s.cft)
	case WeightBytesInverse:
		inv := make([]float64, length)
		for i, v := range q {
			inv[i] = 1 / float64(v+batchSize)
		}
		scaleTo(s.cft, inv)
	default:
		for i, v := range q {
			s.cft[i] = maxQ + 1 - v
		}
	}
	for i := 1; i < length; i++ {
		s.cft[i] += s.cft[i-1]
	}
	return s
}

// normalize scales integer weights down to about normalizedTotal when their
// sum is larger, keeping every weight at least 1.
func normalize(w []int64) {
	var sum int64
	for _, v := range w {
		sum += v
	}
	if sum <= normalizedTotal {
		return
	}
	f := make([]float64, len(w))
	for i, v := range w {
		f[i] = float64(v)
	}
	scaleTo(w, f)
}

// scaleTo writes weights proportional to f, summing to about normalizedTotal,
// each at least 1.
func scaleTo(w []int64, f []float64) {
	var sum float64
	for _, v := range f {
		sum += v
	}
	for i, v := range f {
		w[i] = max(1, int64(math.Round(v/sum*normalizedTotal)))
	}
}

// NodeLatency tracks, per broker node, when the sender last had data ready
// for it and when it last could send that data. The gap between the two is
// how long the node has been unable to take what is waiting for it; with an
// availability timeout, partitions led by a node whose gap exceeds it stop
// being switch targets. Times are whatever clock the caller injects, in
// milliseconds. Safe for concurrent use.
type NodeLatency struct {
	mu    sync.RWMutex
	nodes map[int32]*nodeTimes
}

type nodeTimes struct {
	readyMs atomic.Int64
	drainMs atomic.Int64
}

// NewNodeLatency returns an empty tracker.
func NewNodeLatency() *NodeLatency { return &NodeLatency{nodes: make(map[int32]*nodeTimes)} }

// Observe records a sender pass that found data ready for node at nowMs;
// drained says whether the node could accept it (a connection was ready and
// the batches were drained) or had to be skipped. A node seen for the first
// time starts with both times at nowMs.
func (n *NodeLatency) Observe(node int32, nowMs int64, drained bool) {
	n.mu.RLock()
	nt := n.nodes[node]
	n.mu.RUnlock()
	if nt == nil {
		n.mu.Lock()
		if nt = n.nodes[node]; nt == nil {
			nt = &nodeTimes{}
			nt.readyMs.Store(nowMs)
			nt.drainMs.Store(nowMs)
			n.nodes[node] = nt
		}
		n.mu.Unlock()
	}
	// Readers subtract drain from ready; storing drain first means a racing
	// reader can see a gap that is too small, never one that is too large.
	if drained {
		nt.drainMs.Store(nowMs)
	}
	nt.readyMs.Store(nowMs)
}

// Stalled returns how long node has had data it could not send: the last
// ready time minus the last drain time. 0 for a node never observed.
func (n *NodeLatency) Stalled(node int32) int64 {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.stalledLocked(node)
}

// stalledLocked is Stalled for a caller holding n.mu for reading, so a pass
// over many partitions takes the lock once.
func (n *NodeLatency) stalledLocked(node int32) int64 {
	nt := n.nodes[node]
	if nt == nil {
		return 0
	}
	ready := nt.readyMs.Load()
	return ready - nt.drainMs.Load()
}
