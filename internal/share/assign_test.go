package share

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// checkAssignment verifies the simple assignor's rule on one result.
func checkAssignment(t *testing.T, members []AssignMember, topics map[string]TopicInfo, got map[string]Assignment) {
	t.Helper()
	if len(got) != len(members) {
		t.Fatalf("%d members, %d assignments", len(members), len(got))
	}
	for name, info := range topics {
		var subs []string
		for _, m := range members {
			if slices.Contains(m.Topics, name) {
				subs = append(subs, m.ID)
			}
		}
		S, P := len(subs), int(info.Partitions)
		if S == 0 || P == 0 {
			for id, a := range got {
				for _, ta := range a {
					if ta.Name == name {
						t.Fatalf("%s got %s without subscribers", id, name)
					}
				}
			}
			continue
		}
		sharing := (S + P - 1) / P
		holders := make([]int, P)
		counts := map[string]int{}
		for id, a := range got {
			for _, ta := range a {
				if ta.Name != name {
					continue
				}
				if !slices.Contains(subs, id) {
					t.Fatalf("%s got %s but does not subscribe to it", id, name)
				}
				if ta.ID != info.ID {
					t.Fatalf("%s: topic id mismatch", name)
				}
				if !slices.IsSorted(ta.Partitions) || len(slices.Compact(slices.Clone(ta.Partitions))) != len(ta.Partitions) {
					t.Fatalf("%s: partitions %v not sorted and unique", id, ta.Partitions)
				}
				for _, p := range ta.Partitions {
					if p < 0 || int(p) >= P {
						t.Fatalf("%s: partition %d of %d", id, p, P)
					}
					holders[p]++
				}
				counts[id] += len(ta.Partitions)
			}
		}
		for p, n := range holders {
			if n != sharing {
				t.Fatalf("%s-%d has %d members, want %d (S=%d P=%d)", name, p, n, sharing, S, P)
			}
		}
		lo, hi := P*sharing, 0
		for _, id := range subs {
			lo, hi = min(lo, counts[id]), max(hi, counts[id])
		}
		if lo == 0 || hi-lo > 1 {
			t.Fatalf("%s: member counts from %d to %d (S=%d P=%d): %v", name, lo, hi, S, P, counts)
		}
	}
}

func TestAssignTable(t *testing.T) {
	topics := map[string]TopicInfo{"a": {ID: topicID("a", 1), Partitions: 6}, "b": {ID: topicID("b", 1), Partitions: 2}}
	lookup := func(n string) (TopicInfo, bool) { i, ok := topics[n]; return i, ok }
	got := Assign([]AssignMember{
		{ID: "m2", Topics: []string{"a", "b"}},
		{ID: "m1", Topics: []string{"a", "b"}},
		{ID: "m3", Topics: []string{"a", "b"}},
	}, lookup)
	// a: 6 partitions for 3 members, 2 each. b: 2 partitions for 3
	// members, shared 2 ways (4 slots): one member takes both; with equal
	// totals the id order decides who.
	want := map[string]Assignment{
		"m1": {{ID: topicID("a", 1), Name: "a", Partitions: []int32{0, 3}}, {ID: topicID("b", 1), Name: "b", Partitions: []int32{0, 1}}},
		"m2": {{ID: topicID("a", 1), Name: "a", Partitions: []int32{1, 4}}, {ID: topicID("b", 1), Name: "b", Partitions: []int32{1}}},
		"m3": {{ID: topicID("a", 1), Name: "a", Partitions: []int32{2, 5}}, {ID: topicID("b", 1), Name: "b", Partitions: []int32{0}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	// Nobody, nothing.
	if got := Assign(nil, lookup); len(got) != 0 {
		t.Errorf("no members: %v", got)
	}
}

func TestAssignProperties(t *testing.T) {
	for seed := range 400 {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		topics := map[string]TopicInfo{}
		var names []string
		for i := range 1 + rng.IntN(3) {
			name := fmt.Sprintf("t%d", i)
			names = append(names, name)
			topics[name] = TopicInfo{ID: topicID(name, 1), Partitions: int32(rng.IntN(9))}
		}
		lookup := func(n string) (TopicInfo, bool) { i, ok := topics[n]; return i, ok }
		var members []AssignMember
		for i := range 1 + rng.IntN(12) {
			m := AssignMember{ID: fmt.Sprintf("m%02d", i)}
			for _, n := range names {
				if rng.IntN(3) != 0 {
					m.Topics = append(m.Topics, n)
				}
			}
			members = append(members, m)
		}
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			got := Assign(members, lookup)
			checkAssignment(t, members, topics, got)

			// Order does not matter.
			shuffled := slices.Clone(members)
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			if again := Assign(shuffled, lookup); !reflect.DeepEqual(again, got) {
				t.Fatalf("member order changed the result:\n%v\n%v", got, again)
			}

			// Stable: assigning again from the result changes nothing.
			for i := range members {
				members[i].Now = got[members[i].ID]
			}
			if again := Assign(members, lookup); !reflect.DeepEqual(again, got) {
				t.Fatalf("not stable:\n%v\n%v", got, again)
			}

			// Sticky: when a member leaves and no partition is shared
			// before or after, everyone else keeps what they had.
			if len(members) > 1 {
				gone := rng.IntN(len(members))
				rest := slices.Delete(slices.Clone(members), gone, gone+1)
				after := Assign(rest, lookup)
				checkAssignment(t, rest, topics, after)
				for _, m := range rest {
					for _, ta := range m.Now {
						S := 0
						for _, o := range members {
							if slices.Contains(o.Topics, ta.Name) {
								S++
							}
						}
						if S > int(topics[ta.Name].Partitions) {
							continue // shared partitions may be reshuffled
						}
						var now []int32
						for _, na := range after[m.ID] {
							if na.Name == ta.Name {
								now = na.Partitions
							}
						}
						for _, p := range ta.Partitions {
							if !slices.Contains(now, p) {
								t.Fatalf("%s lost %s-%d when %s left: had %v, has %v", m.ID, ta.Name, p, members[gone].ID, ta.Partitions, now)
							}
						}
					}
				}
			}
		})
	}
}
