package cleaner

import (
	"hash/maphash"
	"math"
)

// keyMap maps the keys of a cleaning round's dirty range to the offset of
// their latest record. Like Kafka's SkimpyOffsetMap it stores a hash of
// the key instead of the key, so its size does not depend on key sizes,
// and it never deletes.
//
// An entry is 16 bytes: a 96-bit hash of the key (two seeded maphash
// values: 64 bits that also place the entry, 32 more to tell keys apart)
// and the offset as a 32-bit delta from the round's first dirty offset
// (a round covers at most 2^32-1 offsets). Kafka 4.3's entries take 40
// bytes (a SHA-256 digest and a 64-bit offset), so the same
// log.cleaner.dedupe.buffer.size holds 2.5 times the keys. Two keys whose
// 96-bit hashes are equal would be taken for one (the older record of one
// would be dropped for the other's); for a full 128 MiB map of 7.5 million
// keys the chance is about 4e-16 per round.
//
// The table starts small and doubles (rehashing from the stored hashes)
// until it reaches the budget, so a small log costs little memory; it is
// full when a new key would push it past the load factor at that size.
// Linear probing over a power-of-two table.
type keyMap struct {
	seedHi, seedLo maphash.Seed
	slots          [][2]uint64 // [0]: hash high bits, never 0 when used; [1]: low hash bits << 32 | offset delta
	used           int
	maxSlots       int
	initial        int // slots a round starts with
	loadFactor     float64
	base           int64 // offsets are stored relative to it
}

const (
	entryBytes   = 16
	minMapSlots  = 1 << 12
	maxDeltaSpan = math.MaxUint32
)

// newKeyMap makes a map that may use up to budget bytes.
func newKeyMap(budget int64, loadFactor float64) *keyMap {
	n := budget / entryBytes
	maxSlots := 2
	for int64(maxSlots)*2 <= n && maxSlots < 1<<40 {
		maxSlots *= 2
	}
	return &keyMap{maxSlots: maxSlots, initial: min(minMapSlots, maxSlots), loadFactor: loadFactor}
}

// reset empties the map for a round starting at offset base; fresh seeds
// make keys that collided in one round unlikely to collide in the next.
func (m *keyMap) reset(base int64) {
	m.seedHi, m.seedLo = maphash.MakeSeed(), maphash.MakeSeed()
	if len(m.slots) == m.initial {
		clear(m.slots)
	} else {
		m.slots = make([][2]uint64, m.initial)
	}
	m.used = 0
	m.base = base
}

// capacity is how many keys the map can take at its largest.
func (m *keyMap) capacity() int { return int(float64(m.maxSlots) * m.loadFactor) }

func (m *keyMap) hash(key []byte) (uint64, uint32) {
	hi := maphash.Bytes(m.seedHi, key)
	if hi == 0 {
		hi = 1
	}
	return hi, uint32(maphash.Bytes(m.seedLo, key))
}

// put maps key to offset (offset at or past base, below base+2^32-1). It
// reports false, changing nothing, when the key is new and the map is
// full.
func (m *keyMap) put(key []byte, offset int64) bool {
	if offset < m.base || offset-m.base >= maxDeltaSpan {
		return false
	}
	hi, lo := m.hash(key)
	val := uint64(lo)<<32 | uint64(offset-m.base)
	i := m.find(hi, lo)
	if m.slots[i][0] != 0 {
		m.slots[i][1] = val
		return true
	}
	if float64(m.used+1) > float64(len(m.slots))*m.loadFactor {
		if len(m.slots) >= m.maxSlots {
			return false
		}
		m.grow()
		i = m.find(hi, lo)
	}
	m.slots[i] = [2]uint64{hi, val}
	m.used++
	return true
}

// get returns the offset mapped to key, or -1.
func (m *keyMap) get(key []byte) int64 {
	if m.used == 0 {
		return -1
	}
	hi, lo := m.hash(key)
	i := m.find(hi, lo)
	if m.slots[i][0] == 0 {
		return -1
	}
	return m.base + int64(uint32(m.slots[i][1]))
}

// find returns the slot holding (hi, lo) or the empty slot where it
// would go.
func (m *keyMap) find(hi uint64, lo uint32) int {
	mask := uint64(len(m.slots) - 1)
	for i := hi & mask; ; i = (i + 1) & mask {
		s := &m.slots[i]
		if s[0] == 0 || s[0] == hi && uint32(s[1]>>32) == lo {
			return int(i)
		}
	}
}

// grow doubles the table, placing every entry again by its stored hash.
func (m *keyMap) grow() {
	old := m.slots
	m.slots = make([][2]uint64, len(old)*2)
	mask := uint64(len(m.slots) - 1)
	for _, s := range old {
		if s[0] == 0 {
			continue
		}
		i := s[0] & mask
		for m.slots[i][0] != 0 {
			i = (i + 1) & mask
		}
		m.slots[i] = s
	}
}

// utilization is the share of the largest table in use.
func (m *keyMap) utilization() float64 { return float64(m.used) / float64(m.maxSlots) }

// release gives the table back between rounds.
func (m *keyMap) release() { m.slots, m.used = nil, 0 }
