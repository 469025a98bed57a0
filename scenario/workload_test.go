package scenario

import (
	"math"
	"testing"
	"time"

	"weir/scenario/spec"
)

func f64(v float64) *float64 { return &v }

func TestRateAt(t *testing.T) {
	ramp := spec.Schedule{Repeating: true, Segments: []spec.Segment{
		{From: f64(0), To: f64(100), Duration: spec.Duration(10 * time.Second)},
		{Rate: f64(7), Duration: spec.Duration(5 * time.Second)},
	}}
	once := ramp
	once.Repeating = false
	cases := []struct {
		s    spec.Schedule
		t    time.Duration
		want float64
	}{
		{spec.Schedule{Constant: f64(2048)}, time.Hour, 2048},
		{ramp, 0, 0},
		{ramp, 5 * time.Second, 50},
		{ramp, 12 * time.Second, 7},
		{ramp, 20 * time.Second, 50}, // the second cycle
		{once, 20 * time.Second, 7},  // after the end: the last rate
		{spec.Schedule{Segments: []spec.Segment{{From: f64(10), To: f64(0), Duration: spec.Duration(time.Second)}}}, time.Hour, 0},
	}
	for i, tc := range cases {
		if got := rateAt(tc.s, tc.t); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("case %d at %v: %v, want %v", i, tc.t, got, tc.want)
		}
	}
}

// A ramp from 0 to 100 over 10 s owes its integral, 500 records; a
// stretch while inactive owes nothing and is not caught up afterwards.
func TestPacer(t *testing.T) {
	s := spec.Schedule{Segments: []spec.Segment{{From: f64(0), To: f64(100), Duration: spec.Duration(10 * time.Second)}}}
	t0 := time.Unix(0, 0)
	p := newPacer(s, t0)
	for ms := 1; ms <= 10_000; ms++ {
		p.advance(t0.Add(time.Duration(ms)*time.Millisecond), true)
	}
	if got := p.advance(t0.Add(10*time.Second), true); got < 499 || got > 500 {
		t.Fatalf("owed %d after the ramp, want 500", got)
	}
	p.sent(500)
	p.advance(t0.Add(20*time.Second), false)
	if got := p.advance(t0.Add(21*time.Second), true); got < 99 || got > 100 {
		t.Fatalf("owed %d a second after an inactive stretch, want 100 (no catching up)", got)
	}
}

func TestDistributors(t *testing.T) {
	count := func(d *distributor, n int) ([]int, map[string]bool) {
		per := make([]int, 12)
		keys := map[string]bool{}
		for range n {
			k, p := d.next()
			if k != nil {
				keys[string(k)] = true
			}
			if p >= 0 {
				per[p]++
			}
		}
		return per, keys
	}
	per, _ := count(newDistributor(spec.Distributor{Type: spec.PinnedPartitions}, 12, 0), 1200)
	for p, n := range per {
		if n != 100 {
			t.Errorf("pinned: partition %d got %d, want 100", p, n)
		}
	}
	per, _ = count(newDistributor(spec.Distributor{Type: spec.PartitionZipf, Alpha: 2, Seed: 1}, 12, 0), 100_000)
	w := ZipfWeights(12, 2)
	for p, n := range per {
		want := w[p] * 100_000
		if math.Abs(float64(n)-want) > 5*math.Sqrt(want)+1 {
			t.Errorf("zipf: partition %d got %d, want about %.0f", p, n, want)
		}
	}
	per, keys := count(newDistributor(spec.Distributor{Type: spec.KeyRoundRobin, Keys: 7}, 12, 0), 70)
	if len(keys) != 7 || per[0] != 0 {
		t.Errorf("key round robin: %d keys, explicit partitions %v", len(keys), per)
	}
	per, keys = count(newDistributor(spec.Distributor{Type: spec.NoKey}, 12, 0), 10)
	if len(keys) != 0 || per[0]+per[1] != 0 {
		t.Errorf("no key: keys %v partitions %v", keys, per)
	}
}
