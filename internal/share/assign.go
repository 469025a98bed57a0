package share

import (
	"cmp"
	"fmt"
	"slices"
)

// TopicInfo is what assignment needs of a topic.
type TopicInfo struct {
	ID         [16]byte
	Partitions int32
}

// TopicLookup answers for a topic name from the broker's metadata; false
// when the topic does not exist.
type TopicLookup func(name string) (TopicInfo, bool)

// TopicAssignment is one topic's partitions in a member's assignment.
type TopicAssignment struct {
	ID         [16]byte
	Name       string
	Partitions []int32 // ascending
}

// Assignment is a member's partitions, by topic name.
type Assignment []TopicAssignment

// Equal reports whether a and b assign the same partitions.
func (a Assignment) Equal(b Assignment) bool {
	return slices.EqualFunc(a, b, func(x, y TopicAssignment) bool {
		return x.ID == y.ID && x.Name == y.Name && slices.Equal(x.Partitions, y.Partitions)
	})
}

// Count is the number of partitions in a.
func (a Assignment) Count() int {
	n := 0
	for _, t := range a {
		n += len(t.Partitions)
	}
	return n
}

// AssignMember is one member's input to Assign.
type AssignMember struct {
	ID     string
	Topics []string   // subscribed topic names
	Now    Assignment // current target, kept where the rules allow
}

// Assign computes the target assignment of a share group with Kafka's
// "simple" share assignor rule (KIP-932). For each topic, with S members
// subscribed to it and P partitions:
//
//   - every partition is assigned to ceil(S/P) members: with no more
//     members than partitions each partition has exactly one member, with
//     more members than partitions the partitions are shared;
//   - the ceil(S/P)*P slots are spread so that the members' counts in the
//     topic differ by at most one, which gives every member at least one
//     partition;
//   - the current assignment is kept wherever that balance allows
//     (balance first, stickiness second).
//
// Topics are balanced one at a time, as Kafka's heterogeneous builder
// does; the member who gets a topic's extra partition is the one with the
// fewest partitions of the topics before it, so that members subscribed to
// the same topics stay balanced overall. Unknown topics and topics without
// partitions are ignored. Every member gets an entry, maybe empty. The
// result does not depend on the order of members.
func Assign(members []AssignMember, topics TopicLookup) map[string]Assignment {
	ms := slices.Clone(members)
	slices.SortFunc(ms, func(a, b AssignMember) int { return cmp.Compare(a.ID, b.ID) })
	out := make(map[string]Assignment, len(ms))
	total := make(map[string]int, len(ms))
	var names []string
	for _, m := range ms {
		out[m.ID] = nil
		names = append(names, m.Topics...)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	for _, name := range names {
		info, ok := topics(name)
		if !ok || info.Partitions <= 0 {
			continue
		}
		var subs []*AssignMember
		for i := range ms {
			if slices.Contains(ms[i].Topics, name) {
				subs = append(subs, &ms[i])
			}
		}
		got := assignTopic(name, info, subs, total)
		for i, m := range subs {
			if len(got[i]) == 0 {
				continue
			}
			out[m.ID] = append(out[m.ID], TopicAssignment{ID: info.ID, Name: name, Partitions: got[i]})
			total[m.ID] += len(got[i])
		}
	}
	return out
}

// assignTopic assigns one topic's partitions to its subscribers (sorted by
// id) and returns each one's partitions, ascending.
func assignTopic(name string, info TopicInfo, subs []*AssignMember, total map[string]int) [][]int32 {
	P, S := int(info.Partitions), len(subs)
	sharing := (S + P - 1) / P
	slots := sharing * P

	// What each subscriber holds of this topic now (the same topic: a
	// re-created topic has a new id).
	cur := make([][]int32, S)
	for i, m := range subs {
		for _, ta := range m.Now {
			if ta.Name != name || ta.ID != info.ID {
				continue
			}
			for _, p := range ta.Partitions {
				if p >= 0 && int(p) < P {
					cur[i] = append(cur[i], p)
				}
			}
		}
		slices.Sort(cur[i])
		cur[i] = slices.Compact(cur[i])
	}

	// Each subscriber takes base = slots/S partitions, and extra of them
	// one more. Who gets the extras is decided as partitions are handed
	// out, so that a partition short of members can always be given.
	base, extra := slots/S, slots%S
	holders := make([][]int, P)
	got := make([][]int32, S)
	roomFor := func(i int) bool { return len(got[i]) < base || (len(got[i]) == base && extra > 0) }
	give := func(i, p int) {
		if len(got[i]) == base {
			extra--
		}
		holders[p] = append(holders[p], i)
		got[i] = append(got[i], int32(p))
	}
	take := func(i, p int) {
		got[i] = slices.DeleteFunc(got[i], func(q int32) bool { return int(q) == p })
		holders[p] = slices.DeleteFunc(holders[p], func(j int) bool { return j == i })
		if len(got[i]) == base {
			extra++
		}
	}

	// Keep what the rules allow: those with the fewest partitions so far
	// first (balance across topics), then those holding the most of this
	// topic (they need the extras to keep theirs).
	order := make([]int, S)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := cmp.Compare(total[subs[a].ID], total[subs[b].ID]); c != 0 {
			return c
		}
		return cmp.Compare(len(cur[b]), len(cur[a]))
	})
	for _, i := range order {
		for _, p := range cur[i] {
			if roomFor(i) && len(holders[p]) < sharing {
				give(i, int(p))
			}
		}
	}

	// Fill the partitions short of members, the shortest first, each from
	// the member with the fewest partitions of this topic, then overall.
	for {
		p := -1
		for q := range P {
			if len(holders[q]) < sharing && (p < 0 || len(holders[q]) < len(holders[p])) {
				p = q
			}
		}
		if p < 0 {
			break
		}
		best := -1
		for i := range subs {
			if !roomFor(i) || slices.Contains(holders[p], i) {
				continue
			}
			if best < 0 || len(got[i]) < len(got[best]) ||
				(len(got[i]) == len(got[best]) && total[subs[i].ID] < total[subs[best].ID]) {
				best = i
			}
		}
		if best >= 0 {
			give(best, p)
			continue
		}
		// Everyone without p is full, and whoever has room holds p. Some
		// full member x then holds a partition q that a member y with room
		// lacks (else y would hold more than x and have no room): y takes
		// q over, and x takes p.
		if !swapFor(p, S, holders, got, roomFor, give, take) {
			panic(fmt.Sprintf("share: no assignment for partition %d of %s (%d members, %d partitions)", p, name, S, P))
		}
	}
	for i := range got {
		slices.Sort(got[i])
	}
	return got
}

// swapFor makes room for partition p as assignTopic explains, and reports
// whether it found the two members.
func swapFor(p, S int, holders [][]int, got [][]int32, roomFor func(int) bool, give, take func(i, p int)) bool {
	for y := range S {
		if !roomFor(y) {
			continue
		}
		for x := range S {
			if slices.Contains(holders[p], x) {
				continue
			}
			for _, q := range got[x] {
				if !slices.Contains(holders[q], y) {
					take(x, int(q))
					give(y, int(q))
					give(x, p)
					return true
				}
			}
		}
	}
	return false
}
