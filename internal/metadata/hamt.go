package metadata

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"slices"
)

// edit marks the nodes one builder created. A builder may change its own
// nodes in place; any other node is shared with older images and is
// copied first (path copying). When a builder hands out an image it
// takes a fresh edit, so the image it handed out never changes again.
type edit struct{ _ byte }

// pmap is a persistent hash array mapped trie: an immutable map whose
// updates copy only the path to the changed entry (at most 13 nodes of
// at most 32 slots), sharing everything else with the previous version.
// A nil root is the empty map. Keys are spread by a 64-bit hash, five
// bits per level; keys whose hashes are equal in all 64 bits share a
// collision node at the bottom, searched linearly.
type pmap[K comparable, V any, H hasher[K]] struct {
	root *pnode[K, V]
	n    int
}

// hasher spreads keys; a zero-size type, so that hashing is a static
// call.
type hasher[K any] interface{ hash(K) uint64 }

// seeded hashes with a per-process seed: iteration order differs between
// processes, and crafted keys cannot collide on purpose.
type seeded[K comparable] struct{}

func (seeded[K]) hash(k K) uint64 { return maphash.Comparable(hashSeed, k) }

// idHash hashes a topic id by its own bits, which are random: the order
// in which topics are visited, and so the order of the records a scan
// decides, is the same in every process for the same ids.
type idHash struct{}

func (idHash) hash(id TopicID) uint64 {
	return binary.LittleEndian.Uint64(id[:8]) ^ bits.RotateLeft64(binary.LittleEndian.Uint64(id[8:]), 31)
}

type pnode[K comparable, V any] struct {
	bitmap uint32 // which of the 32 slots are present; unused in collision nodes
	slots  []pslot[K, V]
	owner  *edit
}

// pslot is a leaf (sub == nil) or a subtree.
type pslot[K comparable, V any] struct {
	hash uint64
	key  K
	val  V
	sub  *pnode[K, V]
}

const (
	pmapBits = 5
	// pmapCollision is the shift at which every hash bit has been used.
	pmapCollision = 65
)

var hashSeed = maphash.MakeSeed()

func (m pmap[K, V, H]) len() int { return m.n }

func (m pmap[K, V, H]) get(k K) (V, bool) {
	var h H
	return m.getHash(h.hash(k), k)
}

// getHash, setHash and deleteHash take the key's hash, so that tests can
// force collisions.
func (m pmap[K, V, H]) getHash(h uint64, k K) (V, bool) {
	n := m.root
	for shift := uint(0); n != nil; shift += pmapBits {
		if shift >= pmapCollision {
			for i := range n.slots {
				if n.slots[i].key == k {
					return n.slots[i].val, true
				}
			}
			break
		}
		bit := uint32(1) << ((h >> shift) & 31)
		if n.bitmap&bit == 0 {
			break
		}
		s := &n.slots[bits.OnesCount32(n.bitmap&(bit-1))]
		if s.sub != nil {
			n = s.sub
			continue
		}
		if s.hash == h && s.key == k {
			return s.val, true
		}
		break
	}
	var zero V
	return zero, false
}

// set returns the map with k bound to v. Nodes owned by e are updated in
// place, all others copied.
func (m pmap[K, V, H]) set(e *edit, k K, v V) pmap[K, V, H] {
	var h H
	return m.setHash(e, h.hash(k), k, v)
}

func (m pmap[K, V, H]) setHash(e *edit, h uint64, k K, v V) pmap[K, V, H] {
	root := m.root
	if root == nil {
		root = &pnode[K, V]{owner: e}
	}
	var added bool
	m.root, added = root.set(e, 0, h, k, v)
	if added {
		m.n++
	}
	return m
}

func (n *pnode[K, V]) editable(e *edit) *pnode[K, V] {
	if n.owner == e {
		return n
	}
	c := &pnode[K, V]{bitmap: n.bitmap, owner: e, slots: make([]pslot[K, V], len(n.slots), len(n.slots)+1)}
	copy(c.slots, n.slots)
	return c
}

