package partitioner

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

func TestBuildLoadStats(t *testing.T) {
	for _, tc := range []struct {
		name   string
		q      []int64
		ids    []int32
		length int
		w      Weighting
		batch  int64
		cft    []int64 // nil: uniform
	}{
		{"worked example", []int64{0, 3, 1}, []int32{0, 1, 2}, 3, WeightBatches, 1, []int64{4, 5, 8}},
		{"all equal is uniform", []int64{2, 2, 2}, []int32{0, 1, 2}, 3, WeightBatches, 1, nil},
		{"all equal with one excluded", []int64{2, 2, 9}, []int32{0, 2, 1}, 2, WeightBatches, 1, []int64{1, 2}},
		{"single partition topic", []int64{5}, []int32{0}, 1, WeightBatches, 1, nil},
		{"everything excluded", []int64{5, 1}, []int32{0, 1}, 0, WeightBatches, 1, nil},
		{"one left after exclusion", []int64{4, 1}, []int32{1, 0}, 1, WeightBatches, 1, []int64{1}},
		{"bytes, whole batches match batch odds", []int64{0, 300, 100}, []int32{0, 1, 2}, 3, WeightBytes, 100, []int64{400, 500, 800}},
		{"bytes, partial batch counts", []int64{0, 150, 100}, []int32{0, 1, 2}, 3, WeightBytes, 100, []int64{250, 350, 500}},
		{"bytes, equal is uniform", []int64{70, 70}, []int32{0, 1}, 2, WeightBytes, 100, nil},
		{"inverse", []int64{0, 100, 300}, []int32{0, 1, 2}, 3, WeightBytesInverse, 100, []int64{599186, 898779, 1048576}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := slices.Clone(tc.q)
			s := buildLoadStats(q, tc.ids, tc.length, len(tc.q), tc.w, tc.batch)
			if !slices.Equal(q, tc.q) {
				t.Fatalf("input modified: %v", q)
			}
			if tc.cft == nil {
				if s != nil {
					t.Fatalf("got table %v, want uniform", s.cft)
				}
				return
			}
			if s == nil {
				t.Fatalf("got uniform, want %v", tc.cft)
			}
			if !slices.Equal(s.cft, tc.cft) || !slices.Equal(s.ids, tc.ids[:tc.length]) {
				t.Fatalf("table %v ids %v, want %v ids %v", s.cft, s.ids, tc.cft, tc.ids[:tc.length])
			}
		})
	}
}

// TestPickBoundaries checks the exclusive upper bounds of the worked example:
// r 0-3 -> first, 4 -> second, 5-7 -> third; and that the sign bit is masked.
func TestPickBoundaries(t *testing.T) {
	s := buildLoadStats([]int64{0, 3, 1}, []int32{10, 11, 12}, 3, 3, WeightBatches, 1)
	want := []int32{10, 10, 10, 10, 11, 12, 12, 12, 10}
	for r, w := range want {
		if got := s.pick(uint32(r)); got != w {
			t.Errorf("pick(%d) = %d, want %d", r, got, w)
		}
		if got := s.pick(uint32(r) | 0x80000000); got != w {
			t.Errorf("pick(%d|sign) = %d, want %d", r, got, w)
		}
	}
}

// TestByteWeightsScale keeps large byte counts within the draw range and every
// weight positive.
func TestByteWeightsScale(t *testing.T) {
	q := make([]int64, 1000)
	ids := make([]int32, len(q))
	for i := range q {
		q[i] = int64(i) * 1 << 20 // up to ~1 GiB queued
		ids[i] = int32(i)
	}
	for _, w := range []Weighting{WeightBytes, WeightBytesInverse} {
		s := buildLoadStats(q, ids, len(q), len(q), w, 16384)
		end := s.cft[len(s.cft)-1]
		if end > 2*normalizedTotal {
			t.Errorf("%v: table end %d", w, end)
		}
		prev := int64(0)
		for i, c := range s.cft {
			if c <= prev {
				t.Fatalf("%v: weight %d of partition %d not positive", w, c-prev, i)
			}
			prev = c
		}
	}
}

// chiSquare draws n switch targets and compares their counts with the weights.
func chiSquare(t *testing.T, u *UniformSticky, top *Topic, weights map[int32]float64, n int) float64 {
	t.Helper()
	counts := map[int32]int{}
	for range n {
		counts[u.next(top)]++
	}
	var total, chi float64
	for _, w := range weights {
		total += w
	}
	for p := range counts {
		if _, ok := weights[p]; !ok {
			t.Fatalf("chose partition %d, which has no weight", p)
		}
	}
	for p, w := range weights {
		exp := float64(n) * w / total
		d := float64(counts[p]) - exp
		chi += d * d / exp
	}
	return chi
}

