package partitioner

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// step is one Update call and whether it must leave the Sticky switched away.
type step struct {
	bytes   int
	allFull bool
	switch_ bool
}

func TestUpdateSwitchRule(t *testing.T) {
	for _, tc := range []struct {
		name      string
		batchSize int
		steps     []step
	}{
		{"switch at batch.size when full", 100, []step{{50, true, false}, {49, true, false}, {1, true, true}}},
		{"deferred while the batch is open", 100, []step{{100, false, false}, {50, false, false}, {49, false, false}, {1, false, true}}},
		{"deferred then completed", 100, []step{{120, false, false}, {0, true, true}}},
		{"full below batch.size does not switch", 100, []step{{99, true, false}, {0, true, false}}},
		{"2x cap with switching disabled", 100, []step{{199, false, false}, {1, false, true}}},
		{"one oversized record", 100, []step{{5000, true, true}}},
		{"oversized record in an open batch", 100, []step{{200, false, true}}},
		{"batch.size 0 behaves as 1", 0, []step{{0, true, false}, {1, true, true}}},
		{"batch.size negative behaves as 1", -5, []step{{1, false, false}, {1, false, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top := NewTopic("t", leaders(4))
			u := NewUniformSticky(Config{BatchSize: tc.batchSize}, seeded(1))
			s := u.Peek(top)
			for i, st := range tc.steps {
				u.Update(s, st.bytes, st.allFull, top)
				if got := u.Changed(s); got != st.switch_ {
					t.Fatalf("step %d %+v: switched=%v, want %v (produced %d)", i, st, got, st.switch_, s.Produced())
				}
			}
		})
	}
}

func TestOvershootNotCarried(t *testing.T) {
	top := NewTopic("t", leaders(3))
	u := NewUniformSticky(Config{BatchSize: 100}, seeded(2))
	s := u.Peek(top)
	u.Update(s, 180, true, top)
	next := u.Peek(top)
	if next == s {
		t.Fatal("no switch after 180 of 100 bytes")
	}
	if next.Produced() != 0 {
		t.Fatalf("new sticky starts at %d bytes, want 0", next.Produced())
	}
	u.Update(next, 99, true, top)
	if u.Changed(next) {
		t.Fatal("switched after 99 bytes: overshoot was carried")
	}
}

func TestRecheck(t *testing.T) {
	top := NewTopic("t", leaders(3))
	u := NewUniformSticky(Config{BatchSize: 100}, seeded(3))
	s := u.Peek(top)
	u.Update(s, 150, false, top) // deferred
	if u.Recheck(s, false, top) {
		t.Fatal("recheck with an open batch must not switch")
	}
	if !u.Recheck(s, true, top) {
		t.Fatal("recheck with all batches full must complete the deferred switch")
	}
	// A stale Sticky is reported changed without drawing again.
	calls := 0
	u2 := NewUniformSticky(Config{BatchSize: 100}, func() uint32 { calls++; return uint32(calls) })
	s2 := u2.Peek(top)
	u2.Update(s2, 100, true, top)
	before := calls
	if !u2.Recheck(s2, true, top) || calls != before {
		t.Fatalf("stale sticky: recheck must return true without a draw (draws %d -> %d)", before, calls)
	}
}

func TestPeekNoPartitions(t *testing.T) {
	u := NewUniformSticky(DefaultConfig(), seeded(4))
	if s := u.Peek(NewTopic("t", nil)); s != nil {
		t.Fatalf("Peek with no partitions = %v, want nil", s.Partition())
	}
	u.Update(nil, 10, true, NewTopic("t", nil)) // must not panic
	if u.Changed(nil) {
		t.Fatal("nil sticky reported changed")
	}
}

func TestUniformChoosesLedPartitions(t *testing.T) {
	for _, tc := range []struct {
		name       string
		n          int
		leaderless []int32
		want       map[int32]bool
	}{
		{"all led", 3, nil, map[int32]bool{0: true, 1: true, 2: true}},
		{"some leaderless", 5, []int32{0, 3}, map[int32]bool{1: true, 2: true, 4: true}},
		{"none led falls back to all", 2, []int32{0, 1}, map[int32]bool{0: true, 1: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top := NewTopic("t", leaders(tc.n, tc.leaderless...))
			u := NewUniformSticky(Config{BatchSize: 1}, seeded(5))
			seen := map[int32]bool{}
			for range 2000 {
				s := u.Peek(top)
				if !tc.want[s.Partition()] {
					t.Fatalf("chose partition %d", s.Partition())
				}
				seen[s.Partition()] = true
				u.Update(s, 1, true, top)
			}
			if len(seen) != len(tc.want) {
				t.Fatalf("chose %v, want all of %v", seen, tc.want)
			}
		})
	}
}

func TestKeyedPartition(t *testing.T) {
	top := NewTopic("t", leaders(10, 3))
	key := []byte("user-42")
	for _, tc := range []struct {
		name   string
		ignore bool
		rec    Record
		want   int32
		keyed  bool
	}{
		{"key hashes", false, Record{Key: key}, PartitionForKey(key, 10), true},
		{"empty key is a key", false, Record{Key: []byte{}}, PartitionForKey(nil, 10), true},
		{"nil key is sticky", false, Record{Value: key}, -1, false},
		{"ignore keys", true, Record{Key: key}, -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := NewUniformSticky(Config{IgnoreKeys: tc.ignore}, seeded(6))
			p, ok := u.KeyedPartition(tc.rec, top)
			if p != tc.want || ok != tc.keyed {
				t.Fatalf("KeyedPartition = (%d, %v), want (%d, %v)", p, ok, tc.want, tc.keyed)
			}
		})
	}
	// A key hashes over all partitions even when its partition has no leader.
	for i := range 1000 {
		k := []byte{byte(i), byte(i >> 8)}
		if PartitionForKey(k, 10) == 3 {
			if p, _ := NewUniformSticky(DefaultConfig(), nil).KeyedPartition(Record{Key: k}, top); p != 3 {
				t.Fatalf("key %x moved off leaderless partition 3 to %d", k, p)
			}
			return
		}
	}
	t.Fatal("no key hashed to partition 3")
}

