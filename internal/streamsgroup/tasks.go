package streamsgroup

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TaskID names one task: a subtopology and the partition of its input
// topics it processes.
type TaskID struct {
	Subtopology string
	Partition   int32
}

func compareTasks(a, b TaskID) int {
	if c := cmp.Compare(a.Subtopology, b.Subtopology); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// Tasks is a set of tasks.
type Tasks map[TaskID]struct{}

func (t Tasks) has(id TaskID) bool {
	_, ok := t[id]
	return ok
}

func (t Tasks) clone() Tasks {
	out := make(Tasks, len(t))
	for id := range t {
		out[id] = struct{}{}
	}
	return out
}

// minus returns the tasks of t not in o.
func (t Tasks) minus(o Tasks) Tasks {
	out := make(Tasks)
	for id := range t {
		if !o.has(id) {
			out[id] = struct{}{}
		}
	}
	return out
}

// intersect returns the tasks in both t and o.
func (t Tasks) intersect(o Tasks) Tasks {
	out := make(Tasks)
	for id := range t {
		if o.has(id) {
			out[id] = struct{}{}
		}
	}
	return out
}

func (t Tasks) union(o Tasks) Tasks {
	out := t.clone()
	for id := range o {
		out[id] = struct{}{}
	}
	return out
}

func (t Tasks) equal(o Tasks) bool {
	if len(t) != len(o) {
		return false
	}
	for id := range t {
		if !o.has(id) {
			return false
		}
	}
	return true
}

// sorted returns the tasks in subtopology, then partition order.
func (t Tasks) sorted() []TaskID {
	out := make([]TaskID, 0, len(t))
	for id := range t {
		out = append(out, id)
	}
	slices.SortFunc(out, compareTasks)
	return out
}

// taskList is the wire and record shape of a task set: partitions
// grouped by subtopology, both sorted.
type taskList struct {
	Subtopology string  `json:"s"`
	Partitions  []int32 `json:"p"`
}

func (t Tasks) lists() []taskList {
	var out []taskList
	for _, id := range t.sorted() {
		if n := len(out); n > 0 && out[n-1].Subtopology == id.Subtopology {
			out[n-1].Partitions = append(out[n-1].Partitions, id.Partition)
			continue
		}
		out = append(out, taskList{Subtopology: id.Subtopology, Partitions: []int32{id.Partition}})
	}
	return out
}

func tasksFromLists(ls []taskList) Tasks {
	out := make(Tasks)
	for _, l := range ls {
		for _, p := range l.Partitions {
			out[TaskID{l.Subtopology, p}] = struct{}{}
		}
	}
	return out
}

// wire returns t as the protocol's TaskIDs, sorted; never nil, since
// the responses that carry tasks must carry an empty list rather than
// none.
func (t Tasks) wire() []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	for _, l := range t.lists() {
		out = append(out, kmsg.TaskIDs{SubtopologyID: l.Subtopology, Partitions: l.Partitions})
	}
	return out
}

// tasksFromWire returns the tasks a request lists, nil when the list is
// null (the member did not say).
func tasksFromWire(ids []kmsg.TaskIDs) Tasks {
	if ids == nil {
		return nil
	}
	out := make(Tasks)
	for _, l := range ids {
		for _, p := range l.Partitions {
			out[TaskID{l.SubtopologyID, p}] = struct{}{}
		}
	}
	return out
}

// Assignment is a member's tasks by role (Kafka's TasksTuple).
type Assignment struct {
	Active, Standby, Warmup Tasks
}

func emptyAssignment() Assignment {
	return Assignment{Active: Tasks{}, Standby: Tasks{}, Warmup: Tasks{}}
}

func (a Assignment) equal(o Assignment) bool {
	return a.Active.equal(o.Active) && a.Standby.equal(o.Standby) && a.Warmup.equal(o.Warmup)
}

func (a Assignment) empty() bool {
	return len(a.Active) == 0 && len(a.Standby) == 0 && len(a.Warmup) == 0
}

func (a Assignment) clone() Assignment {
	return Assignment{Active: a.Active.clone(), Standby: a.Standby.clone(), Warmup: a.Warmup.clone()}
}

// all returns every task of the assignment whatever its role.
func (a Assignment) all() Tasks { return a.Active.union(a.Standby).union(a.Warmup) }