// chi2Critical999 holds chi-square critical values at p = 0.001 by degrees of
// freedom.
var chi2Critical999 = map[int]float64{1: 10.83, 2: 13.82, 3: 16.27, 4: 18.47, 5: 20.52, 6: 22.46, 7: 24.32}

func TestAdaptiveFrequencies(t *testing.T) {
	const draws = 400_000
	for _, tc := range []struct {
		name    string
		w       Weighting
		queues  []PartitionQueue
		weights map[int32]float64
	}{
		{"batches worked example", WeightBatches,
			[]PartitionQueue{{0, 0, 0}, {1, 3, 0}, {2, 1, 0}},
			map[int32]float64{0: 4, 1: 1, 2: 3}},
		{"batches six partitions", WeightBatches,
			[]PartitionQueue{{0, 5, 0}, {1, 0, 0}, {2, 2, 0}, {3, 5, 0}, {4, 1, 0}, {5, 3, 0}},
			map[int32]float64{0: 1, 1: 6, 2: 4, 3: 1, 4: 5, 5: 3}},
		{"bytes linear", WeightBytes,
			[]PartitionQueue{{0, 1, 1000}, {1, 3, 45000}, {2, 0, 0}, {3, 2, 20000}},
			map[int32]float64{0: 45000 + 16384 - 1000, 1: 16384, 2: 45000 + 16384, 3: 45000 + 16384 - 20000}},
		{"bytes inverse", WeightBytesInverse,
			[]PartitionQueue{{0, 1, 1000}, {1, 3, 45000}, {2, 0, 0}, {3, 2, 20000}},
			map[int32]float64{0: 1 / 17384.0, 1: 1 / 61384.0, 2: 1 / 16384.0, 3: 1 / 36384.0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top := NewTopic("t", leaders(len(tc.queues)))
			u := NewUniformSticky(Config{BatchSize: 16384, Adaptive: true, Weighting: tc.w}, seeded(11))
			u.UpdateLoad(top, tc.queues, nil)
			if u.Weights() == nil {
				t.Fatal("no adaptive weights")
			}
			chi := chiSquare(t, u, top, tc.weights, draws)
			if crit := chi2Critical999[len(tc.weights)-1]; chi > crit {
				t.Fatalf("chi-square %.2f > %.2f: choices do not follow the weights %v", chi, crit, u.Weights())
			}
		})
	}
}

func TestUpdateLoadConditions(t *testing.T) {
	unequal := []PartitionQueue{{0, 0, 0}, {1, 3, 0}, {2, 1, 0}}
	for _, tc := range []struct {
		name     string
		cfg      Config
		leaders  []int32
		queues   []PartitionQueue
		adaptive bool
		ids      []int32
	}{
		{"adaptive", Config{Adaptive: true}, leaders(3), unequal, true, []int32{0, 1, 2}},
		{"adaptive off", Config{Adaptive: false}, leaders(3), unequal, false, nil},
		{"a partition never had a batch", Config{Adaptive: true}, leaders(4), unequal, false, nil},
		{"leaderless left out", Config{Adaptive: true}, leaders(3, 1), unequal, true, []int32{0, 2}},
		{"equal queues", Config{Adaptive: true}, leaders(3), []PartitionQueue{{0, 2, 0}, {1, 2, 0}, {2, 2, 0}}, false, nil},
		{"equal after leaderless removed", Config{Adaptive: true}, leaders(3, 1), []PartitionQueue{{0, 2, 0}, {1, 7, 0}, {2, 2, 0}}, true, []int32{0, 2}},
		{"single partition", Config{Adaptive: true}, leaders(1), []PartitionQueue{{0, 4, 0}}, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top := NewTopic("t", tc.leaders)
			u := NewUniformSticky(tc.cfg, seeded(12))
			u.UpdateLoad(top, tc.queues, nil)
			w := u.Weights()
			if (w != nil) != tc.adaptive {
				t.Fatalf("weights %v, want adaptive=%v", w, tc.adaptive)
			}
			var ids []int32
			for _, pw := range w {
				ids = append(ids, pw.Partition)
			}
			if !slices.Equal(ids, tc.ids) {
				t.Fatalf("weighted partitions %v, want %v", ids, tc.ids)
			}
		})
	}
}

