package fetchsession

import (
	"slices"
	"testing"
)

// TestMarks: marks are added and removed as a set, two held inline with
// no array of their own, more in a grown array that is let go once they
// fit inline again; a removed mark's slot is cleared.
func TestMarks(t *testing.T) {
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
		{"remove missing", []int32{1}, []int32{5}, []int32{1}, true},
		{"remove all", []int32{1, 2, 3, 4, 5}, []int32{5, 1, 3, 2, 4}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ms Marks
			for _, i := range tc.add {
				ms.Add(m(i))
			}
			for _, i := range tc.remove {
				ms.Remove(m(i))
			}
			var got []int32
			for _, x := range ms.All() {
				got = append(got, x.i)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) || ms.Len() != len(tc.want) {
				t.Fatalf("marks %v (len %d), want %v", got, ms.Len(), tc.want)
			}
			if inline := ms.more == nil; inline != tc.inline {
				t.Fatalf("held inline %v, want %v", inline, tc.inline)
			}
			if ms.more != nil && ms.inline != [2]Mark{} {
				t.Fatalf("grown, inline still holds %v", ms.inline)
			}
			for _, x := range ms.All()[len(ms.All()):cap(ms.All())] {
				if x != (Mark{}) {
					t.Fatalf("a slot past the marks holds %v", x)
				}
			}
		})
	}
}
