package group

import (
	"fmt"
	"testing"
)

func assignTopics(parts ...int32) map[string]assignTopic {
	out := make(map[string]assignTopic)
	for i, p := range parts {
		name := fmt.Sprintf("t%d", i)
		out[name] = assignTopic{name: name, id: tid(byte(i + 1)), partitions: p}
	}
	return out
}

func allTopicNames(topics map[string]assignTopic) []string { return sortedTopicNames(topics) }

func membersFor(n int, topics []string, current map[string]tps) []assignMember {
	ms := make([]assignMember, n)
	for i := range ms {
		id := fmt.Sprintf("m%03d", i)
		ms[i] = assignMember{id: id, topics: topics, current: current[id]}
	}
	return ms
}

// checkAssignment verifies every partition of every topic is assigned
// exactly once, only to members subscribed to its topic; it returns the
// per-member counts.
func checkAssignment(t *testing.T, ms []assignMember, topics map[string]assignTopic, out map[string]tps) map[string]int {
	t.Helper()
	seen := make(map[tp]string)
	counts := make(map[string]int)
	for _, m := range ms {
		for id, ps := range out[m.id] {
			var name string
			for n, at := range topics {
				if at.id == id {
					name = n
				}
			}
			if !containsSorted(m.topics, name) {
				t.Fatalf("%s got %s, which it does not subscribe to", m.id, name)
			}
			for p := range ps {
				if o, dup := seen[tp{id, p}]; dup {
					t.Fatalf("%s/%d assigned to %s and %s", name, p, o, m.id)
				}
				seen[tp{id, p}] = m.id
				counts[m.id]++
			}
		}
	}
	want := 0
	for _, at := range topics {
		for p := range at.partitions {
			subscribed := false
			for _, m := range ms {
				subscribed = subscribed || containsSorted(m.topics, at.name)
			}
			if subscribed {
				want++
				if _, ok := seen[tp{at.id, p}]; !ok {
					t.Fatalf("%s/%d not assigned", at.name, p)
				}
			}
		}
	}
	if len(seen) != want {
		t.Fatalf("assigned %d partitions, want %d", len(seen), want)
	}
	return counts
}

func TestUniformBalance(t *testing.T) {
	for _, tc := range []struct {
		parts   []int32
		members int
	}{
		{[]int32{6}, 3}, {[]int32{7}, 3}, {[]int32{1}, 4}, {[]int32{3, 5, 8}, 4},
		{[]int32{100}, 7}, {[]int32{2, 2, 2, 2, 2}, 3}, {[]int32{0}, 2},
	} {
		t.Run(fmt.Sprint(tc.parts, tc.members), func(t *testing.T) {
			topics := assignTopics(tc.parts...)
			ms := membersFor(tc.members, allTopicNames(topics), nil)
			counts := checkAssignment(t, ms, topics, assignUniform(ms, topics))
			total := 0
			for _, p := range tc.parts {
				total += int(p)
			}
			lo, hi := total/tc.members, (total+tc.members-1)/tc.members
			for _, m := range ms {
				if c := counts[m.id]; c < lo || c > hi {
					t.Fatalf("%s has %d partitions, want %d..%d", m.id, c, lo, hi)
				}
			}
		})
	}
}

// TestUniformSticky: a member joining takes only its share from the
// others; a member leaving gives up only its own partitions.
func TestUniformSticky(t *testing.T) {
	topics := assignTopics(10, 14)
	names := allTopicNames(topics)
	ms := membersFor(4, names, nil)
	first := assignUniform(ms, topics)

	grown := membersFor(5, names, first)
	second := assignUniform(grown, topics)
	checkAssignment(t, grown, topics, second)
	moved := 0
	for _, m := range ms {
		for id, ps := range first[m.id] {
			for p := range ps {
				if !second[m.id].has(id, p) {
					moved++
				}
			}
		}
	}
	// 24 partitions over 5 members: the newcomer gets 4 or 5, and nothing
	// else should move.
	if got := second["m004"].count(); moved != got || got < 4 || got > 5 {
		t.Fatalf("moved %d partitions, newcomer got %d", moved, got)
	}

	shrunk := membersFor(4, names, second)
	third := assignUniform(shrunk, topics)
	checkAssignment(t, shrunk, topics, third)
	for _, m := range shrunk {
		for id, ps := range second[m.id] {
			for p := range ps {
				if !third[m.id].has(id, p) {
					t.Fatalf("%s lost %v/%d although only m004 left", m.id, id[0], p)
				}
			}
		}
	}
}

func TestUniformHeterogeneous(t *testing.T) {
	topics := assignTopics(6, 6)
	ms := []assignMember{
		{id: "a", topics: []string{"t0"}},
		{id: "b", topics: []string{"t0", "t1"}},
		{id: "c", topics: []string{"t1"}},
	}
	counts := checkAssignment(t, ms, topics, assignUniform(ms, topics))
	for _, m := range ms {
		if counts[m.id] != 4 {
			t.Fatalf("counts %v, want 4 each", counts)
		}
	}
	// A member subscribed to nothing gets nothing.
	ms = append(ms, assignMember{id: "d"})
	counts = checkAssignment(t, ms, topics, assignUniform(ms, topics))
	if counts["d"] != 0 {
		t.Fatalf("unsubscribed member got %d", counts["d"])
	}
}

func TestRangeAssignor(t *testing.T) {
	topics := assignTopics(5, 2)
	ms := []assignMember{
		{id: "z-dynamic", topics: []string{"t0", "t1"}},
		{id: "a-dynamic", topics: []string{"t0"}},
		{id: "m-static", instanceID: "inst-b", topics: []string{"t0", "t1"}},
		{id: "q-static", instanceID: "inst-a", topics: []string{"t0", "t1"}},
	}
	out := assignRange(ms, topics)
	checkAssignment(t, ms, topics, out)
	got := func(id string, topic byte) string { return fmt.Sprint(out[id].partitionLists()[tid(topic)]) }
	// t0 (5 partitions) over inst-a, inst-b, a-dynamic, z-dynamic.
	for _, c := range []struct{ id, want string }{
		{"q-static", "[0 1]"}, {"m-static", "[2]"}, {"a-dynamic", "[3]"}, {"z-dynamic", "[4]"},
	} {
		if g := got(c.id, 1); g != c.want {
			t.Fatalf("t0 of %s: %s, want %s", c.id, g, c.want)
		}
	}
	// t1 (2 partitions) over its three subscribers.
	if got("q-static", 2) != "[0]" || got("m-static", 2) != "[1]" || got("z-dynamic", 2) != "[]" {
		t.Fatalf("t1: %s %s %s", got("q-static", 2), got("m-static", 2), got("z-dynamic", 2))
	}
}

func BenchmarkAssignUniform(b *testing.B) {
	topics := assignTopics(100, 200, 300, 400)
	names := allTopicNames(topics)
	ms := membersFor(100, names, nil)
	prev := assignUniform(ms, topics)
	grown := membersFor(101, names, prev)
	b.ReportAllocs()
	for b.Loop() {
		assignUniform(grown, topics)
	}
}
