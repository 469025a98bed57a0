package fetchsession

// slotIndex finds a slot by its (topic, partition) pair: an
// open-addressing table with linear probing whose 4-byte cells hold a
// slot + 1 (0: empty), the pair read back from the slot through the at
// function each call passes. A Client and a Session keep one each for
// their partitions: about 7 bytes per partition at the table's usual
// load, where a dense array per topic costs 4 bytes per partition
// number (and a session or fetcher holds about a third of a topic's
// numbers at RF 3) and a map costs about 40. It holds at most 3/4
// occupied cells, and halves when under 1/8.
type slotIndex struct {
	cells []int32
	n     int
}

func (x *slotIndex) home(topic, partition int32) int {
	h := (uint64(uint32(topic))<<32 | uint64(uint32(partition))) * 0x9e3779b97f4a7c15
	return int(h>>32) & (len(x.cells) - 1)
}

// find returns the slot of (topic, partition), or -1.
func (x *slotIndex) find(topic, partition int32, at func(slot int32) (int32, int32)) int32 {
	if len(x.cells) == 0 {
		return -1
	}
	mask := len(x.cells) - 1
	for c := x.home(topic, partition); ; c = (c + 1) & mask {
		v := x.cells[c]
		if v == 0 {
			return -1
		}
		if t, p := at(v - 1); t == topic && p == partition {
			return v - 1
		}
	}
}

// insert adds slot, which holds (topic, partition) and is not indexed.
func (x *slotIndex) insert(slot, topic, partition int32, at func(int32) (int32, int32)) {
	if (x.n+1)*4 > len(x.cells)*3 {
		x.resize(max(16, 2*len(x.cells)), at)
	}
	x.place(slot, topic, partition)
	x.n++
}

func (x *slotIndex) place(slot, topic, partition int32) {
	mask := len(x.cells) - 1
	c := x.home(topic, partition)
	for x.cells[c] != 0 {
		c = (c + 1) & mask
	}
	x.cells[c] = slot + 1
}

func (x *slotIndex) resize(size int, at func(int32) (int32, int32)) {
	old := x.cells
	x.cells = make([]int32, size)
	for _, v := range old {
		if v != 0 {
			t, p := at(v - 1)
			x.place(v-1, t, p)
		}
	}
}

// remove takes out slot, which holds (topic, partition) and is indexed
// (backward-shift deletion: the cells after it in its run move back so
// that no probe stops early).
func (x *slotIndex) remove(slot, topic, partition int32, at func(int32) (int32, int32)) {
	mask := len(x.cells) - 1
	c := x.home(topic, partition)
	for x.cells[c] != slot+1 {
		c = (c + 1) & mask
	}
	for {
		x.cells[c] = 0
		j := c
		for {
			j = (j + 1) & mask
			v := x.cells[j]
			if v == 0 {
				x.n--
				switch {
				case x.n == 0:
					x.cells = nil
				case len(x.cells) > 16 && x.n < len(x.cells)/8:
					x.resize(len(x.cells)/2, at)
				}
				return
			}
			h := x.home(at(v - 1))
			// The cell at j stays when its home is cyclically in (c, j].
			if (c < j && c < h && h <= j) || (c > j && (h > c || h <= j)) {
				continue
			}
			x.cells[c] = v
			c = j
			break
		}
	}
}
