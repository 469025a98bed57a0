package client

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestAckBatches(t *testing.T) {
	var r ackRuns
	for _, o := range []struct {
		off int64
		t   AckType
	}{{5, AckAccept}, {1, AckAccept}, {3, AckRelease}, {2, AckAccept}} {
		r.set(o.off, o.off, o.t, false)
	}
	var s []string
	for _, b := range ackBatches(r) {
		s = append(s, fmt.Sprintf("%d-%d:%v", b.FirstOffset, b.LastOffset, b.AcknowledgeTypes))
	}
	want := []string{"1-2:[1]", "3-3:[2]", "5-5:[1]"}
	if !slices.Equal(s, want) {
		t.Fatalf("batches %v, want %v", s, want)
	}
}

func TestAckRunsSet(t *testing.T) {
	runs := func(r ackRuns) string { return fmt.Sprint([]ackRun(r)) }
	tests := []struct {
		name  string
		start ackRuns
		first int64
		last  int64
		t     AckType
		keep  bool
		want  string
	}{
		{"empty", nil, 3, 5, AckAccept, false, "[{3 5 1}]"},
		{"append merges", ackRuns{{0, 2, 1}}, 3, 5, AckAccept, false, "[{0 5 1}]"},
		{"append other type", ackRuns{{0, 2, 1}}, 3, 5, AckRelease, false, "[{0 2 1} {3 5 2}]"},
		{"inside splits", ackRuns{{0, 9, 1}}, 3, 4, AckReject, false, "[{0 2 1} {3 4 3} {5 9 1}]"},
		{"inside kept", ackRuns{{0, 9, 1}}, 3, 4, AckReject, true, "[{0 9 1}]"},
		{"fills a gap", ackRuns{{0, 2, 1}, {6, 9, 1}}, 3, 5, AckAccept, false, "[{0 9 1}]"},
		{"keep fills only gaps", ackRuns{{0, 2, 2}, {6, 9, 2}}, 0, 12, AckAccept, true, "[{0 2 2} {3 5 1} {6 9 2} {10 12 1}]"},
		{"overwrites across runs", ackRuns{{0, 2, 2}, {4, 5, 3}, {8, 9, 2}}, 1, 8, AckAccept, false, "[{0 0 2} {1 8 1} {9 9 2}]"},
		{"before everything", ackRuns{{10, 12, 1}}, 1, 2, AckAccept, false, "[{1 2 1} {10 12 1}]"},
	}
	for _, tc := range tests {
		r := slices.Clone(tc.start)
		r.set(tc.first, tc.last, tc.t, tc.keep)
		if got := runs(r); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestAckRunsModel drives ackRuns and a map with the same random
// operations and compares them after each: same content, runs sorted,
// disjoint and merged.
func TestAckRunsModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var r ackRuns
		m := map[int64]AckType{}
		for step := range 60 {
			first := rng.Int64N(40)
			last := first + rng.Int64N(6)
			ty := AckType(1 + rng.IntN(3))
			switch op := rng.IntN(3); op {
			case 0, 1:
				keep := op == 1
				r.set(first, last, ty, keep)
				for o := first; o <= last; o++ {
					if _, ok := m[o]; !ok || !keep {
						m[o] = ty
					}
				}
			case 2:
				_, had := m[first]
				if got := r.remove(first); got != had {
					t.Fatalf("round %d step %d: remove(%d) = %v, want %v", round, step, first, got, had)
				}
				delete(m, first)
			}
			if r.size() != int64(len(m)) {
				t.Fatalf("round %d step %d: %d offsets, want %d (%v)", round, step, r.size(), len(m), r)
			}
			for o, want := range m {
				if got, ok := r.get(o); !ok || got != want {
					t.Fatalf("round %d step %d: offset %d = %v %v, want %v (%v)", round, step, o, got, ok, want, r)
				}
			}
			for i := 1; i < len(r); i++ {
				if r[i].first <= r[i-1].last || (r[i].first == r[i-1].last+1 && r[i].t == r[i-1].t) {
					t.Fatalf("round %d step %d: runs not sorted, disjoint and merged: %v", round, step, r)
				}
			}
		}
	}
}
