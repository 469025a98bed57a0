package fetchsession

import (
	"math"
	"testing"
)

// TestSlotIndex checks the index against a map through random inserts
// and removals that grow it, shrink it, empty it and fill it again,
// with partition numbers that collide in the hash's low bits, negative
// ones and the extremes.
func TestSlotIndex(t *testing.T) {
	type pair struct{ topic, partition int32 }
	var slots []pair // slot -> what it holds; topic -1: free
	var free []int32
	at := func(i int32) (int32, int32) { return slots[i].topic, slots[i].partition }
	var x slotIndex
	model := map[pair]int32{}
	r := uint64(1)
	rnd := func(n int) int {
		r = r*6364136223846793005 + 1442695040888963407
		return int((r >> 33) % uint64(n))
	}
	partitions := []int32{0, 1, -1, math.MaxInt32, math.MinInt32, 1 << 16, 2 << 16, 3 << 16}
	for step := range 40000 {
		k := pair{int32(rnd(4)), int32(rnd(500))}
		if rnd(10) == 0 {
			k.partition = partitions[rnd(len(partitions))]
		}
		insert := step%20000 < 12000 && rnd(3) > 0 || step%20000 >= 12000 && rnd(4) == 0
		i, ok := model[k]
		switch {
		case insert && !ok:
			if n := len(free); n > 0 {
				i = free[n-1]
				free = free[:n-1]
				slots[i] = k
			} else {
				i = int32(len(slots))
				slots = append(slots, k)
			}
			x.insert(i, k.topic, k.partition, at)
			model[k] = i
		case !insert && ok:
			x.remove(i, k.topic, k.partition, at)
			slots[i] = pair{-1, 0}
			free = append(free, i)
			delete(model, k)
		}
		if got, want := x.find(k.topic, k.partition, at), func() int32 {
			if i, ok := model[k]; ok {
				return i
			}
			return -1
		}(); got != want {
			t.Fatalf("step %d: find %v = %d, want %d", step, k, got, want)
		}
		if step%500 == 0 || len(model) < 3 {
			if x.n != len(model) || x.n*4 > len(x.cells)*3 {
				t.Fatalf("step %d: %d indexed in %d cells, %d held", step, x.n, len(x.cells), len(model))
			}
			for k, i := range model {
				if got := x.find(k.topic, k.partition, at); got != i {
					t.Fatalf("step %d: %v at %d found at %d", step, k, i, got)
				}
			}
		}
	}
}
