package chaos

import (
	"strings"
	"testing"
)

func TestCheckExactlyOnce(t *testing.T) {
	rec := func(v string, p int32, o int64) Rec { return Rec{Partition: p, Offset: o, Value: v} }
	tests := []struct {
		name   string
		input  []string
		output []Rec
		live   []Rec
		want   []string // the kind each violation starts with, in order
	}{
		{name: "clean", input: []string{"a", "b"},
			output: []Rec{rec("a", 0, 0), rec("b", 0, 2)}, live: []Rec{rec("a", 0, 0)}},
		{name: "duplicate", input: []string{"a"},
			output: []Rec{rec("a", 0, 0), rec("a", 1, 0)}, want: []string{"duplicate"}},
		{name: "missing", input: []string{"a", "b"},
			output: []Rec{rec("a", 0, 0)}, want: []string{"missing"}},
		{name: "phantom", input: []string{"a"},
			output: []Rec{rec("a", 0, 0), rec("x", 0, 1)}, want: []string{"phantom"}},
		{name: "aborted record seen live", input: []string{"a"},
			output: []Rec{rec("a", 0, 2)}, live: []Rec{rec("a", 0, 0), rec("a", 0, 2)}, want: []string{"aborted visible"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := CheckExactlyOnce(tc.input, tc.output, tc.live)
			if len(v.Violations) != len(tc.want) {
				t.Fatalf("violations %q, want kinds %q", v.Violations, tc.want)
			}
			for i, k := range tc.want {
				if !strings.HasPrefix(v.Violations[i], k) {
					t.Errorf("violation %d is %q, want %q", i, v.Violations[i], k)
				}
			}
		})
	}
}
