package scenario

import (
	"sync"
	"time"
)

// meter gathers what producers and consumers report: records acknowledged
// and consumed per partition, produce latency (send to acknowledgement)
// and end-to-end latency (record timestamp to consumption). The sampler
// takes its interval counts every tick. One mutex guards it, held for
// counter updates only; consumers report a whole poll at once.
type meter struct {
	mu     sync.Mutex
	topics map[string]*topicMeter
	// Interval histograms (reset by take) and per-phase ones.
	produceLat, e2eLat Histogram
	phase              string
	phaseProduce       map[string]*Histogram
	phaseE2E           map[string]*Histogram
	sendErrors         int64
	lastErr            error
	// step is the end-to-end latency since resetStep (an explore step).
	step Histogram
}

// topicMeter counts one topic's partitions.
type topicMeter struct {
	acked, consumed       []int64 // this interval
	ackedTotal, consTotal []int64 // since the start
	ledger                *ledger // distinct (partition, offset) consumed
	// external holds the distinct counts (since the start, per
	// partition) that out-of-process consumers report, by consumer.
	external map[string][]int64
}

// distinctOf is the distinct records of partition p consumed, in
// process and out.
func (tm *topicMeter) distinctOf(p int) int64 {
	n := tm.ledger.distinctOf(int32(p))
	for _, e := range tm.external {
		if p < len(e) {
			n += e[p]
		}
	}
	return n
}

func newMeter(topics map[string]int) *meter {
	m := &meter{topics: map[string]*topicMeter{}, phaseProduce: map[string]*Histogram{}, phaseE2E: map[string]*Histogram{}}
	for t, n := range topics {
		m.topics[t] = &topicMeter{
			acked: make([]int64, n), consumed: make([]int64, n),
			ackedTotal: make([]int64, n), consTotal: make([]int64, n),
			ledger: newLedger(n), external: map[string][]int64{},
		}
	}
	return m
}

// setPhase starts counting the per-phase latencies of phase.
func (m *meter) setPhase(phase string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.phase = phase
	if m.phaseProduce[phase] == nil {
		m.phaseProduce[phase], m.phaseE2E[phase] = &Histogram{}, &Histogram{}
	}
}

// acked notes a produced record's outcome.
func (m *meter) acked(topic string, partition int32, latency time.Duration, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.sendErrors++
		m.lastErr = err
		return
	}
	if tm := m.topics[topic]; tm != nil && partition >= 0 && int(partition) < len(tm.acked) {
		tm.acked[partition]++
		tm.ackedTotal[partition]++
	}
	m.produceLat.Record(latency)
	if h := m.phaseProduce[m.phase]; h != nil {
		h.Record(latency)
	}
}

// delivery is one consumed record as the meter needs it.
type delivery struct {
	partition int32
	offset    int64
	e2e       time.Duration
}

// consumed notes one poll's records.
func (m *meter) consumed(topic string, ds []delivery) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tm := m.topics[topic]
	for _, d := range ds {
		if tm != nil && d.partition >= 0 && int(d.partition) < len(tm.consumed) {
			tm.consumed[d.partition]++
			tm.consTotal[d.partition]++
			tm.ledger.add(d.partition, d.offset)
		}
		m.e2eLat.Record(d.e2e)
		m.step.Record(d.e2e)
		if h := m.phaseE2E[m.phase]; h != nil {
			h.Record(d.e2e)
		}
	}
}

// backlog is every topic's records acknowledged and not yet consumed
// (distinct records: a redelivery does not shrink it twice).
func (m *meter) backlog() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for _, tm := range m.topics {
		for p, a := range tm.ackedTotal {
			n += max(a-tm.distinctOf(p), 0)
		}
	}
	return n
}

// take returns the interval's counts and latencies and starts the next
// interval.
func (m *meter) take() interval {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := interval{topics: map[string]topicInterval{}, produceLat: m.produceLat, e2eLat: m.e2eLat, sendErrors: m.sendErrors}
	for name, tm := range m.topics {
		ti := topicInterval{
			acked: append([]int64(nil), tm.acked...), consumed: append([]int64(nil), tm.consumed...),
			backlog: make([]int64, len(tm.acked)),
		}
		for p := range tm.ackedTotal {
			ti.backlog[p] = max(tm.ackedTotal[p]-tm.distinctOf(p), 0)
			ti.ackedTotal += tm.ackedTotal[p]
			ti.consumedTotal += tm.consTotal[p]
		}
		clear(tm.acked)
		clear(tm.consumed)
		out.topics[name] = ti
	}
	m.produceLat.Reset()
	m.e2eLat.Reset()
	return out
}

// interval is one sampling interval's measurements.
type interval struct {
	topics             map[string]topicInterval
	produceLat, e2eLat Histogram
	sendErrors         int64 // since the start
}

type topicInterval struct {
	acked, consumed, backlog  []int64
	ackedTotal, consumedTotal int64
}

// resetStep starts a new explore step.
func (m *meter) resetStep() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.step.Reset()
}

// stepLatency is the end-to-end latency since resetStep.
func (m *meter) stepLatency() Percentiles {
	m.mu.Lock()
	defer m.mu.Unlock()
	return percentiles(&m.step)
}

// ackedBatch notes what an out-of-process producer reports for one
// interval: records acknowledged per partition, their latencies, and the
// failed sends since its last report.
func (m *meter) ackedBatch(topic string, perPartition []int64, lat *Histogram, errs int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if tm := m.topics[topic]; tm != nil {
		for p, n := range perPartition {
			if p < len(tm.acked) {
				tm.acked[p] += n
				tm.ackedTotal[p] += n
			}
		}
	}
	m.sendErrors += errs
	m.produceLat.Merge(lat)
	if h := m.phaseProduce[m.phase]; h != nil {
		h.Merge(lat)
	}
}

// consumedBatch notes what an out-of-process consumer (named who)
// reports for one interval: deliveries per partition, its distinct
// records per partition since the start, and end-to-end latencies.
func (m *meter) consumedBatch(topic, who string, perPartition, distinct []int64, lat *Histogram) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if tm := m.topics[topic]; tm != nil {
		for p, n := range perPartition {
			if p < len(tm.consumed) {
				tm.consumed[p] += n
				tm.consTotal[p] += n
			}
		}
		tm.external[who] = append([]int64(nil), distinct...)
	}
	m.e2eLat.Merge(lat)
	m.step.Merge(lat)
	if h := m.phaseE2E[m.phase]; h != nil {
		h.Merge(lat)
	}
}