// TestAvailabilityTimeout excludes a partition whose leader has had data it
// could not send for longer than the timeout, and takes it back once the
// node drains.
func TestAvailabilityTimeout(t *testing.T) {
	top := NewTopic("t", []int32{1, 2, 3}) // partition i led by node i+1
	queues := []PartitionQueue{{0, 1, 0}, {1, 4, 0}, {2, 1, 0}}
	nodes := NewNodeLatency()
	for _, n := range []int32{1, 2, 3} {
		nodes.Observe(n, 0, true)
	}
	u := NewUniformSticky(Config{BatchSize: 100, Adaptive: true, AvailabilityTimeoutMs: 100}, seeded(13))
	targets := func() map[int32]int {
		got := map[int32]int{}
		for range 3000 {
			got[u.next(top)]++
		}
		return got
	}

	nodes.Observe(2, 50, false)
	nodes.Observe(2, 100, false) // stalled exactly the timeout: still in
	u.UpdateLoad(top, queues, nodes)
	if got := targets(); got[1] == 0 {
		t.Fatalf("partition 1 excluded at the timeout: %v", got)
	}

	nodes.Observe(2, 101, false) // stalled 101 ms > 100
	if nodes.Stalled(2) != 101 {
		t.Fatalf("stalled %d", nodes.Stalled(2))
	}
	u.UpdateLoad(top, queues, nodes)
	if got := targets(); got[1] != 0 || got[0] == 0 || got[2] == 0 {
		t.Fatalf("partition 1 not excluded after the timeout: %v", got)
	}
	// The other two have equal queues, but an exclusion keeps the table.
	if w := u.Weights(); len(w) != 2 || w[0].Weight != w[1].Weight {
		t.Fatalf("weights %v, want two equal entries", w)
	}

	// An empty queue on a stalled node is not excluded: nothing of it waits.
	u.UpdateLoad(top, []PartitionQueue{{0, 1, 0}, {1, 0, 0}, {2, 1, 0}}, nodes)
	if got := targets(); got[1] == 0 {
		t.Fatalf("empty partition 1 excluded: %v", got)
	}

	nodes.Observe(2, 150, true) // drained again
	u.UpdateLoad(top, queues, nodes)
	if got := targets(); got[1] == 0 {
		t.Fatalf("partition 1 not taken back after its node drained: %v", got)
	}

	// Without adaptive partitioning the timeout does nothing.
	off := NewUniformSticky(Config{BatchSize: 100, AvailabilityTimeoutMs: 100}, seeded(14))
	nodes.Observe(2, 1000, false)
	off.UpdateLoad(top, queues, nodes)
	if off.Weights() != nil {
		t.Fatal("weights without adaptive partitioning")
	}
}

func TestNodeLatencyUnknownNode(t *testing.T) {
	n := NewNodeLatency()
	if n.Stalled(7) != 0 {
		t.Fatal("unknown node stalled")
	}
	n.Observe(7, 500, false) // first sight: both times start here
	if n.Stalled(7) != 0 {
		t.Fatalf("first observation stalled %d", n.Stalled(7))
	}
}

// FuzzBuildLoadStats checks the table's invariants for any queue contents:
// strictly increasing, picks stay among the choosable ids, and a longer queue
// never gets better odds than a shorter one.
func FuzzBuildLoadStats(f *testing.F) {
	f.Add([]byte{0, 3, 1}, uint8(3), uint8(0), uint32(5))
	f.Add([]byte{7, 7, 7, 7}, uint8(3), uint8(1), uint32(0xffffffff))
	f.Add([]byte{200, 0, 90, 1, 1}, uint8(5), uint8(2), uint32(12345))
	f.Fuzz(func(t *testing.T, raw []byte, length uint8, wsel uint8, r uint32) {
		if len(raw) == 0 || len(raw) > 64 {
			return
		}
		q := make([]int64, len(raw))
		ids := make([]int32, len(raw))
		for i, b := range raw {
			q[i] = int64(b) * int64(1+int(wsel)*300)
			ids[i] = int32(len(raw) - 1 - i)
		}
		n := int(length) % (len(raw) + 1)
		w := Weighting(wsel % 3)
		s := buildLoadStats(q, ids, n, len(raw), w, 512)
		if s == nil {
			return
		}
		if len(s.cft) != n || len(s.ids) != n {
			t.Fatalf("table of %d for length %d", len(s.cft), n)
		}
		prev := int64(0)
		for i, c := range s.cft {
			if c <= prev {
				t.Fatalf("cft %v not strictly increasing at %d", s.cft, i)
			}
			prev = c
		}
		if p := s.pick(r); !slices.Contains(ids[:n], p) {
			t.Fatalf("picked %d, not in %v", p, ids[:n])
		}
		weight := func(i int) int64 {
			if i == 0 {
				return s.cft[0]
			}
			return s.cft[i] - s.cft[i-1]
		}
		for i := range n {
			for j := range n {
				// Allow rounding by one unit in the normalized byte weightings.
				if q[i] < q[j] && weight(i)+1 < weight(j) {
					t.Fatalf("queue %d < %d but weight %d < %d (%v)", q[i], q[j], weight(i), weight(j), fmt.Sprint(s.cft))
				}
			}
		}
		if math.MaxInt32 < s.cft[n-1] {
			t.Fatalf("table end %d beyond a 31-bit draw", s.cft[n-1])
		}
	})
}
