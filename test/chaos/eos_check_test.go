package chaos

import (
	"strings"
	"testing"
)

func TestCheckExactlyOnce(t *testing.T) {
	rec := func(v string, p int32, o int64) Rec { return Rec{Partition: p, Offset: o, Value: v} }
	// Input a at 0@0, b at 0@1, c at 1@0; the copy group committed past
	// all of them unless a case says otherwise.
	in := []Rec{rec("a", 0, 0), rec("b", 0, 1), rec("c", 1, 0)}
	all := map[int32]int64{0: 2, 1: 1}
	tests := []struct {
		name      string
		committed map[int32]int64
		output    []Rec
		live      []Rec
		want      []string // the kind each violation starts with, in order
	}{
		{name: "clean", committed: all,
			output: []Rec{rec("a", 0, 0), rec("b", 0, 2), rec("c", 1, 5)}, live: []Rec{rec("a", 0, 0)}},
		{name: "duplicate", committed: all,
			output: []Rec{rec("a", 0, 0), rec("a", 1, 0), rec("b", 0, 1), rec("c", 0, 2)}, want: []string{"duplicate a"}},
		{name: "missing: offset committed, copy not there", committed: all,
			output: []Rec{rec("a", 0, 0), rec("c", 0, 1)}, want: []string{"missing b (input 0@1, committed 2)"}},
		{name: "phantom", committed: all,
			output: []Rec{rec("a", 0, 0), rec("b", 0, 1), rec("c", 0, 2), rec("x", 0, 3)}, want: []string{"phantom"}},
		{name: "aborted record seen live", committed: all,
			output: []Rec{rec("a", 0, 2), rec("b", 0, 3), rec("c", 0, 4)}, live: []Rec{rec("a", 0, 0), rec("a", 0, 2)}, want: []string{"aborted visible"}},
		// The copy loops stopped before the input's last records were
		// written: nothing consumed them, no offset was committed for
		// them. Not a lost copy, but a run that checked nothing about
		// them.
		{name: "input written after the copy loops stopped", committed: map[int32]int64{0: 1, 1: 1},
			output: []Rec{rec("a", 0, 0), rec("c", 0, 1)}, want: []string{"uncopied b (input 0@1, committed 1)"}},
		{name: "no committed offset for a partition", committed: map[int32]int64{0: 2},
			output: []Rec{rec("a", 0, 0), rec("b", 0, 1)}, want: []string{"uncopied c"}},
		{name: "copy committed without its offset", committed: map[int32]int64{0: 1, 1: 1},
			output: []Rec{rec("a", 0, 0), rec("b", 0, 1), rec("c", 0, 2)}, want: []string{"copied past the committed offset: b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := CheckExactlyOnce(in, tc.committed, tc.output, tc.live)
			if len(v.Violations) != len(tc.want) {
				t.Fatalf("violations %q, want %q", v.Violations, tc.want)
			}
			for i, k := range tc.want {
				if !strings.HasPrefix(v.Violations[i], k) {
					t.Errorf("violation %d is %q, want %q", i, v.Violations[i], k)
				}
			}
		})
	}
}
