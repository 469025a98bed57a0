package metadata

import (
	"slices"
	"testing"
)

// TestChunkStoresPartitionsAndCompactsItsArena: a chunk gives back each
// partition as set (lists, leader, epochs, recovery state, which shares
// a word with the arena offset), and once replaced lists fill its arena
// to the limit it keeps only the live ones, leaving views taken before
// as they were.
func TestChunkStoresPartitionsAndCompactsItsArena(t *testing.T) {
	defer func(l int) { arenaLimit = l }(arenaLimit)
	arenaLimit = 128 // live lists: 96
	type part struct {
		replicas, isr, adding, removing []int32
		leader, epoch, pepoch           int32
		recovery                        int8
	}
	check := func(t *testing.T, got Partition, want part) {
		t.Helper()
		if !slices.Equal(got.Replicas(), want.replicas) || !slices.Equal(got.ISR(), want.isr) ||
			got.Leader() != want.leader || got.LeaderEpoch() != want.epoch || got.PartitionEpoch() != want.pepoch ||
			got.LeaderRecovery() != want.recovery {
			t.Fatalf("got replicas %v isr %v leader %d epochs %d/%d recovery %d, want %+v",
				got.Replicas(), got.ISR(), got.Leader(), got.LeaderEpoch(), got.PartitionEpoch(), got.LeaderRecovery(), want)
		}
	}
	c := &chunk{}
	want := make([]part, chunkSize)
	for i := range want {
		want[i] = part{replicas: []int32{1, 2, 3}, isr: []int32{1, 2, 3}, leader: int32(i % 3), epoch: 1, pepoch: 1, recovery: int8(i % 2)}
		w := want[i]
		c.set(i, w.replicas, w.isr, w.adding, w.removing, w.leader, w.epoch, w.pepoch, w.recovery)
	}
	first := c.view(0)
	for round := range 40 {
		i := round % 3
		w := &want[i]
		w.isr = []int32{int32(round%3 + 1)}
		w.adding, w.removing = []int32{4}, []int32{int32(round)}
		w.pepoch++
		c.set(i, w.replicas, w.isr, w.adding, w.removing, w.leader, w.epoch, w.pepoch, w.recovery)
		if len(c.arena) >= arenaLimit {
			t.Fatalf("round %d: arena at %d, past the limit", round, len(c.arena))
		}
	}
	for i := range want {
		check(t, c.view(i), want[i])
	}
	check(t, first, part{replicas: []int32{1, 2, 3}, isr: []int32{1, 2, 3}, leader: 0, epoch: 1, pepoch: 1, recovery: 0})
}

// TestChunkSharesEqualLists: partitions of a chunk with equal lists
// share one run of the arena (a topic's RF 3 partitions take three
// orders of the same nodes: 18 nodes held for 16 partitions, not 96),
// and changing one partition's lists leaves the others' as they were;
// a clone and a compaction keep the sharing.
func TestChunkSharesEqualLists(t *testing.T) {
	orders := [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}
	c := &chunk{}
	for i := range chunkSize {
		o := orders[i%3]
		c.set(i, o, o, nil, nil, o[0], 1, 1, 0)
	}
	if len(c.arena) != 18 {
		t.Fatalf("arena holds %d nodes for 16 partitions of 3 orders, want 18", len(c.arena))
	}
	for i := range chunkSize {
		if got, o := c.view(i), orders[i%3]; !slices.Equal(got.Replicas(), o) || !slices.Equal(got.ISR(), o) || got.Leader() != o[0] {
			t.Fatalf("partition %d reads %v / %v, want %v", i, got.Replicas(), got.ISR(), o)
		}
	}
	// Lists that hold the same nodes split differently share them too.
	c.set(chunkSize-1, []int32{1, 2}, []int32{3, 1, 2, 3}, nil, nil, 1, 1, 2, 0)
	if got := c.view(chunkSize - 1); !slices.Equal(got.Replicas(), []int32{1, 2}) || !slices.Equal(got.ISR(), []int32{3, 1, 2, 3}) {
		t.Fatalf("split lists read back as %v / %v", got.Replicas(), got.ISR())
	}
	c.set(0, orders[0], []int32{1, 2}, nil, nil, 1, 1, 2, 0) // an ISR shrink
	for i := 1; i < chunkSize-1; i++ {
		if got, o := c.view(i), orders[i%3]; !slices.Equal(got.Replicas(), o) || !slices.Equal(got.ISR(), o) {
			t.Fatalf("partition %d reads %v / %v after partition 0 changed, want %v", i, got.Replicas(), got.ISR(), o)
		}
	}
	if got := c.view(0); !slices.Equal(got.ISR(), []int32{1, 2}) {
		t.Fatalf("partition 0 ISR %v, want [1 2]", got.ISR())
	}
	n := c.clone(nil, 0)
	if live := 18 + 5; len(n.arena) != live {
		t.Fatalf("clone's arena holds %d nodes, want the %d live ones once", len(n.arena), live)
	}
	for i := range chunkSize {
		if a, b := c.view(i), n.view(i); !slices.Equal(a.nodes, b.nodes) || a.nReplicas != b.nReplicas || a.nISR != b.nISR {
			t.Fatalf("partition %d: clone reads %v, want %v", i, b.nodes, a.nodes)
		}
	}
}
