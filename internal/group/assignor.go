package group

import (
	"sort"
)

// Server-side assignors for consumer-protocol groups. Both are pure
// functions of the members' subscriptions, the topics, and (for uniform)
// the current target assignment.

// assignMember is one member as an assignor sees it.
type assignMember struct {
	id         string
	instanceID string   // "" for a dynamic member
	topics     []string // subscribed topics that exist, sorted
	current    tps      // current target, for stickiness
}

// assignTopic is one subscribed topic.
type assignTopic struct {
	name       string
	id         topicID
	partitions int32
}

type tp struct {
	id topicID
	p  int32
}

// assign runs the named assignor. members must be sorted by id; topics
// holds every topic some member subscribes to.
func assign(assignor string, members []assignMember, topics map[string]assignTopic) map[string]tps {
	if assignor == AssignorRange {
		return assignRange(members, topics)
	}
	return assignUniform(members, topics)
}

// assignUniform spreads all subscribed partitions as evenly as the
// subscriptions allow while moving as few as possible:
//
//  1. every member keeps the partitions of its current target that still
//     exist and that it still subscribes to;
//  2. the partitions nobody holds go one by one to the eligible member
//     holding the fewest (ties: lowest member id);
//  3. while some member holds two or more partitions more than another
//     member that could take one of them, one partition moves.
//
// With identical subscriptions every member ends with floor(P/M) or
// ceil(P/M) partitions. Racks are not considered.
func assignUniform(members []assignMember, topics map[string]assignTopic) map[string]tps {
	out := make(map[string]tps, len(members))
	if len(members) == 0 {
		return out
	}
	subscribed := make([]map[string]bool, len(members))
	for i, m := range members {
		subscribed[i] = make(map[string]bool, len(m.topics))
		for _, t := range m.topics {
			subscribed[i][t] = true
		}
		out[m.id] = make(tps)
	}
	names := sortedTopicNames(topics)
	byID := make(map[topicID]assignTopic, len(topics))
	for _, t := range topics {
		byID[t.id] = t
	}
	counts := make([]int, len(members))
	taken := make(map[tp]bool)

	// 1. Keep what is still valid.
	for i, m := range members {
		for _, id := range sortedTopicIDs(m.current) {
			t, ok := byID[id]
			if !ok || !subscribed[i][t.name] {
				continue
			}
			for _, p := range sortedKeys(m.current[id]) {
				k := tp{id, p}
				if p < 0 || p >= t.partitions || taken[k] {
					continue
				}
				taken[k] = true
				out[m.id].add(id, p, 0)
				counts[i]++
			}
		}
	}

	// 2. Hand out the rest.
	for _, name := range names {
		t := topics[name]
		for p := int32(0); p < t.partitions; p++ {
			if taken[tp{t.id, p}] {
				continue
			}
			best := -1
			for i := range members {
				if subscribed[i][name] && (best < 0 || counts[i] < counts[best]) {
					best = i
				}
			}
			if best < 0 {
				continue
			}
			taken[tp{t.id, p}] = true
			out[members[best].id].add(t.id, p, 0)
			counts[best]++
		}
	}

	// 3. Even out. Each move lowers the sum of squared counts, so this
	// ends; the bound only guards against mistakes.
	order := make([]int, len(members))
	for i := range order {
		order[i] = i
	}
	for iter := 0; iter < 4*len(taken)+len(members); iter++ {
		sort.SliceStable(order, func(a, b int) bool { return counts[order[a]] > counts[order[b]] })
		if !moveOne(members, out, subscribed, counts, order, byID) {
			break
		}
	}
	return out
}

// moveOne moves one partition from a fuller member to an emptier one that
// subscribes to its topic, if any pair differs by two or more.
func moveOne(members []assignMember, out map[string]tps, subscribed []map[string]bool, counts []int, order []int, byID map[topicID]assignTopic) bool {
	for fi := 0; fi < len(order); fi++ {
		from := order[fi]
		for ti := len(order) - 1; ti > fi; ti-- {
			to := order[ti]
			if counts[from]-counts[to] < 2 {
				break
			}
			held := out[members[from].id]
			for _, id := range sortedTopicIDs(held) {
				if !subscribed[to][byID[id].name] {
					continue
				}
				ps := sortedKeys(held[id])
				if len(ps) == 0 {
					continue
				}
				p := ps[len(ps)-1]
				delete(held[id], p)
				if len(held[id]) == 0 {
					delete(held, id)
				}
				out[members[to].id].add(id, p, 0)
				counts[from]--
				counts[to]++
				return true
			}
		}
	}
	return false
}

// assignRange gives each topic's subscribers contiguous partition ranges:
// with P partitions and N subscribers the first P mod N (in order) get
// ceil(P/N), the rest floor(P/N). Static members come first, ordered by
// instance id, then dynamic members by member id, so a restarted static
// member gets its old range back.
func assignRange(members []assignMember, topics map[string]assignTopic) map[string]tps {
	out := make(map[string]tps, len(members))
	ordered := append([]assignMember(nil), members...)
	sort.SliceStable(ordered, func(i, j int) bool {
		a, b := ordered[i], ordered[j]
		if (a.instanceID != "") != (b.instanceID != "") {
			return a.instanceID != ""
		}
		if a.instanceID != b.instanceID {
			return a.instanceID < b.instanceID
		}
		return a.id < b.id
	})
	for _, m := range ordered {
		out[m.id] = make(tps)
	}
	for _, name := range sortedTopicNames(topics) {
		t := topics[name]
		var subs []string
		for _, m := range ordered {
			if containsSorted(m.topics, name) {
				subs = append(subs, m.id)
			}
		}
		if len(subs) == 0 {
			continue
		}
		n := int32(len(subs))
		quota, extra := t.partitions/n, t.partitions%n
		next := int32(0)
		for i, id := range subs {
			size := quota
			if int32(i) < extra {
				size++
			}
			for p := next; p < next+size; p++ {
				out[id].add(t.id, p, 0)
			}
			next += size
		}
	}
	return out
}

func sortedTopicNames(topics map[string]assignTopic) []string {
	names := make([]string, 0, len(topics))
	for n := range topics {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func containsSorted(s []string, v string) bool {
	i := sort.SearchStrings(s, v)
	return i < len(s) && s[i] == v
}
