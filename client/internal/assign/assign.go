package assign

import (
	"slices"
	"sort"
	"strings"
)

// Member is one group member as the leader sees it.
type Member struct {
	ID         string
	InstanceID string // empty when not static
	Topics     []string
	Owned      map[string][]int32
	Generation int32 // generation of Owned; -1 unknown
}

// Plan is member id -> topic -> partitions (ascending).
type Plan map[string]map[string][]int32

func (p Plan) add(member, topic string, part int32) {
	m := p[member]
	if m == nil {
		m = map[string][]int32{}
		p[member] = m
	}
	m[topic] = append(m[topic], part)
}

func newPlan(members []Member) Plan {
	p := Plan{}
	for _, m := range members {
		p[m.ID] = map[string][]int32{}
	}
	return p
}

// less orders members as the Java assignors do: by group instance id when
// both have one, otherwise by member id.
func less(a, b Member) bool {
	if a.InstanceID != "" && b.InstanceID != "" {
		return a.InstanceID < b.InstanceID
	}
	if a.InstanceID != "" {
		return true // static members first, as Java's MemberInfo ordering does
	}
	if b.InstanceID != "" {
		return false
	}
	return a.ID < b.ID
}

func sorted(members []Member) []Member {
	out := slices.Clone(members)
	sort.SliceStable(out, func(i, j int) bool { return less(out[i], out[j]) })
	return out
}

func subscribed(m Member, topic string) bool { return slices.Contains(m.Topics, topic) }

func topicNames(parts map[string]int32) []string {
	out := make([]string, 0, len(parts))
	for t := range parts {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Range gives each member of a topic a contiguous range: per topic, the
// subscribed members in order get n/c partitions each and the first n%c one
// extra.
func Range(members []Member, partitions map[string]int32) Plan {
	plan := newPlan(members)
	ms := sorted(members)
	for _, topic := range topicNames(partitions) {
		var subs []Member
		for _, m := range ms {
			if subscribed(m, topic) {
				subs = append(subs, m)
			}
		}
		if len(subs) == 0 {
			continue
		}
		n, c := partitions[topic], int32(len(subs))
		per, extra := n/c, n%c
		for i, m := range subs {
			i := int32(i)
			start := i*per + min(i, extra)
			length := per
			if i < extra {
				length++
			}
			for p := start; p < start+length; p++ {
				plan.add(m.ID, topic, p)
			}
		}
	}
	return plan
}

// RoundRobin deals every partition of every subscribed topic (topics by
// name, partitions ascending) to the members in circular order, skipping
// members not subscribed to the partition's topic.
func RoundRobin(members []Member, partitions map[string]int32) Plan {
	plan := newPlan(members)
	ms := sorted(members)
	if len(ms) == 0 {
		return plan
	}
	next := 0
	for _, topic := range topicNames(partitions) {
		any := false
		for _, m := range ms {
			any = any || subscribed(m, topic)
		}
		if !any {
			continue
		}
		for p := int32(0); p < partitions[topic]; p++ {
			for !subscribed(ms[next%len(ms)], topic) {
				next++
			}
			plan.add(ms[next%len(ms)].ID, topic, p)
			next++
		}
	}
	return plan
}

type tp struct {
	topic string
	part  int32
}

func tpLess(a, b tp) int {
	if c := strings.Compare(a.topic, b.topic); c != 0 {
		return c
	}
	return int(a.part - b.part)
}

// CooperativeSticky keeps valid owned partitions, balances, and holds back
// partitions that change owner (see the package documentation).
func CooperativeSticky(members []Member, partitions map[string]int32) Plan {
	ms := sorted(members)
	plan := newPlan(members)
	if len(ms) == 0 {
		return plan
	}
	// Who owns what now: the claim with the highest generation wins.
	owner := map[tp]string{}
	ownerGen := map[tp]int32{}
	for _, m := range ms {
		for topic, parts := range m.Owned {
			for _, p := range parts {
				k := tp{topic, p}
				if p < 0 || p >= partitions[topic] || !subscribed(m, topic) {
					continue
				}
				if cur, ok := ownerGen[k]; !ok || m.Generation > cur {
					owner[k], ownerGen[k] = m.ID, m.Generation
				}
			}
		}
	}
	// Partitions each member may take, and every partition someone wants.
	var all []tp
	for _, topic := range topicNames(partitions) {
		for _, m := range ms {
			if subscribed(m, topic) {
				for p := int32(0); p < partitions[topic]; p++ {
					all = append(all, tp{topic, p})
				}
				break
			}
		}
	}
	count := map[string]int{}
	assigned := map[tp]string{}
	// Quota: an even share of what the member can take, rounded up.
	quota := func(m Member) int {
		n := 0
		for _, k := range all {
			if subscribed(m, k.topic) {
				n++
			}
		}
		// Every member subscribed to one of these topics competes for
		// them; ceil(n / competitors) balances the common case of equal
		// subscriptions to within one.
		comp := 0
		for _, o := range ms {
			for _, t := range m.Topics {
				if subscribed(o, t) {
					comp++
					break
				}
			}
		}
		if comp == 0 {
			return 0
		}
		return (n + comp - 1) / comp
	}
	// 1. Keep owned partitions up to the quota (lowest partitions first).
	for _, m := range ms {
		q := quota(m)
		var mine []tp
		for k, o := range owner {
			if o == m.ID {
				mine = append(mine, k)
			}
		}
		slices.SortFunc(mine, tpLess)
		for _, k := range mine {
			if count[m.ID] >= q {
				break
			}
			assigned[k] = m.ID
			count[m.ID]++
		}
	}
	// 2. Deal the rest to the subscribed member with the fewest.
	for _, k := range all {
		if _, ok := assigned[k]; ok {
			continue
		}
		best := ""
		for _, m := range ms {
			if !subscribed(m, k.topic) {
				continue
			}
			if best == "" || count[m.ID] < count[best] {
				best = m.ID
			}
		}
		assigned[k] = best
		count[best]++
	}
	// 3. Cooperative: a partition still owned by another member is not
	// handed over in this round; its owner revokes it first.
	for _, k := range all {
		m := assigned[k]
		if o, ok := owner[k]; ok && o != m {
			continue
		}
		plan.add(m, k.topic, k.part)
	}
	return plan
}
