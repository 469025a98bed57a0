package scenario

import (
	"math/rand/v2"
	"sort"
	"strconv"
	"time"

	"weir/scenario/spec"
)

// rateAt is a schedule's rate in records per second t after the
// producer started. A repeating schedule starts over after its last
// segment; one that does not keeps its last segment's final rate.
func rateAt(s spec.Schedule, t time.Duration) float64 {
	if s.Constant != nil {
		return *s.Constant
	}
	var total time.Duration
	for _, sg := range s.Segments {
		total += sg.Duration.D()
	}
	if total <= 0 {
		return 0
	}
	if s.Repeating {
		t %= total
	}
	for _, sg := range s.Segments {
		d := sg.Duration.D()
		if t < d {
			if sg.Rate != nil {
				return *sg.Rate
			}
			return *sg.From + (*sg.To-*sg.From)*float64(t)/float64(d)
		}
		t -= d
	}
	last := s.Segments[len(s.Segments)-1]
	if last.Rate != nil {
		return *last.Rate
	}
	return *last.To
}

// pacer turns a rate schedule into a count of records due: owed grows by
// the rate times the time the producer was active, so a producer that
// was stopped (a drain phase) resumes at the scheduled rate without
// catching up, and one that could not keep up (blocked sends) does.
type pacer struct {
	schedule spec.Schedule
	start    time.Time // schedule time 0
	last     time.Time // the previous advance
	owed     float64   // records due and not sent
}

func newPacer(s spec.Schedule, start time.Time) *pacer {
	return &pacer{schedule: s, start: start, last: start}
}

// advance adds the records due between the previous call and now (none
// while inactive) and returns how many whole records are owed.
func (p *pacer) advance(now time.Time, active bool) int64 {
	if now.After(p.last) {
		if active {
			// The rate at the interval's middle: exact for ramps.
			mid := p.last.Add(now.Sub(p.last) / 2).Sub(p.start)
			p.owed += rateAt(p.schedule, mid) * now.Sub(p.last).Seconds()
		}
		p.last = now
	}
	return int64(p.owed)
}

// sent records that n records went out.
func (p *pacer) sent(n int64) { p.owed -= float64(n) }

// distributor picks each record's key and partition (spec.Distributor).
type distributor struct {
	kind       string
	partitions int
	keys       int
	cdf        []float64
	rng        *rand.Rand
	n          int64
}

// newDistributor is instance's distributor (instances of one producer
// draw different Zipf sequences and start their turns apart).
func newDistributor(d spec.Distributor, partitions, instance int) *distributor {
	out := &distributor{kind: d.Type, partitions: partitions, keys: d.Keys, n: int64(instance)}
	if d.Type == spec.PartitionZipf {
		var acc float64
		for _, w := range ZipfWeights(partitions, d.Alpha) {
			acc += w
			out.cdf = append(out.cdf, acc)
		}
		out.cdf[len(out.cdf)-1] = 1
		seed := d.Seed + uint64(instance)
		out.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	}
	return out
}

// next returns the key (nil: none) and partition (-1: the client's
// partitioner decides) of the next record.
func (d *distributor) next() ([]byte, int32) {
	i := d.n
	d.n++
	switch d.kind {
	case spec.KeyRoundRobin:
		return []byte("key-" + strconv.FormatInt(i%int64(d.keys), 10)), -1
	case spec.PartitionZipf:
		return nil, int32(sort.SearchFloat64s(d.cdf, d.rng.Float64()))
	case spec.PinnedPartitions:
		return nil, int32(i % int64(d.partitions))
	default:
		return nil, -1
	}
}
