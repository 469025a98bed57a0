package chaos

import (
	"fmt"
	"sort"
)

// EOSVerdict is what CheckExactlyOnce found.
type EOSVerdict struct {
	Inputs, Outputs, LiveSeen int
	Violations                []string // "duplicate ...", "missing ...", "phantom ...", "aborted visible ..."
}

// CheckExactlyOnce checks a read-process-write copy: input is every
// record of the input topics (each value unique), output what a
// read_committed reader finds in the output topic once every transaction
// ended, live what read_committed readers saw while the faults went on.
// Every input value must be in the output exactly once ("missing",
// "duplicate"), nothing else may be there ("phantom"), and every record a
// live reader saw must be in the final output at the same partition and
// offset: a read_committed reader that saw a record which is not there
// afterwards saw an aborted one ("aborted visible").
func CheckExactlyOnce(input []string, output, live []Rec) EOSVerdict {
	v := EOSVerdict{Inputs: len(input), Outputs: len(output), LiveSeen: len(live)}
	want := make(map[string]bool, len(input))
	for _, in := range input {
		want[in] = true
	}
	count := make(map[string]int, len(output))
	at := make(map[[2]int64]string, len(output))
	for _, r := range output {
		count[r.Value]++
		at[[2]int64{int64(r.Partition), r.Offset}] = r.Value
		if !want[r.Value] {
			v.Violations = append(v.Violations, fmt.Sprintf("phantom %q at %d@%d: not an input", r.Value, r.Partition, r.Offset))
		}
	}
	dups := []string{}
	missing := []string{}
	for in := range want {
		switch n := count[in]; {
		case n == 0:
			missing = append(missing, in)
		case n > 1:
			dups = append(dups, fmt.Sprintf("%s x%d", in, n))
		}
	}
	sort.Strings(dups)
	sort.Strings(missing)
	for _, d := range dups {
		v.Violations = append(v.Violations, "duplicate "+d)
	}
	for _, m := range missing {
		v.Violations = append(v.Violations, "missing "+m)
	}
	for _, r := range live {
		if got, ok := at[[2]int64{int64(r.Partition), r.Offset}]; !ok || got != r.Value {
			v.Violations = append(v.Violations, fmt.Sprintf("aborted visible: %q read at %d@%d is not committed there (final: %q)", r.Value, r.Partition, r.Offset, got))
		}
	}
	return v
}