func (n *pnode[K, V]) set(e *edit, shift uint, h uint64, k K, v V) (*pnode[K, V], bool) {
	n = n.editable(e)
	if shift >= pmapCollision {
		for i := range n.slots {
			if n.slots[i].key == k {
				n.slots[i].val = v
				return n, false
			}
		}
		n.slots = append(n.slots, pslot[K, V]{hash: h, key: k, val: v})
		return n, true
	}
	bit := uint32(1) << ((h >> shift) & 31)
	i := bits.OnesCount32(n.bitmap & (bit - 1))
	if n.bitmap&bit == 0 {
		n.bitmap |= bit
		n.slots = append(n.slots, pslot[K, V]{})
		copy(n.slots[i+1:], n.slots[i:])
		n.slots[i] = pslot[K, V]{hash: h, key: k, val: v}
		return n, true
	}
	s := &n.slots[i]
	if s.sub != nil {
		var added bool
		s.sub, added = s.sub.set(e, shift+pmapBits, h, k, v)
		return n, added
	}
	if s.hash == h && s.key == k {
		s.val = v
		return n, false
	}
	// Two keys share this slot: push both one level down.
	sub := &pnode[K, V]{owner: e}
	sub, _ = sub.set(e, shift+pmapBits, s.hash, s.key, s.val)
	sub, _ = sub.set(e, shift+pmapBits, h, k, v)
	*s = pslot[K, V]{sub: sub}
	return n, true
}

// delete returns the map without k.
func (m pmap[K, V, H]) delete(e *edit, k K) pmap[K, V, H] {
	var h H
	return m.deleteHash(e, h.hash(k), k)
}

func (m pmap[K, V, H]) deleteHash(e *edit, h uint64, k K) pmap[K, V, H] {
	if m.root == nil {
		return m
	}
	root, removed := m.root.delete(e, 0, h, k)
	if removed {
		m.root = root
		m.n--
	}
	return m
}

// delete returns the node without k (nil when it becomes empty). When k
// is absent it returns n unchanged and copies nothing.
func (n *pnode[K, V]) delete(e *edit, shift uint, h uint64, k K) (*pnode[K, V], bool) {
	if shift >= pmapCollision {
		for i := range n.slots {
			if n.slots[i].key == k {
				if len(n.slots) == 1 {
					return nil, true
				}
				n = n.editable(e)
				n.slots = slices.Delete(n.slots, i, i+1)
				return n, true
			}
		}
		return n, false
	}
	bit := uint32(1) << ((h >> shift) & 31)
	if n.bitmap&bit == 0 {
		return n, false
	}
	i := bits.OnesCount32(n.bitmap & (bit - 1))
	s := n.slots[i]
	if s.sub == nil {
		if s.hash != h || s.key != k {
			return n, false
		}
		if len(n.slots) == 1 {
			return nil, true
		}
		n = n.editable(e)
		n.bitmap &^= bit
		n.slots = slices.Delete(n.slots, i, i+1)
		return n, true
	}
	sub, removed := s.sub.delete(e, shift+pmapBits, h, k)
	if !removed {
		return n, false
	}
	n = n.editable(e)
	switch {
	case sub == nil:
		if len(n.slots) == 1 {
			return nil, true
		}
		n.bitmap &^= bit
		n.slots = slices.Delete(n.slots, i, i+1)
	case len(sub.slots) == 1 && sub.slots[0].sub == nil:
		// A subtree left with one leaf collapses into this slot, so the
		// trie stays as shallow as its keys require.
		n.slots[i] = sub.slots[0]
	default:
		n.slots[i].sub = sub
	}
	return n, true
}

// each calls fn for every entry, in no particular order, until fn
// returns false. It reports whether it went through all entries.
func (m pmap[K, V, H]) each(fn func(K, V) bool) bool {
	if m.root == nil {
		return true
	}
	return m.root.each(fn)
}

func (n *pnode[K, V]) each(fn func(K, V) bool) bool {
	for i := range n.slots {
		s := &n.slots[i]
		if s.sub != nil {
			if !s.sub.each(fn) {
				return false
			}
		} else if !fn(s.key, s.val) {
			return false
		}
	}
	return true
}
