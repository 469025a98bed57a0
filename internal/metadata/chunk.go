package metadata

import "slices"

// Partitions are stored in chunks of chunkSize, so that a change to one
// partition copies its chunk, not the whole topic. A batch copies each
// topic it touches once (its chunk table: 8 bytes per 16 partitions) and
// each chunk it touches once; smaller chunks measured no faster, larger
// ones slower.
//
// A chunk holds no pointer per partition: each partition is a fixed-size
// pstate and its replica lists live in the chunk's arena. The garbage
// collector then scans one chunk header per 16 partitions, not every
// partition's lists, and a partition costs no allocation of its own.
const (
	chunkBits = 4
	chunkSize = 1 << chunkBits
)

type chunk struct {
	parts []pstate
	// arena holds the partitions' lists: replicas, ISR, adding, removing.
	// The owning builder only appends to it (a changed partition's old
	// lists stay, unreferenced, until the chunk is next copied, which
	// compacts), so slices into it never change, and partitions with
	// equal lists share one run (a topic's partitions take a few orders
	// of the same replicas, with the ISR equal to them while in sync).
	arena []int32
	owner *edit
	// written marks the partitions the owning builder has written: a
	// Delta records each partition's state before its first change, once.
	written uint16
}

// pstate is a partition as a chunk stores it: 24 bytes.
type pstate struct {
	// offRec is the start of its lists in the arena (the low offBits)
	// and its leader recovery state (the high 8 bits).
	offRec         uint32
	nReplicas      uint16
	nISR           uint16
	nAdding        uint16
	nRemoving      uint16
	leader         int32
	leaderEpoch    int32
	partitionEpoch int32
}

// offBits hold an arena offset: a compacted arena holds at most
// chunkSize partitions of four lists of at most 65,535 nodes, under
// 1<<offBits.
const offBits = 24

// arenaLimit is where set compacts a chunk's arena (1<<offBits; lowered
// by tests).
var arenaLimit = 1 << offBits

func (s *pstate) off() int             { return int(s.offRec & (1<<offBits - 1)) }
func (s *pstate) leaderRecovery() int8 { return int8(s.offRec >> offBits) }

func (s *pstate) setOff(off int) {
	s.offRec = s.offRec&^(1<<offBits-1) | uint32(off)
}

func (s *pstate) lists() int {
	return int(s.nReplicas) + int(s.nISR) + int(s.nAdding) + int(s.nRemoving)
}

// view returns partition i as a Partition, sharing the arena.
func (c *chunk) view(i int) Partition {
	s := &c.parts[i]
	off := s.off()
	end := off + s.lists()
	return Partition{
		nodes:     c.arena[off:end:end],
		nReplicas: s.nReplicas, nISR: s.nISR, nAdding: s.nAdding,
		leader: s.leader, leaderEpoch: s.leaderEpoch, partitionEpoch: s.partitionEpoch, leaderRecovery: s.leaderRecovery(),
	}
}

// set stores a partition as partition i (appending when i is the
// length), copying its lists into the arena. The chunk must be the
// caller's own.
func (c *chunk) set(i int, replicas, isr, adding, removing []int32, leader, leaderEpoch, partitionEpoch int32, recovery int8) {
	s := pstate{
		offRec:    uint32(uint8(recovery)) << offBits,
		nReplicas: uint16(len(replicas)), nISR: uint16(len(isr)), nAdding: uint16(len(adding)), nRemoving: uint16(len(removing)),
		leader: leader, leaderEpoch: leaderEpoch, partitionEpoch: partitionEpoch,
	}
	off := sharedRun(c.arena, c.parts, &s, replicas, isr, adding, removing)
	if off < 0 {
		need := s.lists()
		if len(c.arena)+need >= arenaLimit {
			// The builder's replaced lists filled the arena: keep the live ones.
			c.arena = c.moveLists(make([]int32, 0, len(c.arena)), c.parts)
		}
		off = len(c.arena)
		c.arena = slices.Grow(c.arena, need)
		c.arena = append(append(append(append(c.arena, replicas...), isr...), adding...), removing...)
	}
	s.setOff(off)
	if i == len(c.parts) {
		c.parts = append(c.parts, s)
	} else {
		c.parts[i] = s
	}
}

// clone copies a chunk for a builder, compacting its arena, with room
// for extra more partitions. The arena keeps room for one changed
// partition's lists too: a builder copies a chunk to change it.
func (c *chunk) clone(e *edit, extra int) *chunk {
	widest := 0
	for i := range c.parts {
		widest = max(widest, c.parts[i].lists())
	}
	n := &chunk{
		parts: make([]pstate, len(c.parts), len(c.parts)+extra),
		owner: e,
	}
	copy(n.parts, c.parts)
	live := c.moveLists(nil, n.parts)
	n.arena = append(make([]int32, 0, len(live)+widest+extra*4), live...)
	return n
}

// moveLists appends the lists of parts, read from c's arena, to arena
// (once for partitions with equal lists) and points each partition at
// its new place. Views of c's arena stay as they were.
func (c *chunk) moveLists(arena []int32, parts []pstate) []int32 {
	for i := range parts {
		s := &parts[i]
		from := s.off()
		run := c.arena[from : from+s.lists()]
		to := sharedRun(arena, parts[:i], s, run)
		if to < 0 {
			to = len(arena)
			arena = append(arena, run...)
		}
		s.setOff(to)
	}
	return arena
}

// sharedRun returns the offset in arena of the lists of one of parts
// (whose offsets are into arena) that hold the nodes of lists, one after
// the other (s's counts split them, whatever the other's are); -1 when
// none does.
func sharedRun(arena []int32, parts []pstate, s *pstate, lists ...[]int32) int {
	n := s.lists()
	for j := range parts {
		p := &parts[j]
		if p.lists() != n {
			continue
		}
		if run := arena[p.off() : p.off()+n]; equalRun(run, lists) {
			return p.off()
		}
	}
	return -1
}

// equalRun reports whether run holds lists, one after the other.
func equalRun(run []int32, lists [][]int32) bool {
	for _, l := range lists {
		if !slices.Equal(run[:len(l)], l) {
			return false
		}
		run = run[len(l):]
	}
	return true
}
