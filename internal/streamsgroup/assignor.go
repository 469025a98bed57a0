package streamsgroup

import (
	"cmp"
	"slices"
)

// AssignorSticky is the name of the task assignor (Kafka's
// group.streams.assignors default, "sticky").
const AssignorSticky = "sticky"

// assignMember is one member as the assignor sees it.
type assignMember struct {
	id      string
	process string
	// previous is what the member holds now (its current assignment), so
	// tasks stay where their state is.
	previous Assignment
}

// assign computes a target assignment: every task active on exactly one
// member, balanced so that task counts differ by at most one, a task
// kept by the member that holds it when that fits the balance; then
// standbys replicas of each task on members of other processes than its
// active one, preferring members that held it before, then the least
// loaded. Only tasks of stateful subtopologies (those with a state store,
// stateful[id]) get standbys: a standby keeps a store warm and a
// stateless task has none. It is a pure function of its input: members
// are visited in id order and tasks in id order, so the same input gives
// the same answer.
//
// Warmup tasks are not produced (Kafka's sticky assignor does not
// either); members keep reporting and reconciling them.
func assign(members []assignMember, tasks map[string]int32, stateful map[string]bool, standbys int) map[string]Assignment {
	out := make(map[string]Assignment, len(members))
	if len(members) == 0 {
		return out
	}
	ms := slices.Clone(members)
	slices.SortFunc(ms, func(a, b assignMember) int { return cmp.Compare(a.id, b.id) })
	for _, m := range ms {
		out[m.id] = emptyAssignment()
	}
	var all []TaskID
	subs := make([]string, 0, len(tasks))
	for s := range tasks {
		subs = append(subs, s)
	}
	slices.Sort(subs)
	for _, s := range subs {
		for p := range tasks[s] {
			all = append(all, TaskID{s, p})
		}
	}

	// Actives: at most ceil(T/M) each, and only T%M members may have
	// that many; sticky first, then least loaded.
	n := len(all)
	floor, extra := n/len(ms), n%len(ms)
	load := make(map[string]int, len(ms))
	quotaFull := func(id string) bool {
		if load[id] < floor {
			return false
		}
		if load[id] == floor && extra > 0 {
			return false
		}
		return true
	}
	take := func(id string, t TaskID) {
		out[id].Active[t] = struct{}{}
		load[id]++
		if load[id] == floor+1 {
			extra--
		}
	}
	var rest []TaskID
	prevOwner := make(map[TaskID]string)
	for _, m := range ms {
		for t := range m.previous.Active {
			if _, ok := prevOwner[t]; !ok {
				prevOwner[t] = m.id
			}
		}
	}
	// Keep up to floor first, so a member with many old tasks does not
	// use up the ceil slots others need; then hand out the rest.
	for _, t := range all {
		if id, ok := prevOwner[t]; ok && load[id] < floor {
			take(id, t)
			continue
		}
		rest = append(rest, t)
	}
	var rest2 []TaskID
	for _, t := range rest {
		if id, ok := prevOwner[t]; ok && !quotaFull(id) {
			take(id, t)
			continue
		}
		rest2 = append(rest2, t)
	}
	for _, t := range rest2 {
		best := ""
		for _, m := range ms {
			if quotaFull(m.id) {
				continue
			}
			if best == "" || load[m.id] < load[best] {
				best = m.id
			}
		}
		take(best, t)
	}

	if standbys <= 0 {
		return out
	}
	activeProcess := make(map[TaskID]string, n)
	processOf := make(map[string]string, len(ms))
	for _, m := range ms {
		processOf[m.id] = m.process
		for t := range out[m.id].Active {
			activeProcess[t] = m.process
		}
	}
	prevStandby := make(map[TaskID][]string)
	for _, m := range ms {
		for t := range m.previous.Standby {
			prevStandby[t] = append(prevStandby[t], m.id)
		}
	}
	total := func(id string) int { return len(out[id].Active) + len(out[id].Standby) }
	for _, t := range all {
		if !stateful[t.Subtopology] {
			continue
		}
		used := map[string]bool{activeProcess[t]: true}
		for range standbys {
			best := ""
			for _, id := range prevStandby[t] {
				if !used[processOf[id]] && (best == "" || total(id) < total(best)) {
					best = id
				}
			}
			if best == "" {
				for _, m := range ms {
					if !used[m.process] && (best == "" || total(m.id) < total(best)) {
						best = m.id
					}
				}
			}
			if best == "" {
				break // fewer processes than replicas
			}
			out[best].Standby[t] = struct{}{}
			used[processOf[best]] = true
		}
	}
	return out
}
