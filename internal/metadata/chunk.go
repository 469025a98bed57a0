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
	// compacts), so slices into it never change.
	arena []int32
	owner *edit
	// written marks the partitions the owning builder has written: a
	// Delta records each partition's state before its first change, once.
	written uint16
}

// pstate is a partition as a chunk stores it.
type pstate struct {
	off            uint32 // start of its lists in the arena
	nReplicas      uint16
	nISR           uint16
	nAdding        uint16
	nRemoving      uint16
	leader         int32
	leaderEpoch    int32
	partitionEpoch int32
	leaderRecovery int8
}

func (s *pstate) lists() int {
	return int(s.nReplicas) + int(s.nISR) + int(s.nAdding) + int(s.nRemoving)
}

// view returns partition i as a Partition, sharing the arena.
func (c *chunk) view(i int) Partition {
	s := &c.parts[i]
	end := int(s.off) + s.lists()
	return Partition{
		nodes:     c.arena[s.off:end:end],
		nReplicas: s.nReplicas, nISR: s.nISR, nAdding: s.nAdding,
		leader: s.leader, leaderEpoch: s.leaderEpoch, partitionEpoch: s.partitionEpoch, leaderRecovery: s.leaderRecovery,
	}
}

// set stores a partition as partition i (appending when i is the
// length), copying its lists into the arena. The chunk must be the
// caller's own.
func (c *chunk) set(i int, replicas, isr, adding, removing []int32, leader, leaderEpoch, partitionEpoch int32, recovery int8) {
	s := pstate{
		off:       uint32(len(c.arena)),
		nReplicas: uint16(len(replicas)), nISR: uint16(len(isr)), nAdding: uint16(len(adding)), nRemoving: uint16(len(removing)),
		leader: leader, leaderEpoch: leaderEpoch, partitionEpoch: partitionEpoch, leaderRecovery: recovery,
	}
	// One growth for the four lists: chunks of equal partitions then fill
	// their arena exactly.
	c.arena = slices.Grow(c.arena, len(replicas)+len(isr)+len(adding)+len(removing))
	c.arena = append(append(append(append(c.arena, replicas...), isr...), adding...), removing...)
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
	live, widest := 0, 0
	for i := range c.parts {
		live += c.parts[i].lists()
		widest = max(widest, c.parts[i].lists())
	}
	n := &chunk{
		parts: make([]pstate, len(c.parts), len(c.parts)+extra),
		arena: make([]int32, 0, live+widest+extra*4),
		owner: e,
	}
	for i := range c.parts {
		s := c.parts[i]
		end := int(s.off) + s.lists()
		off := len(n.arena)
		n.arena = append(n.arena, c.arena[s.off:end]...)
		s.off = uint32(off)
		n.parts[i] = s
	}
	return n
}
