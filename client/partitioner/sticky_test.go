package partitioner

import (
	"errors"
	"slices"
	"testing"
)

func TestStickyPerBatchNeverRepeats(t *testing.T) {
	for _, tc := range []struct {
		name       string
		n          int
		leaderless []int32
	}{
		{"two partitions", 2, nil},
		{"five partitions", 5, nil},
		{"leaderless among them", 6, []int32{0, 2, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top := NewTopic("t", leaders(tc.n, tc.leaderless...))
			tp := StickyPerBatch(seeded(21), false).ForTopic("t")
			ba := tp.(BatchAware)
			prev := tp.Partition(Record{}, top)
			seen := map[int32]int{}
			for range 20_000 {
				p := ba.OnNewBatch(Record{}, top, prev)
				if p == prev {
					t.Fatalf("new batch stayed on partition %d", p)
				}
				if !slices.Contains(top.Available(), p) {
					t.Fatalf("moved to partition %d without a leader", p)
				}
				if got := tp.Partition(Record{}, top); got != p {
					t.Fatalf("sticky answer %d after moving to %d", got, p)
				}
				seen[p]++
				prev = p
			}
			// The move is uniform among the others, so over many moves each led
			// partition gets about 1/n of them.
			want := 20_000 / float64(len(top.Available()))
			for _, p := range top.Available() {
				if c := float64(seen[p]); c < 0.9*want || c > 1.1*want {
					t.Errorf("partition %d chosen %v times, want about %.0f", p, c, want)
				}
			}
		})
	}
}

func TestStickyPerBatchEdges(t *testing.T) {
	t.Run("one led partition", func(t *testing.T) {
		top := NewTopic("t", leaders(3, 0, 2))
		tp := StickyPerBatch(seeded(22), false).ForTopic("t")
		for range 10 {
			if p := tp.(BatchAware).OnNewBatch(Record{}, top, 1); p != 1 {
				t.Fatalf("moved to %d, only 1 has a leader", p)
			}
		}
	})
	t.Run("no led partition", func(t *testing.T) {
		top := NewTopic("t", leaders(4, 0, 1, 2, 3))
		tp := StickyPerBatch(seeded(23), false).ForTopic("t")
		prev := tp.Partition(Record{}, top)
		for range 100 {
			p := tp.(BatchAware).OnNewBatch(Record{}, top, prev)
			if p < 0 || p >= 4 {
				t.Fatalf("partition %d out of range", p)
			}
			prev = p
		}
	})
	t.Run("stale prev does not move", func(t *testing.T) {
		// Two appenders hit a full batch on the same partition; only the first
		// OnNewBatch moves, the second follows it without another draw.
		top := NewTopic("t", leaders(5))
		draws := 0
		r := seeded(24)
		tp := StickyPerBatch(func() uint32 { draws++; return r() }, false).ForTopic("t")
		p0 := tp.Partition(Record{}, top)
		p1 := tp.(BatchAware).OnNewBatch(Record{}, top, p0)
		before := draws
		if p2 := tp.(BatchAware).OnNewBatch(Record{}, top, p0); p2 != p1 || draws != before {
			t.Fatalf("second OnNewBatch for %d went to %d (first %d), draws %d -> %d", p0, p2, p1, before, draws)
		}
	})
	t.Run("keys", func(t *testing.T) {
		top := NewTopic("t", leaders(8))
		key := []byte("order-9")
		keyed := StickyPerBatch(seeded(25), false).ForTopic("t")
		if p := keyed.Partition(Record{Key: key}, top); p != PartitionForKey(key, 8) {
			t.Fatalf("keyed record on %d", p)
		}
		// A keyed record opening a batch still moves the sticky choice of
		// unkeyed records, but itself stays on its key's partition.
		sticky := keyed.Partition(Record{}, top)
		kp := PartitionForKey(key, 8)
		if p := keyed.(BatchAware).OnNewBatch(Record{Key: key}, top, sticky); p != kp {
			t.Fatalf("keyed record moved to %d, key says %d", p, kp)
		}
		if keyed.Partition(Record{}, top) == sticky {
			t.Fatal("sticky choice did not move")
		}
		ignoring := StickyPerBatch(seeded(25), true).ForTopic("t")
		if a, b := ignoring.Partition(Record{Key: key}, top), ignoring.Partition(Record{}, top); a != b {
			t.Fatalf("ignoring keys: keyed record on %d, unkeyed on %d", a, b)
		}
	})
}

