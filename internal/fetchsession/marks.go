package fetchsession

import "slices"

// Marks is the set of marks a Source holds, one per session reading it.
// Two fit inline, with no allocation of their own: a partition led here
// is read by its followers' sessions, two at replication factor 3. Not
// safe for concurrent use (the Source's lock guards it) and not to be
// copied once used.
type Marks struct {
	list   []Mark // inline[:n] while they fit, a grown array past that
	inline [2]Mark
}

// Len is the number of marks held.
func (ms *Marks) Len() int { return len(ms.list) }

// All returns the marks held; valid until the next Add or Remove.
func (ms *Marks) All() []Mark { return ms.list }

// Add adds m.
func (ms *Marks) Add(m Mark) {
	n := len(ms.list)
	switch {
	case ms.list == nil:
		ms.list = ms.inline[:0]
	case n == cap(ms.list) && n <= len(ms.inline):
		// Out of inline, which keeps no copy.
		grown := make([]Mark, n, 2*len(ms.inline))
		copy(grown, ms.list)
		clear(ms.inline[:])
		ms.list = grown
	}
	ms.list = append(ms.list, m)
}

// Remove removes m if held. The slot left past the end is cleared: a
// mark kept there would keep its closed session, and all its entries,
// alive.
func (ms *Marks) Remove(m Mark) {
	i := slices.Index(ms.list, m)
	if i < 0 {
		return
	}
	last := len(ms.list) - 1
	ms.list[i] = ms.list[last]
	ms.list[last] = Mark{}
	ms.list = ms.list[:last]
	if n := len(ms.list); n <= len(ms.inline) && cap(ms.list) > len(ms.inline) {
		// Back into inline: the grown array is let go.
		copy(ms.inline[:], ms.list)
		ms.list = ms.inline[:n]
	}
}
