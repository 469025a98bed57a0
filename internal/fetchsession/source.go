package fetchsession

import (
	"slices"
	"sync"
	"time"
)

// Source is the broker's partition as fetch sessions watch it, held in
// it by value (16 bytes): the marks of the sessions reading it, one per
// session, and the Wakers parked on it, under a lock of its own. A
// session entry holds a *Source (8 bytes; an interface took 16).
//
// Sessions call Watch and Unwatch with their own lock held; the broker
// calls MarkAll after anything that a fetch of the partition could see:
// an append, a high watermark or log start move, a truncation, a leader
// or epoch change, its removal. MarkAll only takes each session's leaf
// queue lock. The zero Source is ready for use; it must not be copied.
type Source struct {
	mu sync.Mutex
	w  *watchers // nil while nothing watches
}

// Waker is something other than a session parked on a Source (the
// broker's parked ShareFetches): MarkAll calls Wake, which must not
// block nor call the Source.
type Waker interface{ Wake() }

// watchers are what watch a Source, in one allocation of 32 bytes: two
// marks inline, as a partition led here is read by its followers'
// sessions, two at replication factor 3; more marks, and any Waker, in
// an overflow, let go once the marks fit inline again and no Waker is
// left.
type watchers struct {
	// s and i are the inline marks, filled from the front; a nil session
	// is a free slot. Empty while the overflow holds the marks.
	s    [2]*Session
	i    [2]int32
	more *overflow
}

type overflow struct {
	marks  []Mark // every mark, while more than two; nil otherwise
	wakers []Waker
}

// Mark is one entry of one session, as a Source holds it.
type Mark struct {
	s *Session
	i int32
}

// Mark queues the entry for the session's next read and wakes a fetch
// parked on the session. It never blocks.
func (m Mark) Mark() { m.s.mark(m.i) }

// Session is the session the mark belongs to.
func (m Mark) Session() *Session { return m.s }

// Watch adds m.
func (src *Source) Watch(m Mark) {
	src.mu.Lock()
	src.get().add(m)
	src.mu.Unlock()
}

// Unwatch removes m if held. Its slot is cleared: a mark kept there would
// keep its closed session, and all its entries, alive.
func (src *Source) Unwatch(m Mark) {
	src.mu.Lock()
	if w := src.w; w != nil {
		w.remove(m)
		src.dropIfEmpty()
	}
	src.mu.Unlock()
}

// MarkAll marks every session watching the Source and wakes its Wakers.
func (src *Source) MarkAll() {
	src.mu.Lock()
	if w := src.w; w != nil {
		if w.grown() {
			for _, m := range w.more.marks {
				m.Mark()
			}
		} else {
			for k, s := range w.s {
				if s != nil {
					s.mark(w.i[k])
				}
			}
		}
		if w.more != nil {
			for _, k := range w.more.wakers {
				k.Wake()
			}
		}
	}
	src.mu.Unlock()
}

// Marks returns a copy of the marks held.
func (src *Source) Marks() []Mark {
	src.mu.Lock()
	defer src.mu.Unlock()
	if src.w == nil {
		return nil
	}
	return src.w.marks(nil)
}

// LastUsedBy is when the follower with broker id replica last used a
// session holding the Source (zero if none does).
func (src *Source) LastUsedBy(replica int32) time.Time {
	var last time.Time
	src.mu.Lock()
	if w := src.w; w != nil {
		var buf [2]Mark
		for _, m := range w.marks(buf[:0]) {
			if s := m.Session(); s.Replica() == replica {
				if t := s.LastUsed(); t.After(last) {
					last = t
				}
			}
		}
	}
	src.mu.Unlock()
	return last
}

// AddWaker adds k; RemoveWaker removes it if held.
func (src *Source) AddWaker(k Waker) {
	src.mu.Lock()
	w := src.get()
	if w.more == nil {
		w.more = &overflow{}
	}
	w.more.wakers = append(w.more.wakers, k)
	src.mu.Unlock()
}

func (src *Source) RemoveWaker(k Waker) {
	src.mu.Lock()
	if w := src.w; w != nil && w.more != nil {
		ks := w.more.wakers
		if i := slices.Index(ks, k); i >= 0 {
			last := len(ks) - 1
			ks[i], ks[last] = ks[last], nil
			w.more.wakers = ks[:last]
		}
		if len(w.more.wakers) == 0 {
			w.more.wakers = nil
		}
		w.dropOverflow()
		src.dropIfEmpty()
	}
	src.mu.Unlock()
}

// get is the watchers, made when none. mu held.
func (src *Source) get() *watchers {
	if src.w == nil {
		src.w = &watchers{}
	}
	return src.w
}

// dropIfEmpty frees the watchers once nothing watches. mu held.
func (src *Source) dropIfEmpty() {
	if w := src.w; w != nil && w.s[0] == nil && w.more == nil {
		src.w = nil
	}
}

// grown reports whether the overflow holds the marks.
func (w *watchers) grown() bool { return w.more != nil && w.more.marks != nil }

// marks appends the marks to dst.
func (w *watchers) marks(dst []Mark) []Mark {
	if w.grown() {
		return append(dst, w.more.marks...)
	}
	for k, s := range w.s {
		if s != nil {
			dst = append(dst, Mark{s, w.i[k]})
		}
	}
	return dst
}

func (w *watchers) add(m Mark) {
	switch {
	case w.grown():
		w.more.marks = append(w.more.marks, m)
	case w.s[0] == nil:
		w.s[0], w.i[0] = m.s, m.i
	case w.s[1] == nil:
		w.s[1], w.i[1] = m.s, m.i
	default:
		// Out of inline, which keeps no copy.
		if w.more == nil {
			w.more = &overflow{}
		}
		w.more.marks = append(make([]Mark, 0, 4), Mark{w.s[0], w.i[0]}, Mark{w.s[1], w.i[1]}, m)
		w.s, w.i = [2]*Session{}, [2]int32{}
	}
}

func (w *watchers) remove(m Mark) {
	if !w.grown() {
		switch m {
		case Mark{w.s[0], w.i[0]}:
			w.s[0], w.i[0] = w.s[1], w.i[1]
			w.s[1], w.i[1] = nil, 0
		case Mark{w.s[1], w.i[1]}:
			w.s[1], w.i[1] = nil, 0
		}
		return
	}
	all := w.more.marks
	i := slices.Index(all, m)
	if i < 0 {
		return
	}
	last := len(all) - 1
	all[i] = all[last]
	all[last] = Mark{}
	w.more.marks = all[:last]
	if last <= len(w.s) {
		// Back inline: the grown array is let go.
		for k, x := range w.more.marks {
			w.s[k], w.i[k] = x.s, x.i
		}
		w.more.marks = nil
		w.dropOverflow()
	}
}

// dropOverflow lets the overflow go once it holds nothing.
func (w *watchers) dropOverflow() {
	if w.more != nil && w.more.marks == nil && w.more.wakers == nil {
		w.more = nil
	}
}
