package partitioner

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// A deterministic, millisecond-step model of a producer writing unkeyed
// records to one topic whose partitions each sit on their own broker, one of
// them slow. It is coarse on purpose: enough of the accumulator and sender to
// show how each partitioner's choices interact with batching and a backlog.
//
//   - Records of recordBytes arrive at a fixed offered rate. They wait (and
//     the wait counts in their latency) while buffer memory is exhausted.
//   - Appends follow the real protocol (appendSticky / appendCustom) on
//     deques of batches: a batch closes when the next record would pass
//     batch.size; a new batch reports the 61-byte header.
//   - A batch is sendable when it is not the last in its deque, is full, has
//     lingered lingerMs, or memory is exhausted. Each node takes up to
//     maxInFlight requests of one batch each, serves them one after the other
//     at bw bytes/ms and answers lat ms after serving.
//   - Every step the sender feeds queue sizes to UpdateLoad and node
//     ready/drain times to NodeLatency, as the Java sender does per pass.
type simScenario struct {
	name        string
	bw          []float64 // bytes/ms each node serves; partition i is on node i
	lat         []float64 // ms from served to answered
	offered     float64   // bytes/ms the application produces
	recordBytes int
	durationMs  int64
	batchSize   int
	lingerMs    int64
	maxInFlight int
	bufferBytes int64

	// What the scenario is there to show, checked by TestSimulation.
	runaway  bool // KIP-480 assigns the slow partition clearly more than uniform does
	saturate bool // uniform cannot carry the load; every adaptive variant can do better
}

type simPolicy struct {
	name    string
	builtin *Config     // the accumulator's built-in partitioner
	custom  Partitioner // or a configured one
}

type simBatch struct {
	bytes    int
	full     bool
	created  int64
	recTimes []int64 // when each record was offered
}

type simPart struct {
	s     *sim
	id    int
	deque []*simBatch
}

func (p *simPart) lock()   {}
func (p *simPart) unlock() {}

func (p *simPart) allFull() bool { return len(p.deque) == 0 || p.deque[len(p.deque)-1].full }

func (p *simPart) tryAppend(n int) int {
	if len(p.deque) == 0 {
		return -1
	}
	b := p.deque[len(p.deque)-1]
	if b.full {
		return -1
	}
	if b.bytes+n > p.s.sc.batchSize {
		b.full = true
		return -1
	}
	b.bytes += n
	p.s.assigned[p.index()] += int64(n)
	b.recTimes = append(b.recTimes, p.s.recTime)
	b.full = b.bytes >= p.s.sc.batchSize
	return n
}

func (p *simPart) newBatch(n int) int {
	b := &simBatch{bytes: batchHeaderBytes + n, created: p.s.now, recTimes: make([]int64, 1, p.s.sc.batchSize/n+1)}
	b.recTimes[0] = p.s.recTime
	b.full = b.bytes >= p.s.sc.batchSize
	p.deque = append(p.deque, b)
	p.s.memory += int64(max(p.s.sc.batchSize, b.bytes))
	p.s.assigned[p.index()] += int64(b.bytes)
	return b.bytes
}

func (p *simPart) index() int { return p.id }

type simReq struct {
	done  float64
	batch *simBatch
}

type simNode struct {
	busyUntil float64
	inflight  []simReq
}

type sim struct {
	sc       simScenario
	now      int64
	recTime  int64
	memory   int64
	parts    []simPart
	nodes    []simNode
	assigned []int64 // bytes appended per partition: what the partitioner decided
}

// simResult is what one run measured.
type simResult struct {
	assigned   []float64 // share of appended bytes per partition
	share      []float64 // share of delivered bytes per partition
	mbps       float64   // delivered MB/s
	delivered  float64   // fraction of offered records delivered by the end
	meanMs     float64   // record latency, offered to acknowledged
	p99Ms      int64
	avgBatch   float64 // bytes per delivered batch
	maxBacklog int64   // most bytes of buffer memory in use
}

