package assign

import (
	"fmt"
	"reflect"
	"testing"
)

func members(ids ...string) []Member {
	var out []Member
	for _, id := range ids {
		out = append(out, Member{ID: id, Topics: []string{"a", "b"}, Generation: -1})
	}
	return out
}

// The Java assignors' documented examples: two consumers C0, C1, topics t0
// and t1 with three partitions each.
func TestRangeJavaExample(t *testing.T) {
	ms := []Member{{ID: "C0", Topics: []string{"t0", "t1"}}, {ID: "C1", Topics: []string{"t0", "t1"}}}
	got := Range(ms, map[string]int32{"t0": 3, "t1": 3})
	want := Plan{"C0": {"t0": {0, 1}, "t1": {0, 1}}, "C1": {"t0": {2}, "t1": {2}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestRoundRobinJavaExample(t *testing.T) {
	ms := []Member{{ID: "C0", Topics: []string{"t0", "t1"}}, {ID: "C1", Topics: []string{"t0", "t1"}}}
	got := RoundRobin(ms, map[string]int32{"t0": 3, "t1": 3})
	want := Plan{"C0": {"t0": {0, 2}, "t1": {1}}, "C1": {"t0": {1}, "t1": {0, 2}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// Unequal subscriptions: C0 {t0}, C1 {t0,t1}, C2 {t0,t1,t2}, with 1, 2
	// and 3 partitions: the Java docs' answer.
	ms = []Member{{ID: "C0", Topics: []string{"t0"}}, {ID: "C1", Topics: []string{"t0", "t1"}}, {ID: "C2", Topics: []string{"t0", "t1", "t2"}}}
	got = RoundRobin(ms, map[string]int32{"t0": 1, "t1": 2, "t2": 3})
	want = Plan{"C0": {"t0": {0}}, "C1": {"t1": {0}}, "C2": {"t1": {1}, "t2": {0, 1, 2}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("unequal: got %v, want %v", got, want)
	}
}

func count(p Plan, m string) int {
	n := 0
	for _, ps := range p[m] {
		n += len(ps)
	}
	return n
}

func TestCooperativeStickyTwoPhases(t *testing.T) {
	parts := map[string]int32{"a": 6, "b": 6}
	// Generation 1: one member owns everything.
	first := CooperativeSticky(members("m1"), parts)
	if count(first, "m1") != 12 {
		t.Fatalf("single member got %d", count(first, "m1"))
	}
	// m2 joins: m1 keeps 6 of its partitions; the 6 that will move are
	// assigned to nobody in this round.
	ms := members("m1", "m2")
	ms[0].Owned, ms[0].Generation = first["m1"], 1
	second := CooperativeSticky(ms, parts)
	if count(second, "m1") != 6 || count(second, "m2") != 0 {
		t.Fatalf("phase 1: m1 %d m2 %d, want 6 and 0", count(second, "m1"), count(second, "m2"))
	}
	// After m1 revoked, the follow-up round gives m2 the freed six.
	ms[0].Owned, ms[0].Generation = second["m1"], 2
	third := CooperativeSticky(ms, parts)
	if count(third, "m1") != 6 || count(third, "m2") != 6 || !reflect.DeepEqual(third["m1"], second["m1"]) {
		t.Fatalf("phase 2: %v", third)
	}
}

func TestAssignorsCoverEveryPartitionOnce(t *testing.T) {
	for name, fn := range map[string]func([]Member, map[string]int32) Plan{"range": Range, "roundrobin": RoundRobin, "cooperative-sticky": CooperativeSticky} {
		for n := 1; n <= 7; n++ {
			var ids []string
			for i := 0; i < n; i++ {
				ids = append(ids, fmt.Sprintf("m%d", i))
			}
			parts := map[string]int32{"a": 5, "b": 11}
			plan := fn(members(ids...), parts)
			seen := map[string]int{}
			minC, maxC := 1<<30, 0
			for _, id := range ids {
				c := count(plan, id)
				minC, maxC = min(minC, c), max(maxC, c)
				for topic, ps := range plan[id] {
					for _, p := range ps {
						seen[fmt.Sprint(topic, p)]++
					}
				}
			}
			if len(seen) != 16 {
				t.Fatalf("%s/%d members: %d partitions assigned, want 16", name, n, len(seen))
			}
			for k, v := range seen {
				if v != 1 {
					t.Fatalf("%s: %s assigned %d times", name, k, v)
				}
			}
			if name != "range" && maxC-minC > 1 {
				t.Fatalf("%s/%d members: counts from %d to %d", name, n, minC, maxC)
			}
		}
	}
}
