package chaos

import (
	"fmt"
	"sort"
)

// EOSVerdict is what CheckExactlyOnce found.
type EOSVerdict struct {
	Inputs, Outputs, LiveSeen int
	// Violations: "duplicate ...", "missing ...", "uncopied ...",
	// "copied past the committed offset ...", "phantom ...",
	// "aborted visible ...".
	Violations []string
}

// CheckExactlyOnce checks a read-process-write copy: input is every
// record of the input topic (each value unique), committed the copy
// group's committed offset of each input partition once the copy loops
// stopped, output what a read_committed reader finds in the output topic
// once every transaction ended, live what read_committed readers saw
// while the faults went on.
//
// A copy loop commits its input offsets in the transaction that writes
// the copies, so the committed offsets split the input in two. Every
// record below its partition's committed offset must be in the output
// exactly once ("missing", "duplicate"). No record at or past it may be
// there ("copied past the committed offset": copies committed without
// their offsets), and none may be left at all: such a record was never
// consumed, the loops stopped before reaching it ("uncopied"), so the
// run checked nothing about it. Nothing that is not an input may be in
// the output ("phantom"), and every record a live reader saw must be in
// the final output at the same partition and offset: a read_committed
// reader that saw a record which is not there afterwards saw an aborted
// one ("aborted visible").
func CheckExactlyOnce(input []Rec, committed map[int32]int64, output, live []Rec) EOSVerdict {
	v := EOSVerdict{Inputs: len(input), Outputs: len(output), LiveSeen: len(live)}
	want := make(map[string]bool, len(input))
	for _, in := range input {
		want[in.Value] = true
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
	var dups, missing, past, uncopied []string
	for _, in := range input {
		n := count[in.Value]
		end, ok := committed[in.Partition]
		switch {
		case !ok || in.Offset >= end:
			if n > 0 {
				past = append(past, fmt.Sprintf("%s (input %d@%d, committed %d) x%d", in.Value, in.Partition, in.Offset, end, n))
			} else {
				uncopied = append(uncopied, fmt.Sprintf("%s (input %d@%d, committed %d)", in.Value, in.Partition, in.Offset, end))
			}
		case n == 0:
			missing = append(missing, fmt.Sprintf("%s (input %d@%d, committed %d)", in.Value, in.Partition, in.Offset, end))
		case n > 1:
			dups = append(dups, fmt.Sprintf("%s x%d", in.Value, n))
		}
	}
	for _, l := range []struct {
		kind string
		list []string
	}{{"duplicate ", dups}, {"missing ", missing}, {"copied past the committed offset: ", past}, {"uncopied ", uncopied}} {
		sort.Strings(l.list)
		for _, s := range l.list {
			v.Violations = append(v.Violations, l.kind+s)
		}
	}
	for _, r := range live {
		if got, ok := at[[2]int64{int64(r.Partition), r.Offset}]; !ok || got != r.Value {
			v.Violations = append(v.Violations, fmt.Sprintf("aborted visible: %q read at %d@%d is not committed there (final: %q)", r.Value, r.Partition, r.Offset, got))
		}
	}
	return v
}