func runSim(sc simScenario, pol simPolicy, seed uint64) simResult {
	n := len(sc.bw)
	s := &sim{sc: sc, parts: make([]simPart, n), nodes: make([]simNode, n), assigned: make([]int64, n)}
	for i := range s.parts {
		s.parts[i].s = s
		s.parts[i].id = i
	}
	ldr := make([]int32, n)
	for i := range ldr {
		ldr[i] = int32(i)
	}
	top := NewTopic("sim", ldr)
	queueOf := func(p int32) queue { return &s.parts[p] }
	var u *UniformSticky
	var tp TopicPartitioner
	if pol.builtin != nil {
		cfg := *pol.builtin
		cfg.BatchSize = sc.batchSize
		u = NewUniformSticky(cfg, seeded(seed))
	} else {
		tp = pol.custom.ForTopic("sim")
	}
	lat := NewNodeLatency()
	queues := make([]PartitionQueue, n)

	var (
		pending      []int64 // offered times of records not yet appended, from head on
		head         int
		due          float64
		offered      int64
		deliveredRec int64
		sumLat       float64
		hist         []int64 // records by latency in ms
		bytesDone    = make([]int64, n)
		batchesDone  int64
		res          simResult
	)
	for s.now = 0; s.now < sc.durationMs; s.now++ {
		now := s.now
		// Acknowledgements free memory and end the records' latency.
		for i := range s.nodes {
			nd := &s.nodes[i]
			for len(nd.inflight) > 0 && nd.inflight[0].done <= float64(now) {
				b := nd.inflight[0].batch
				nd.inflight = nd.inflight[1:]
				bytesDone[i] += int64(b.bytes)
				batchesDone++
				s.memory -= int64(max(sc.batchSize, b.bytes))
				for _, t := range b.recTimes {
					d := now - t
					for int64(len(hist)) <= d {
						hist = append(hist, 0)
					}
					hist[d]++
					sumLat += float64(d)
					deliveredRec++
				}
			}
		}
		// The application offers records; they wait while memory is short.
		if head > 0 && head == len(pending) {
			pending, head = pending[:0], 0
		}
		for due += sc.offered / float64(sc.recordBytes); due >= 1; due-- {
			pending = append(pending, now)
			offered++
		}
		for head < len(pending) && s.memory+int64(sc.batchSize) <= sc.bufferBytes {
			s.recTime = pending[head]
			head++
			if u != nil {
				appendSticky(u, top, queueOf, sc.recordBytes)
			} else {
				appendCustom(tp, Record{}, top, queueOf, sc.recordBytes)
			}
		}
		exhausted := head < len(pending)
		res.maxBacklog = max(res.maxBacklog, s.memory)
		// The sender's pass: load stats, then drain what is sendable.
		if u != nil {
			for i := range s.parts {
				var bytes int64
				for _, b := range s.parts[i].deque {
					bytes += int64(b.bytes)
				}
				queues[i] = PartitionQueue{Partition: int32(i), Batches: len(s.parts[i].deque), Bytes: bytes}
			}
			u.UpdateLoad(top, queues, lat)
		}
		for i := range s.parts {
			p, nd := &s.parts[i], &s.nodes[i]
			for len(p.deque) > 0 {
				b := p.deque[0]
				if !(len(p.deque) > 1 || b.full || now-b.created >= sc.lingerMs || exhausted) {
					break
				}
				if len(nd.inflight) >= sc.maxInFlight {
					lat.Observe(int32(i), now, false)
					break
				}
				p.deque = p.deque[1:]
				b.full = true
				start := math.Max(float64(now), nd.busyUntil)
				nd.busyUntil = start + float64(b.bytes)/sc.bw[i]
				nd.inflight = append(nd.inflight, simReq{done: nd.busyUntil + sc.lat[i], batch: b})
				lat.Observe(int32(i), now, true)
			}
		}
	}
	var total int64
	for _, b := range bytesDone {
		total += b
	}
	var totalAssigned int64
	for _, b := range s.assigned {
		totalAssigned += b
	}
	res.share = make([]float64, n)
	res.assigned = make([]float64, n)
	for i, b := range bytesDone {
		res.share[i] = float64(b) / float64(total)
		res.assigned[i] = float64(s.assigned[i]) / float64(totalAssigned)
	}
	res.mbps = float64(total) / float64(sc.durationMs) / 1000
	res.delivered = float64(deliveredRec) / float64(offered)
	res.meanMs = sumLat / float64(deliveredRec)
	res.avgBatch = float64(total) / float64(batchesDone)
	var seen int64
	for d := 0; d < len(hist) && seen < deliveredRec*99/100; d++ {
		seen += hist[d]
		res.p99Ms = int64(d)
	}
	return res
}

