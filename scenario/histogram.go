package scenario

import (
	"math"
	"math/bits"
	"time"
)

// Histogram counts latencies in log-linear buckets: exact below 64 µs,
// then 32 buckets per power of two (about 3% wide), up to an hour. It is
// not safe for concurrent use; each recorder keeps its own and the
// sampler merges them.
type Histogram struct {
	counts [histBuckets]int64
	n      int64
	sum    time.Duration
	max    time.Duration
}

const (
	histSub     = 32                      // buckets per power of two
	histLinear  = 2 * histSub             // values below this many µs have their own bucket
	histBuckets = histLinear + 32*histSub // enough for 2^37 µs, over 38 hours
)

func bucketOf(us int64) int {
	if us < histLinear {
		return int(max(us, 0))
	}
	exp := bits.Len64(uint64(us)) - 1 // us >= 2^exp, exp >= 6
	sub := int(us>>(exp-5)) - histSub // 0..31: the next five bits
	return min(histLinear+(exp-6)*histSub+sub, histBuckets-1)
}

// bucketLow is the smallest value in bucket b, in µs.
func bucketLow(b int) int64 {
	if b < histLinear {
		return int64(b)
	}
	exp := (b-histLinear)/histSub + 6
	sub := (b - histLinear) % histSub
	return int64(histSub+sub) << (exp - 5)
}

// Record adds one latency.
func (h *Histogram) Record(d time.Duration) {
	h.counts[bucketOf(d.Microseconds())]++
	h.n++
	h.sum += d
	h.max = max(h.max, d)
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

// Reset empties h.
func (h *Histogram) Reset() { *h = Histogram{} }

// Count is the number of latencies recorded.
func (h *Histogram) Count() int64 { return h.n }

// Max is the largest latency recorded.
func (h *Histogram) Max() time.Duration { return h.max }

// Mean is the average latency, 0 when empty.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}

// Quantile returns the latency below which a fraction q of them lie: the
// middle of the bucket holding the ceil(q×n)-th value, never above Max.
// 0 when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen int64
	for b, c := range h.counts {
		seen += c
		if seen >= rank {
			if b == histBuckets-1 { // the overflow bucket
				return h.max
			}
			lo, hi := bucketLow(b), bucketLow(b+1)
			mid := time.Duration((lo+hi)/2) * time.Microsecond
			if b < histLinear {
				mid = time.Duration(lo) * time.Microsecond
			}
			return min(mid, h.max)
		}
	}
	return h.max
}

// addBucket adds c latencies to bucket b, as counted elsewhere with the
// same buckets (the Java drivers' histograms); their sum is taken at the
// bucket's middle. max is the largest of them, if known.
func (h *Histogram) addBucket(b int, c int64, max time.Duration) {
	if b < 0 || b >= histBuckets || c <= 0 {
		return
	}
	h.counts[b] += c
	h.n += c
	mid := bucketLow(b)
	if b+1 < histBuckets {
		mid = (bucketLow(b) + bucketLow(b+1)) / 2
	}
	h.sum += time.Duration(c*mid) * time.Microsecond
	h.max = maxDur(h.max, max)
}

func maxDur(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}
