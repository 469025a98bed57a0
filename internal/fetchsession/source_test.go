package fetchsession

import (
	"slices"
	"testing"
	"unsafe"
)

// TestSourceMarks: marks are added and removed as a set, two held inline
// with no array of their own, more in a grown array that is let go once
// they fit inline again; a removed mark's slot is cleared, and the
// watchers themselves go once nothing watches.
func TestSourceMarks(t *testing.T) {
	s := &Session{}
	m := func(i int32) Mark { return Mark{s, i} }
	for _, tc := range []struct {
		name   string
		add    []int32
		remove []int32
		want   []int32
		inline bool
	}{
		{"none", nil, nil, nil, true},
		{"two inline", []int32{1, 2}, nil, []int32{1, 2}, true},
		{"three grow", []int32{1, 2, 3}, nil, []int32{1, 2, 3}, false},
		{"back inline", []int32{1, 2, 3}, []int32{2}, []int32{1, 3}, true},
		{"first of two", []int32{1, 2}, []int32{1}, []int32{2}, true},
		{"remove missing", []int32{1}, []int32{5}, []int32{1}, true},
		{"remove all", []int32{1, 2, 3, 4, 5}, []int32{5, 1, 3, 2, 4}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var src Source
			for _, i := range tc.add {
				src.Watch(m(i))
			}
			for _, i := range tc.remove {
				src.Unwatch(m(i))
			}
			var got []int32
			for _, x := range src.Marks() {
				got = append(got, x.i)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("marks %v, want %v", got, tc.want)
			}
			w := src.w
			if len(tc.want) == 0 {
				if w != nil {
					t.Fatalf("nothing watches, the watchers are kept: %+v", *w)
				}
				return
			}
			if inline := !w.grown(); inline != tc.inline {
				t.Fatalf("held inline %v, want %v", inline, tc.inline)
			}
			if w.grown() && (w.s != [2]*Session{} || w.i != [2]int32{}) {
				t.Fatalf("grown, inline still holds %v %v", w.s, w.i)
			}
			if !w.grown() && (w.more != nil || (len(tc.want) < 2 && w.s[1] != nil) || w.s[0] == nil) {
				t.Fatalf("inline marks %v, overflow %v: want them from the front and no overflow", w.s, w.more)
			}
			if w.grown() {
				all := w.more.marks
				for _, x := range all[len(all):cap(all)] {
					if x != (Mark{}) {
						t.Fatalf("a slot past the marks holds %v", x)
					}
				}
			}
		})
	}
}

type countWaker struct{ n int }

func (k *countWaker) Wake() { k.n++ }

// TestSourceWakers: MarkAll marks every session watching and wakes every
// Waker; a Waker's overflow goes with the last Waker while the marks fit
// inline, and stays while more marks need it.
func TestSourceWakers(t *testing.T) {
	var src Source
	a, b := newSession(1, true, testNow), newSession(2, true, testNow)
	for _, s := range []*Session{a, b} {
		s.queued = make([]uint64, 1)
	}
	k1, k2 := &countWaker{}, &countWaker{}
	src.Watch(Mark{a, 0})
	src.AddWaker(k1)
	src.AddWaker(k2)
	src.MarkAll()
	if k1.n != 1 || k2.n != 1 || !slices.Equal(a.queue, []int32{0}) {
		t.Fatalf("woken %d and %d times, session queue %v; want 1, 1, [0]", k1.n, k2.n, a.queue)
	}
	src.RemoveWaker(k1)
	src.MarkAll()
	if k1.n != 1 || k2.n != 2 {
		t.Fatalf("after removing one: woken %d and %d times, want 1 and 2", k1.n, k2.n)
	}
	src.Watch(Mark{b, 0})
	src.Watch(Mark{b, 1})
	src.RemoveWaker(k2)
	if !src.w.grown() || len(src.Marks()) != 3 {
		t.Fatalf("three marks, no Waker: grown %v, marks %v", src.w.grown(), src.Marks())
	}
	src.Unwatch(Mark{b, 1})
	if src.w.more != nil {
		t.Fatalf("two marks and no Waker keep an overflow: %+v", *src.w.more)
	}
	src.Unwatch(Mark{a, 0})
	src.Unwatch(Mark{b, 0})
	if src.w != nil {
		t.Fatal("nothing watches, the watchers are kept")
	}
	src.AddWaker(k1)
	src.RemoveWaker(k1)
	if src.w != nil {
		t.Fatal("a Waker removed left the watchers")
	}
}

// TestSourceSize: a Source is 16 bytes in the broker's partition and its
// watchers, the marks of a led partition's two followers' sessions, one
// object of the 32-byte size class.
func TestSourceSize(t *testing.T) {
	if n := unsafe.Sizeof(Source{}); n > 16 {
		t.Fatalf("Source is %d bytes, want at most 16", n)
	}
	if n := unsafe.Sizeof(watchers{}); n > 32 {
		t.Fatalf("watchers are %d bytes, want at most 32", n)
	}
}
