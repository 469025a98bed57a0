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
