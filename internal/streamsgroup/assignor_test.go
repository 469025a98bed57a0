package streamsgroup

import (
	"fmt"
	"testing"
)

func TestAssignBalancedAndSticky(t *testing.T) {
	tasks := map[string]int32{"0": 5, "1": 3}
	stateful := map[string]bool{"0": true, "1": true}
	for _, tc := range []struct {
		name     string
		members  int
		standbys int
	}{
		{"one member", 1, 0},
		{"three members", 3, 0},
		{"more members than tasks", 10, 0},
		{"standbys", 3, 1},
		{"more standbys than processes", 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ms []assignMember
			for i := range tc.members {
				ms = append(ms, assignMember{id: fmt.Sprintf("m%d", i), process: fmt.Sprintf("p%d", i), previous: emptyAssignment()})
			}
			out := assign(ms, tasks, stateful, tc.standbys)
			checkAssignment(t, ms, out, 8, tc.standbys)

			// Run again with the answer as what members hold, plus one
			// member gone: the survivors keep every task they had that
			// fits their new quota.
			for i := range ms {
				ms[i].previous = out[ms[i].id]
			}
			if len(ms) < 2 {
				return
			}
			survivors := ms[1:]
			again := assign(survivors, tasks, stateful, tc.standbys)
			checkAssignment(t, survivors, again, 8, tc.standbys)
			quota := (8 + len(survivors) - 1) / len(survivors)
			for _, m := range survivors {
				kept := len(out[m.id].Active.intersect(again[m.id].Active))
				if kept < min(len(out[m.id].Active), quota) {
					t.Errorf("%s kept %d of its %d active tasks (quota %d)", m.id, kept, len(out[m.id].Active), quota)
				}
			}
		})
	}
}

func checkAssignment(t *testing.T, ms []assignMember, out map[string]Assignment, total, standbys int) {
	t.Helper()
	seen := make(Tasks)
	lo, hi := total, 0
	for _, m := range ms {
		a := out[m.id]
		for tk := range a.Active {
			if seen.has(tk) {
				t.Fatalf("task %v active twice", tk)
			}
			seen[tk] = struct{}{}
			if a.Standby.has(tk) {
				t.Fatalf("%s holds %v as active and standby", m.id, tk)
			}
		}
		lo, hi = min(lo, len(a.Active)), max(hi, len(a.Active))
	}
	if len(seen) != total {
		t.Fatalf("%d tasks active, want %d", len(seen), total)
	}
	if hi-lo > 1 {
		t.Fatalf("unbalanced: %d to %d active tasks", lo, hi)
	}
	replicas := min(standbys, len(ms)-1)
	for tk := range seen {
		n := 0
		for _, m := range ms {
			if out[m.id].Standby.has(tk) {
				n++
			}
		}
		if n != replicas {
			t.Fatalf("task %v has %d standbys, want %d", tk, n, replicas)
		}
	}
}

// Stateless tasks get no standbys, however many are asked for.
func TestAssignStandbysOnlyForStatefulTasks(t *testing.T) {
	ms := []assignMember{{id: "a", process: "p1", previous: emptyAssignment()}, {id: "b", process: "p2", previous: emptyAssignment()}}
	out := assign(ms, map[string]int32{"stateless": 2, "stateful": 2}, map[string]bool{"stateful": true}, 1)
	for _, m := range ms {
		for tk := range out[m.id].Standby {
			if tk.Subtopology != "stateful" {
				t.Fatalf("%s got a standby of stateless task %v", m.id, tk)
			}
		}
	}
	if n := len(out["a"].Standby) + len(out["b"].Standby); n != 2 {
		t.Fatalf("%d standbys, want one per stateful task", n)
	}
}