var simPolicies = []simPolicy{
	{name: "kip480-sticky", custom: StickyPerBatch(nil, true)}, // rand replaced per run
	{name: "uniform", builtin: &Config{}},
	{name: "adaptive-batches", builtin: &Config{Adaptive: true, Weighting: WeightBatches}},
	{name: "adaptive-bytes", builtin: &Config{Adaptive: true, Weighting: WeightBytes}},
	{name: "adaptive-bytes-inverse", builtin: &Config{Adaptive: true, Weighting: WeightBytesInverse}},
}

// simBase is what every scenario shares: 520-byte records (512 of value plus
// record overhead), Java's default batch.size, max.in.flight and buffer.memory,
// a minute of simulated time.
var simBase = simScenario{
	recordBytes: 520, durationMs: 60_000,
	batchSize: 16384, lingerMs: 5, maxInFlight: 5, bufferBytes: 32 << 20,
}

func scenario(f func(*simScenario)) simScenario {
	sc := simBase
	f(&sc)
	return sc
}

var simScenarios = []simScenario{
	scenario(func(sc *simScenario) {
		// Control: four equal brokers at half their capacity.
		sc.name = "balanced"
		sc.bw, sc.lat = []float64{1000, 1000, 1000, 1000}, []float64{2, 2, 2, 2}
		sc.offered = 2000
	}),
	scenario(func(sc *simScenario) {
		// KIP-794's experiment: one broker answers 20 ms later; 1 MB/s;
		// linger.ms 0 as in 3.x. Bandwidth is not the limit.
		sc.name = "slow-latency"
		sc.bw, sc.lat = []float64{20000, 20000, 20000}, []float64{1, 1, 21}
		sc.offered, sc.lingerMs = 1000, 0
		sc.runaway = true
	}),
	scenario(func(sc *simScenario) {
		// One broker has a third of the others' bandwidth; a uniform split
		// asks it for 667 B/ms and it serves 500.
		sc.name = "slow-bandwidth"
		sc.bw, sc.lat = []float64{1500, 1500, 500}, []float64{2, 2, 2}
		sc.offered = 2000
		sc.saturate = true
	}),
	scenario(func(sc *simScenario) {
		// Four partitions, one at 40% bandwidth and 5x latency; 2 MB/s
		// offered of 3.4 MB/s capacity.
		sc.name = "moderate-slow"
		sc.bw, sc.lat = []float64{1000, 1000, 1000, 400}, []float64{2, 2, 2, 10}
		sc.offered = 2000
		sc.saturate = true
	}),
	scenario(func(sc *simScenario) {
		// Six partitions, one slow in bandwidth and latency, load near the
		// total capacity.
		sc.name = "six-one-slow"
		sc.bw, sc.lat = []float64{800, 800, 800, 800, 800, 250}, []float64{2, 2, 2, 2, 2, 10}
		sc.offered = 3800
		sc.saturate = true
	}),
}

// simSeeds are averaged over so one lucky draw does not decide a ranking.
var simSeeds = []uint64{1, 2, 3}

// runSimAvg runs a policy once per seed and averages the measures.
func runSimAvg(sc simScenario, pol simPolicy, seeds []uint64) simResult {
	var avg simResult
	k := float64(len(seeds))
	for _, seed := range seeds {
		p := pol
		if p.custom != nil {
			p.custom = StickyPerBatch(seeded(seed), true)
		}
		r := runSim(sc, p, seed)
		if avg.share == nil {
			avg.share = make([]float64, len(r.share))
			avg.assigned = make([]float64, len(r.share))
		}
		for i := range r.share {
			avg.share[i] += r.share[i] / k
			avg.assigned[i] += r.assigned[i] / k
		}
		avg.mbps += r.mbps / k
		avg.delivered += r.delivered / k
		avg.meanMs += r.meanMs / k
		avg.p99Ms += r.p99Ms
		avg.avgBatch += r.avgBatch / k
		avg.maxBacklog = max(avg.maxBacklog, r.maxBacklog)
	}
	avg.p99Ms /= int64(len(seeds))
	return avg
}

