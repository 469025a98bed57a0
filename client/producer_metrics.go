package client

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// PartitionMetrics are one partition's producer counters.
type PartitionMetrics struct {
	Records       int64 // acknowledged records
	Bytes         int64 // acknowledged batch bytes on the wire
	QueuedBatches int   // batches waiting in the accumulator now
	QueuedBytes   int64 // their estimated size
}

// LatencyStats summarises record send latency: from Send to the result.
type LatencyStats struct {
	Count          int64
	Avg, Max       time.Duration
	P50, P99, P999 time.Duration
}

// ProducerMetrics is a snapshot of a producer's counters. Field comments
// name the Java client metric each mirrors where there is one.
type ProducerMetrics struct {
	// NodeOutgoingBytes is producer-node-metrics outgoing-byte-total: bytes
	// written to each broker node (all requests).
	NodeOutgoingBytes map[int32]int64
	Partitions        map[TopicPartition]PartitionMetrics
	BatchesSent       int64   // batches handed to the network, retries included
	BatchSizeAvg      float64 // batch-size-avg, bytes
	RecordsSent       int64   // record-send-total (acknowledged)
	RecordErrors      int64   // record-error-total
	RecordRetries     int64   // batch retries (record-retry-total counts records)
	// PartitionSwitches counts sticky partition choices made by the built-in
	// partitioner (the first choice per topic included).
	PartitionSwitches int64
	// AvailabilityExclusions counts partitions entering exclusion by
	// partitioner.availability.timeout.ms.
	AvailabilityExclusions int64
	// LeaderHints counts leaders moved by KIP-951 response hints.
	LeaderHints int64
	// BatchSplits counts batches split after MESSAGE_TOO_LARGE.
	BatchSplits       int64
	RecordSendLatency LatencyStats
}

type producerMetrics struct {
	batches, batchBytes atomic.Int64
	recordErrors        atomic.Int64
	retries             atomic.Int64
	switches            atomic.Int64
	exclusions          atomic.Int64
	leaderHints         atomic.Int64
	splits              atomic.Int64

	mu    sync.Mutex
	parts map[TopicPartition]*PartitionMetrics
	sent  int64

	latency latencyHist
}

func newProducerMetrics() *producerMetrics {
	return &producerMetrics{parts: map[TopicPartition]*PartitionMetrics{}}
}

func (m *producerMetrics) batchSent(bytes int) {
	m.batches.Add(1)
	m.batchBytes.Add(int64(bytes))
}

func (m *producerMetrics) partitionDone(topic string, p int32, records, bytes int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tp := TopicPartition{topic, p}
	pm := m.parts[tp]
	if pm == nil {
		pm = &PartitionMetrics{}
		m.parts[tp] = pm
	}
	pm.Records += int64(records)
	pm.Bytes += int64(bytes)
	m.sent += int64(records)
}

// Metrics returns a snapshot of the producer's counters.
func (p *Producer) Metrics() ProducerMetrics {
	m := p.m
	out := ProducerMetrics{
		NodeOutgoingBytes:      p.cl.outgoing(),
		Partitions:             map[TopicPartition]PartitionMetrics{},
		BatchesSent:            m.batches.Load(),
		RecordErrors:           m.recordErrors.Load(),
		RecordRetries:          m.retries.Load(),
		PartitionSwitches:      m.switches.Load(),
		AvailabilityExclusions: m.exclusions.Load(),
		LeaderHints:            m.leaderHints.Load(),
		BatchSplits:            m.splits.Load(),
		RecordSendLatency:      m.latency.stats(),
	}
	if out.BatchesSent > 0 {
		out.BatchSizeAvg = float64(m.batchBytes.Load()) / float64(out.BatchesSent)
	}
	m.mu.Lock()
	for tp, pm := range m.parts {
		out.Partitions[tp] = *pm
	}
	out.RecordsSent = m.sent
	m.mu.Unlock()
	p.topicsMu.RLock()
	for _, t := range p.topics {
		for _, q := range t.all() {
			if q == nil {
				continue
			}
			tp := TopicPartition{t.name, q.partition}
			pm := out.Partitions[tp]
			q.mu.Lock()
			pm.QueuedBatches = len(q.batches)
			for _, b := range q.batches {
				pm.QueuedBytes += int64(b.b.Estimated())
			}
			q.mu.Unlock()
			out.Partitions[tp] = pm
		}
	}
	p.topicsMu.RUnlock()
	return out
}

