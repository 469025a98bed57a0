package fetchsession

import "slices"

// Marks is the set of marks a Source holds, one per session reading it.
// Two fit inline, with no allocation of their own: a partition led here
// is read by its followers' sessions, two at replication factor 3. More
// go to a grown array, let go once they fit inline again. Not safe for
// concurrent use (the Source's lock guards it).
type Marks struct {
	inline [2]Mark // filled from the front; a zero Mark is a free slot
	more   *[]Mark // all the marks, while more than inline holds
}

// Len is the number of marks held.
func (ms *Marks) Len() int { return len(ms.All()) }

// All returns the marks held; valid until the next Add or Remove.
func (ms *Marks) All() []Mark {
	if ms.more != nil {
		return *ms.more
	}
	n := 0
	for n < len(ms.inline) && ms.inline[n].s != nil {
		n++
	}
	return ms.inline[:n]
}

// Add adds m.
func (ms *Marks) Add(m Mark) {
	if ms.more != nil {
		*ms.more = append(*ms.more, m)
		return
	}
	if n := ms.Len(); n < len(ms.inline) {
		ms.inline[n] = m
		return
	}
	// Out of inline, which keeps no copy.
	grown := make([]Mark, len(ms.inline), 2*len(ms.inline))
	copy(grown, ms.inline[:])
	clear(ms.inline[:])
	grown = append(grown, m)
	ms.more = &grown
}

// Remove removes m if held. The slot it leaves is cleared: a mark kept
// there would keep its closed session, and all its entries, alive.
func (ms *Marks) Remove(m Mark) {
	all := ms.All()
	i := slices.Index(all, m)
	if i < 0 {
		return
	}
	last := len(all) - 1
	all[i] = all[last]
	all[last] = Mark{}
	if ms.more == nil {
		return
	}
	*ms.more = all[:last]
	if last <= len(ms.inline) {
		// Back into inline: the grown array is let go.
		copy(ms.inline[:], all[:last])
		ms.more = nil
	}
}
