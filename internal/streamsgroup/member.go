package streamsgroup

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MemberState is where a member is in reconciling toward its target.
type MemberState int8

const (
	// Stable: the member holds its target at the assignment epoch.
	Stable MemberState = 0
	// UnrevokedTasks: the member must first give up tasks.
	UnrevokedTasks MemberState = 1
	// UnreleasedTasks: the member waits for tasks other members hold.
	UnreleasedTasks MemberState = 2
)

func (s MemberState) String() string {
	switch s {
	case Stable:
		return "STABLE"
	case UnrevokedTasks:
		return "UNREVOKED_TASKS"
	case UnreleasedTasks:
		return "UNRELEASED_TASKS"
	}
	return "UNKNOWN"
}

// Endpoint is a member's host:port for interactive queries.
type Endpoint struct {
	Host string `json:"h"`
	Port uint16 `json:"p"`
}

// TaskOffset is a changelog offset a member reports for a task.
type TaskOffset struct {
	Subtopology string `json:"s"`
	Partition   int32  `json:"p"`
	Offset      int64  `json:"o"`
}

// Member is one Streams client (a KafkaStreams instance, not a thread)
// in the group.
type Member struct {
	ID                 string
	RackID             *string
	ClientID           string
	ClientHost         string
	RebalanceTimeoutMs int32
	TopologyEpoch      int32
	ProcessID          string
	UserEndpoint       *Endpoint
	ClientTags         map[string]string
	TaskOffsets        []TaskOffset
	TaskEndOffsets     []TaskOffset

	Epoch     int32
	PrevEpoch int32
	State     MemberState
	// Assigned is what the member may process; Pending what it is giving
	// up (still its own until its heartbeat stops listing it).
	Assigned Assignment
	Pending  Assignment
	// Target is what the assignor gave it at the group's assignment epoch.
	Target Assignment
}

func newMember(id string) *Member {
	return &Member{ID: id, Assigned: emptyAssignment(), Pending: emptyAssignment(), Target: emptyAssignment(), ClientTags: map[string]string{}}
}