// latencyHist is a log-scale histogram of durations: buckets grow by 2^(1/8)
// from 1 µs, so a percentile is within about 9% of the true value.
type latencyHist struct {
	mu      sync.Mutex
	buckets [256]int64
	count   int64
	sum     time.Duration
	max     time.Duration
}

const histBase = float64(time.Microsecond)

func (h *latencyHist) observe(d time.Duration) {
	i := 0
	if d > time.Microsecond {
		i = min(int(math.Log2(float64(d)/histBase)*8)+1, len(h.buckets)-1)
	}
	h.mu.Lock()
	h.buckets[i]++
	h.count++
	h.sum += d
	h.max = max(h.max, d)
	h.mu.Unlock()
}

func (h *latencyHist) stats() LatencyStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := LatencyStats{Count: h.count, Max: h.max}
	if h.count == 0 {
		return s
	}
	s.Avg = h.sum / time.Duration(h.count)
	qs := []float64{0.5, 0.99, 0.999}
	outs := []*time.Duration{&s.P50, &s.P99, &s.P999}
	var seen int64
	k := 0
	for i, n := range h.buckets {
		seen += n
		for k < len(qs) && float64(seen) >= qs[k]*float64(h.count) {
			*outs[k] = min(time.Duration(histBase*math.Exp2(float64(i)/8)), h.max)
			k++
		}
	}
	return s
}

// sortedNodes returns the keys of a node map in order, for printing.
func sortedNodes(m map[int32]int64) []int32 {
	out := make([]int32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// WriteTo prints the metrics one per line in the style of the Java client's
// --print-metrics output (group:name:{tags} : value).
func (m ProducerMetrics) WriteTo(w io.Writer) (int64, error) {
	var b strings.Builder
	for _, n := range sortedNodes(m.NodeOutgoingBytes) {
		fmt.Fprintf(&b, "producer-node-metrics:outgoing-byte-total:{node-id=node-%d} : %d\n", n, m.NodeOutgoingBytes[n])
	}
	tps := make([]TopicPartition, 0, len(m.Partitions))
	for tp := range m.Partitions {
		tps = append(tps, tp)
	}
	sortTPs(tps)
	for _, tp := range tps {
		pm := m.Partitions[tp]
		tags := fmt.Sprintf("{topic=%s, partition=%d}", tp.Topic, tp.Partition)
		fmt.Fprintf(&b, "producer-partition-metrics:record-send-total:%s : %d\n", tags, pm.Records)
		fmt.Fprintf(&b, "producer-partition-metrics:byte-total:%s : %d\n", tags, pm.Bytes)
		fmt.Fprintf(&b, "producer-partition-metrics:queue-size-batches:%s : %d\n", tags, pm.QueuedBatches)
	}
	l := m.RecordSendLatency
	for _, kv := range []struct {
		name string
		v    any
	}{
		{"batch-size-avg", fmt.Sprintf("%.1f", m.BatchSizeAvg)},
		{"batches-sent-total", m.BatchesSent},
		{"record-send-total", m.RecordsSent},
		{"record-error-total", m.RecordErrors},
		{"batch-retry-total", m.RecordRetries},
		{"partitioner-switch-total", m.PartitionSwitches},
		{"partitioner-availability-exclusion-total", m.AvailabilityExclusions},
		{"leader-hint-total", m.LeaderHints},
		{"record-send-latency-avg-ms", fmt.Sprintf("%.3f", float64(l.Avg)/1e6)},
		{"record-send-latency-p99-ms", fmt.Sprintf("%.3f", float64(l.P99)/1e6)},
		{"record-send-latency-max-ms", fmt.Sprintf("%.3f", float64(l.Max)/1e6)},
	} {
		fmt.Fprintf(&b, "producer-metrics:%s:{} : %v\n", kv.name, kv.v)
	}
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}