// TestRoundRobinEven drives round robin through the accumulator protocol with
// batches so small that every record opens one: each led partition must get
// exactly its share, which the Java partitioner before 3.9 failed (KAFKA-9965).
func TestRoundRobinEven(t *testing.T) {
	for _, tc := range []struct {
		name       string
		n          int
		leaderless []int32
		batchSize  int
	}{
		{"every record opens a batch", 4, nil, 1},
		{"mixed batching", 5, nil, 300},
		{"leaderless skipped", 7, []int32{1, 4}, 1},
		{"no leaders uses all", 3, []int32{0, 1, 2}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top := NewTopic("t", leaders(tc.n, tc.leaderless...))
			a := newFakeAccum(top, tc.batchSize)
			tp := RoundRobin().ForTopic("t")
			targets := top.Available()
			if len(targets) == 0 {
				targets = []int32{0, 1, 2}
			}
			rounds := 1000
			for range rounds * len(targets) {
				appendCustom(tp, Record{Key: []byte("k")}, top, a.queueOf, 100)
			}
			recs := a.recordsPerPartition()
			for p, n := range recs {
				want := int64(0)
				if slices.Contains(targets, int32(p)) {
					want = int64(rounds)
				}
				if n != want {
					t.Fatalf("records per partition %v, want %d on each of %v", recs, rounds, targets)
				}
			}
		})
	}
}

// TestStickyPerBatchThroughAccumulator checks the new-batch path end to end:
// consecutive batches never land on the same partition twice in a row.
func TestStickyPerBatchThroughAccumulator(t *testing.T) {
	top := NewTopic("t", leaders(4))
	a := newFakeAccum(top, 500)
	tp := StickyPerBatch(seeded(26), true).ForTopic("t")
	last := int32(-1)
	batches := 0
	for range 50_000 {
		before := make([]int, len(a.queues))
		for i := range a.queues {
			before[i] = a.queues[i].batches
		}
		p := appendCustom(tp, Record{}, top, a.queueOf, 90)
		if a.queues[p].batches != before[p] { // this record opened a batch
			if p == last {
				t.Fatalf("two consecutive batches on partition %d", p)
			}
			last = p
			batches++
		}
	}
	if batches < 5000 {
		t.Fatalf("only %d batches opened", batches)
	}
}

func TestFuncAndCheck(t *testing.T) {
	top := NewTopic("t", leaders(3))
	var p Partitioner = Func(func(r Record, _ *Topic) int32 { return int32(len(r.Value)) })
	tp := p.ForTopic("t")
	for _, tc := range []struct {
		value []byte
		err   bool
	}{
		{nil, false},
		{[]byte("ab"), false},
		{[]byte("abc"), true},
	} {
		got := tp.Partition(Record{Value: tc.value}, top)
		err := Check(got, top)
		if (err != nil) != tc.err || (err != nil && !errors.Is(err, ErrInvalidPartition)) {
			t.Fatalf("Check(%d) = %v, want error %v", got, err, tc.err)
		}
	}
	if err := Check(-1, top); !errors.Is(err, ErrInvalidPartition) {
		t.Fatalf("Check(-1) = %v", err)
	}
}

func TestTopicView(t *testing.T) {
	l := []int32{3, -1, 5, -7}
	top := NewTopic("orders", l)
	l[0] = -1 // the view keeps its own copy
	if top.Name() != "orders" || top.NumPartitions() != 4 {
		t.Fatalf("name %q partitions %d", top.Name(), top.NumPartitions())
	}
	if !slices.Equal(top.Available(), []int32{0, 2}) {
		t.Fatalf("available %v", top.Available())
	}
	for p, want := range map[int32]int32{0: 3, 1: NoLeader, 3: NoLeader, 9: NoLeader, -1: NoLeader} {
		if got := top.Leader(p); got != want {
			t.Errorf("Leader(%d) = %d, want %d", p, got, want)
		}
	}
}