// metadataEqual reports whether the fields a heartbeat may change, and
// that the assignor or Describe see, are the same.
func (m *Member) metadataEqual(o *Member) bool {
	if m.ClientID != o.ClientID || m.ClientHost != o.ClientHost || m.RebalanceTimeoutMs != o.RebalanceTimeoutMs ||
		m.TopologyEpoch != o.TopologyEpoch || m.ProcessID != o.ProcessID || !equalPtr(m.RackID, o.RackID) ||
		!equalPtr(m.UserEndpoint, o.UserEndpoint) || len(m.ClientTags) != len(o.ClientTags) {
		return false
	}
	for k, v := range m.ClientTags {
		if w, ok := o.ClientTags[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func equalPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func (m *Member) clone() *Member {
	c := *m
	c.ClientTags = make(map[string]string, len(m.ClientTags))
	for k, v := range m.ClientTags {
		c.ClientTags[k] = v
	}
	if m.UserEndpoint != nil {
		e := *m.UserEndpoint
		c.UserEndpoint = &e
	}
	return &c
}

// update applies the metadata of a heartbeat to a copy of m: fields the
// request leaves null keep their value.
func (m *Member) update(req *kmsg.StreamsGroupHeartbeatRequest, client Client) *Member {
	c := m.clone()
	c.ClientID, c.ClientHost = client.ID, client.Host
	if req.RackID != nil {
		r := *req.RackID
		c.RackID = &r
	}
	if req.RebalanceTimeoutMillis != -1 {
		c.RebalanceTimeoutMs = req.RebalanceTimeoutMillis
	}
	if req.Topology != nil {
		c.TopologyEpoch = req.Topology.Epoch
	}
	if req.ProcessID != nil {
		c.ProcessID = *req.ProcessID
	}
	if req.UserEndpoint != nil {
		c.UserEndpoint = &Endpoint{Host: req.UserEndpoint.Host, Port: req.UserEndpoint.Port}
	}
	if req.ClientTags != nil {
		c.ClientTags = make(map[string]string, len(req.ClientTags))
		for _, t := range req.ClientTags {
			c.ClientTags[t.Key] = t.Value
		}
	}
	if req.TaskOffsets != nil {
		c.TaskOffsets = taskOffsetsFromWire(req.TaskOffsets)
	}
	if req.TaskEndOffsets != nil {
		c.TaskEndOffsets = taskOffsetsFromWire(req.TaskEndOffsets)
	}
	return c
}

func taskOffsetsFromWire(ts []kmsg.TaskOffset) []TaskOffset {
	out := make([]TaskOffset, 0, len(ts))
	for _, t := range ts {
		out = append(out, TaskOffset{Subtopology: t.SubtopologyID, Partition: t.Partition, Offset: t.Offset})
	}
	return out
}

func taskOffsetsWire(ts []TaskOffset) []kmsg.TaskOffset {
	out := make([]kmsg.TaskOffset, 0, len(ts))
	for _, t := range ts {
		out = append(out, kmsg.TaskOffset{SubtopologyID: t.Subtopology, Partition: t.Partition, Offset: t.Offset})
	}
	return out
}

// owned is the assignment a heartbeat reports the member holds; nil when
// the request does not say (the three lists are null).
func ownedFromRequest(req *kmsg.StreamsGroupHeartbeatRequest) *Assignment {
	if req.ActiveTasks == nil {
		return nil
	}
	return &Assignment{Active: tasksFromWire(req.ActiveTasks), Standby: tasksFromWire(req.StandbyTasks), Warmup: tasksFromWire(req.WarmupTasks)}
}

// Reconciliation moves a member from what it holds toward its target one
// heartbeat at a time, such that no active task is ever processed by two
// members and no process holds a task both as active and as standby:
//
//   - a task leaving the member is first only revoked: it stays the
//     member's (Pending) until a heartbeat no longer lists it;
//   - an active task joining the member is handed over only once no other
//     member holds it; a standby or warmup task only once no other member
//     of the same process holds it as active. Until then the member waits
//     in UNRELEASED_TASKS;
//   - while it has tasks to revoke the member keeps its epoch; once it has
//     none, it moves to the assignment epoch.

// holders answers who holds a task as active, and whether a process
// holds it as active through another member.
type holders interface {
	activeHolder(t TaskID) string
	activeInProcess(t TaskID, process, except string) bool
}

func ownsAny(pending Assignment, owned *Assignment) bool {
	if owned == nil {
		return !pending.empty()
	}
	return len(pending.Active.intersect(owned.Active)) > 0 || len(pending.Standby.intersect(owned.Standby)) > 0 ||
		len(pending.Warmup.intersect(owned.Warmup)) > 0
}

// reconcile returns m's next Assigned, Pending, Epoch, PrevEpoch and
// State in a copy; m is not modified.
func reconcile(m *Member, targetEpoch int32, h holders, owned *Assignment) *Member {
	if m.Epoch == targetEpoch && m.State == Stable {
		return m
	}
	if m.State == UnrevokedTasks && ownsAny(m.Pending, owned) {
		return m
	}
	next := m.clone()
	next.PrevEpoch = m.Epoch
	keep := Assignment{
		Active:  m.Assigned.Active.intersect(m.Target.Active),
		Standby: m.Assigned.Standby.intersect(m.Target.Standby),
		Warmup:  m.Assigned.Warmup.intersect(m.Target.Warmup),
	}
	revoke := Assignment{
		Active:  m.Assigned.Active.minus(m.Target.Active),
		Standby: m.Assigned.Standby.minus(m.Target.Standby),
		Warmup:  m.Assigned.Warmup.minus(m.Target.Warmup),
	}
	if !revoke.empty() && ownsAny(revoke, owned) {
		next.Assigned, next.Pending = keep, revoke
		next.Epoch, next.State = m.Epoch, UnrevokedTasks
		return next
	}
	unreleased := false
	for t := range m.Target.Active.minus(keep.Active) {
		if hd := h.activeHolder(t); hd != "" && hd != m.ID {
			unreleased = true
			continue
		}
		keep.Active[t] = struct{}{}
	}
	for _, role := range []struct{ target, keep Tasks }{{m.Target.Standby, keep.Standby}, {m.Target.Warmup, keep.Warmup}} {
		for t := range role.target.minus(role.keep) {
			if h.activeInProcess(t, m.ProcessID, m.ID) {
				unreleased = true
				continue
			}
			role.keep[t] = struct{}{}
		}
	}
	next.Assigned, next.Pending = keep, emptyAssignment()
	next.Epoch, next.State = targetEpoch, Stable
	if unreleased {
		next.State = UnreleasedTasks
	}
	return next
}