func pct(xs []float64) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fmt.Sprintf("%4.1f", 100*x)
	}
	return strings.Join(out, " ")
}

func formatSim(name string, r simResult) string {
	return fmt.Sprintf("%-22s assigned%% [%s]  delivered%% [%s]  %4.2f MB/s  mean %6.0f ms  p99 %6d ms  batch %5.0f B  buffer %4.1f MiB",
		name, pct(r.assigned), pct(r.share), r.mbps, r.meanMs, r.p99Ms, r.avgBatch, float64(r.maxBacklog)/(1<<20))
}

// TestSimulation runs every policy through every scenario (averaged over
// seeds) and checks what the scenarios are built to show; -v prints the table
// quoted in doc.go.
func TestSimulation(t *testing.T) {
	seeds := simSeeds
	for _, sc := range simScenarios {
		if raceBuild {
			sc.durationMs, seeds = 20_000, simSeeds[:1]
		}
		t.Run(sc.name, func(t *testing.T) {
			res := map[string]simResult{}
			for _, pol := range simPolicies {
				res[pol.name] = runSimAvg(sc, pol, seeds)
				t.Log(formatSim(pol.name, res[pol.name]))
			}
			slow := len(sc.bw) - 1
			uni, kip := res["uniform"], res["kip480-sticky"]
			adaptive := []string{"adaptive-batches", "adaptive-bytes", "adaptive-bytes-inverse"}
			if sc.name == "balanced" {
				// Each stint is a draw of about batch.size bytes; allow five
				// standard deviations of a multinomial share over that many draws.
				fair := 1 / float64(len(sc.bw))
				stints := sc.offered * float64(sc.durationMs) * float64(len(seeds)) / float64(sc.batchSize)
				tol := 5 * math.Sqrt(fair*(1-fair)/stints)
				for name, r := range res {
					for p, a := range r.assigned {
						if d := math.Abs(a - fair); d > tol {
							t.Errorf("%s assigned partition %d %.1f%% with equal brokers (allowed %.1f±%.1f)", name, p, 100*a, 100*fair, 100*tol)
						}
					}
				}
			}
			if sc.runaway && kip.assigned[slow] < uni.assigned[slow]+0.10 {
				t.Errorf("kip480 assigned the slow partition %.1f%%, expected well above uniform's %.1f%%",
					100*kip.assigned[slow], 100*uni.assigned[slow])
			}
			if sc.saturate {
				for _, name := range adaptive {
					a := res[name]
					if a.mbps < uni.mbps*1.05 || a.p99Ms >= uni.p99Ms {
						t.Errorf("%s: %.2f MB/s p99 %d ms, expected better than uniform's %.2f MB/s p99 %d ms",
							name, a.mbps, a.p99Ms, uni.mbps, uni.p99Ms)
					}
					if a.assigned[slow] >= uni.assigned[slow] {
						t.Errorf("%s assigned the slow partition %.1f%%, not less than uniform's %.1f%%",
							name, 100*a.assigned[slow], 100*uni.assigned[slow])
					}
				}
			}
		})
	}
}

// BenchmarkSimulation reports the simulation's measures per scenario and
// policy (slow-partition share, MB/s, p99) for comparison with benchstat.
func BenchmarkSimulation(b *testing.B) {
	for _, sc := range simScenarios {
		for _, pol := range simPolicies {
			b.Run(sc.name+"/"+pol.name, func(b *testing.B) {
				b.ReportAllocs()
				var r simResult
				for b.Loop() {
					r = runSim(sc, pol, 1)
				}
				b.ReportMetric(100*r.assigned[len(r.assigned)-1], "slow-assigned-%")
				b.ReportMetric(r.mbps, "MB/s")
				b.ReportMetric(float64(r.p99Ms), "p99-ms")
			})
		}
	}
}