func TestOnSwitchHook(t *testing.T) {
	type sw struct {
		from, to int32
		produced int64
	}
	var got []sw
	cfg := Config{BatchSize: 100, OnSwitch: func(from, to int32, produced int64) { got = append(got, sw{from, to, produced}) }}
	top := NewTopic("t", leaders(4))
	u := NewUniformSticky(cfg, seeded(7))
	s := u.Peek(top)
	u.Update(s, 130, true, top)
	s2 := u.Peek(top)
	if len(got) != 2 || got[0] != (sw{-1, s.Partition(), 0}) || got[1] != (sw{s.Partition(), s2.Partition(), 130}) {
		t.Fatalf("switch events %+v", got)
	}
}

// TestStickyUniformBytes drives a million records of mixed sizes through the
// accumulator protocol: every partition must get close to the same bytes,
// whatever the record sizes. Adaptive is on but no load stats are fed, so
// this is the uniform path with real deferred switches.
func TestStickyUniformBytes(t *testing.T) {
	const (
		partitions = 8
		records    = 1_000_000
		batchSize  = 512
	)
	top := NewTopic("t", leaders(partitions))
	u := NewUniformSticky(Config{BatchSize: batchSize, Adaptive: true}, seeded(8))
	a := newFakeAccum(top, batchSize)
	sizes := rand.New(rand.NewPCG(8, 9))
	for range records {
		n := 20 + sizes.IntN(200)
		if sizes.IntN(100) == 0 {
			n = 3000 // an occasional record bigger than a batch
		}
		appendSticky(u, top, a.queueOf, n)
	}
	bytes := a.bytesPerPartition()
	var total int64
	for _, b := range bytes {
		total += b
	}
	mean := float64(total) / partitions
	for p, b := range bytes {
		if dev := math.Abs(float64(b)-mean) / mean; dev > 0.03 {
			t.Errorf("partition %d got %d bytes, %.1f%% off the mean %.0f", p, b, 100*dev, mean)
		}
	}
	t.Logf("bytes per partition %v (mean %.0f)", bytes, mean)
}

// TestConcurrentAppends runs appenders and a load-stats updater at once (run
// with -race). Switches are serialized by the queue locks, so no sticky period
// may pass the 2x cap by more than one append, and no record is lost.
func TestConcurrentAppends(t *testing.T) {
	const (
		goroutines = 8
		perG       = 20_000
		batchSize  = 1024
		maxRecord  = 300
	)
	var worst atomic.Int64
	cfg := Config{BatchSize: batchSize, Adaptive: true, AvailabilityTimeoutMs: 5, OnSwitch: func(_, _ int32, produced int64) {
		for {
			w := worst.Load()
			if produced <= w || worst.CompareAndSwap(w, produced) {
				return
			}
		}
	}}
	top := NewTopic("t", leaders(6, 5))
	u := NewUniformSticky(cfg, DefaultRand)
	a := newFakeAccum(top, batchSize)
	nodes := NewNodeLatency()

	var wg sync.WaitGroup
	stop := make(chan struct{})
	var senderPasses atomic.Int64
	wg.Add(1)
	go func() { // the sender: refreshes stats from the queues until the appenders finish
		defer wg.Done()
		queues := make([]PartitionQueue, len(a.queues))
		for now := int64(0); ; now++ {
			select {
			case <-stop:
				return
			default:
			}
			for i := range a.queues {
				q := &a.queues[i]
				q.lock()
				queues[i] = PartitionQueue{Partition: int32(i), Batches: q.batches % 7, Bytes: q.bytes % 5000}
				q.unlock()
			}
			nodes.Observe(1, now, now%3 != 0)
			u.UpdateLoad(top, queues, nodes)
			senderPasses.Add(1)
		}
	}()
	var appenders sync.WaitGroup
	for g := range goroutines {
		appenders.Add(1)
		go func() {
			defer appenders.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range perG {
				appendSticky(u, top, a.queueOf, 1+r.IntN(maxRecord))
			}
		}()
	}
	appenders.Wait()
	close(stop)
	wg.Wait()

	var recs int64
	for p, n := range a.recordsPerPartition() {
		if p == 5 && n != 0 {
			t.Errorf("leaderless partition 5 got %d records", n)
		}
		recs += n
	}
	if recs != goroutines*perG {
		t.Fatalf("%d records accounted, want %d", recs, goroutines*perG)
	}
	if limit := int64(2*batchSize + batchHeaderBytes + maxRecord); worst.Load() >= limit {
		t.Fatalf("a sticky period counted %d bytes, cap allows < %d", worst.Load(), limit)
	}
	if senderPasses.Load() == 0 {
		t.Fatal("sender never ran")
	}
}
