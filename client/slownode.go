package client

import (
	"slices"
	"time"
)

// A broker that spends a fixed time on each produce request and handles a
// connection's requests one at a time (KIP-794's slow broker, and Kafka's
// network layer) gains nothing from five requests in flight: they queue
// behind each other, each record waits up to five service times, and the
// small batches that pipelining sends keep its queue short, so adaptive
// partitioning does not steer away from it. Sending such a broker one
// request at a time lets its batches grow while it works on the current
// one: the same bytes in fewer requests, each record waiting at most two
// service times.
//
// A broker is slow when the smoothed time its produce requests take is
// over slowFactor times the median of the other brokers' and over slowFloor; a
// broker that recovers gets its pipeline back after a few requests. A
// cluster whose brokers are all far away is slow nowhere: the comparison
// is relative.
const (
	slowFactor = 4
	slowFloor  = 5 * time.Millisecond
	rttWeight  = 0.25 // of the newest request in the smoothed time
)

// nodeRTT is the smoothed produce request time per broker. Guarded by the
// producer's mu.
type nodeRTT map[int32]time.Duration

func (r nodeRTT) observe(node int32, d time.Duration) {
	if old, ok := r[node]; ok {
		d = time.Duration(float64(old)*(1-rttWeight) + float64(d)*rttWeight)
	}
	r[node] = d
}

// cautious reports whether node gets one request at a time: it is slow,
// or it has not answered a produce request yet (a first burst of five
// requests to a slow broker would be the run's worst latency).
func (r nodeRTT) cautious(node int32) bool {
	_, known := r[node]
	return !known || r.slow(node)
}

// slow reports whether node's requests take several times the median of
// the other brokers' (at least one other known).
func (r nodeRTT) slow(node int32) bool {
	d, ok := r[node]
	if !ok || len(r) < 2 || d < slowFloor {
		return false
	}
	all := make([]time.Duration, 0, len(r)-1)
	for n, x := range r {
		if n != node {
			all = append(all, x)
		}
	}
	slices.Sort(all)
	med := all[len(all)/2]
	if len(all)%2 == 0 {
		med = (all[len(all)/2-1] + med) / 2
	}
	return d > slowFactor*med
}
