package share

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// GroupConfig holds a share group's membership settings; zero fields take
// Kafka's defaults.
type GroupConfig struct {
	// HeartbeatInterval is told to members (share.heartbeat.interval.ms).
	HeartbeatInterval time.Duration
	// SessionTimeout fences a member that has not heartbeated for that
	// long (share.session.timeout.ms).
	SessionTimeout time.Duration
	// MaxSize is the most members a group takes (group.share.max.size).
	MaxSize int
}

func (c GroupConfig) withDefaults() GroupConfig {
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	if c.MaxSize <= 0 {
		c.MaxSize = DefaultMaxGroupSize
	}
	return c
}

// AssignorName is what ShareGroupDescribe reports as the assignor.
const AssignorName = "simple"

// ClientInfo is what the broker knows of a heartbeat's sender.
type ClientInfo struct {
	ClientID   string
	ClientHost string
}

// Group is the membership of one share group: member ids chosen by the
// clients, member epochs, the group epoch and the target assignment,
// driven by ShareGroupHeartbeat. Like Partition it has no lock, no clock
// and no goroutine: its owner serialises the calls and passes the time.
//
// Share groups have no revocation: a partition may be given to a new
// member while another still holds it (records are locked one by one, not
// partitions). A member therefore moves straight to its target assignment
// and the assignment epoch on its next heartbeat.
type Group struct {
	id  string
	cfg GroupConfig

	epoch           int32 // group epoch
	assignmentEpoch int32 // epoch of target
	members         map[string]*member
	target          map[string]Assignment
	// subscribed is the metadata of the subscribed topics when the epoch
	// last moved; a change bumps the epoch.
	subscribed map[string]TopicInfo
}

type member struct {
	id         string
	epoch      int32
	prevEpoch  int32
	rack       *string
	clientID   string
	clientHost string
	topics     []string // sorted, no duplicates
	assigned   Assignment
	deadline   time.Time
}

// NewGroup returns an empty share group. The broker creates one on the
// first heartbeat with member epoch 0 for an unknown group id, and answers
// GROUP_ID_NOT_FOUND to other heartbeats for an unknown group.
func NewGroup(id string, cfg GroupConfig) *Group {
	return &Group{
		id:         id,
		cfg:        cfg.withDefaults(),
		members:    make(map[string]*member),
		target:     make(map[string]Assignment),
		subscribed: make(map[string]TopicInfo),
	}
}

// ID is the group id.
func (g *Group) ID() string { return g.id }

// SetConfig changes the group's settings (group configs are dynamic). A
// new session timeout applies from each member's next heartbeat.
func (g *Group) SetConfig(cfg GroupConfig) { g.cfg = cfg.withDefaults() }

// Epoch is the group epoch.
func (g *Group) Epoch() int32 { return g.epoch }

// Empty reports whether the group has no members: AlterShareGroupOffsets
// and DeleteShareGroupOffsets need it (NON_EMPTY_GROUP otherwise).
func (g *Group) Empty() bool { return len(g.members) == 0 }

// MemberAssignment returns a copy of a member's current assignment.
func (g *Group) MemberAssignment(id string) (Assignment, bool) {
	m, ok := g.members[id]
	if !ok {
		return nil, false
	}
	out := make(Assignment, len(m.assigned))
	for i, t := range m.assigned {
		out[i] = TopicAssignment{ID: t.ID, Name: t.Name, Partitions: slices.Clone(t.Partitions)}
	}
	return out, true
}

// ValidateHeartbeat checks a ShareGroupHeartbeat as Kafka does before it
// looks the group up, so its INVALID_REQUEST comes before
// GROUP_ID_NOT_FOUND.
func ValidateHeartbeat(req *kmsg.ShareGroupHeartbeatRequest) error {
	blank := func(s string) bool { return strings.TrimSpace(s) == "" }
	switch {
	case blank(req.MemberID):
		return fmt.Errorf("MemberId can't be empty: %w", kerr.InvalidRequest)
	case blank(req.GroupID):
		return fmt.Errorf("GroupId can't be empty: %w", kerr.InvalidRequest)
	case req.RackID != nil && blank(*req.RackID):
		return fmt.Errorf("RackId can't be empty: %w", kerr.InvalidRequest)
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return fmt.Errorf("SubscribedTopicNames must be set in first request: %w", kerr.InvalidRequest)
	case req.MemberEpoch < -1:
		return fmt.Errorf("MemberEpoch is invalid: %w", kerr.InvalidRequest)
	}
	return nil
}

// errorResponse fills resp with err's code and message.
func errorResponse(resp *kmsg.ShareGroupHeartbeatResponse, err error) *kmsg.ShareGroupHeartbeatResponse {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		ke = kerr.UnknownServerError
	}
	resp.ErrorCode = ke.Code
	msg := strings.TrimSuffix(err.Error(), ": "+ke.Error())
	resp.ErrorMessage = &msg
	return resp
}

// Heartbeat handles a ShareGroupHeartbeat for this group at now: join
// (member epoch 0), heartbeat, or leave (-1). topics resolves subscribed
// topic names. After a successful leave (request epoch -1, no error) the
// broker must release what the member holds in every share partition
// (Partition.ReleaseMember).
func (g *Group) Heartbeat(req *kmsg.ShareGroupHeartbeatRequest, client ClientInfo, topics TopicLookup, now time.Time) *kmsg.ShareGroupHeartbeatResponse {
	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.Version = req.Version
	if err := ValidateHeartbeat(req); err != nil {
		return errorResponse(resp, err)
	}
	if req.MemberEpoch == -1 {
		m, ok := g.members[req.MemberID]
		if !ok {
			return errorResponse(resp, fmt.Errorf("member %s is not in share group %s: %w", req.MemberID, g.id, kerr.UnknownMemberID))
		}
		g.remove(m.id)
		id := req.MemberID
		resp.MemberID = &id
		resp.MemberEpoch = -1
		return resp
	}

	m, ok := g.members[req.MemberID]
	if !ok && len(g.members) >= g.cfg.MaxSize {
		return errorResponse(resp, fmt.Errorf("the share group has reached its maximum capacity of %d members: %w", g.cfg.MaxSize, kerr.GroupMaxSizeReached))
	}
	bump := false
	switch {
	case !ok && req.MemberEpoch != 0:
		return errorResponse(resp, fmt.Errorf("member %s is not in share group %s: %w", req.MemberID, g.id, kerr.UnknownMemberID))
	case !ok:
		m = &member{id: req.MemberID}
		g.members[m.id] = m
		bump = true
	case req.MemberEpoch > m.epoch:
		return errorResponse(resp, fmt.Errorf("the share group member has a greater member epoch (%d) than the one known by the group coordinator (%d): %w", req.MemberEpoch, m.epoch, kerr.FencedMemberEpoch))
	case req.MemberEpoch < m.epoch && req.MemberEpoch != m.prevEpoch:
		// An epoch one behind is the member not having seen our last
		// answer; anything older means it missed a whole assignment.
		return errorResponse(resp, fmt.Errorf("the share group member has a smaller member epoch (%d) than the one known by the group coordinator (%d): %w", req.MemberEpoch, m.epoch, kerr.FencedMemberEpoch))
	}

	if req.RackID != nil {
		rack := *req.RackID
		m.rack = &rack
	}
	m.clientID, m.clientHost = client.ClientID, client.ClientHost
	if req.SubscribedTopicNames != nil {
		subs := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(subs)
		subs = slices.Compact(subs)
		if !slices.Equal(subs, m.topics) {
			m.topics = subs
			bump = true
		}
	}
	if meta := g.subscriptionMetadata(topics); !maps.Equal(meta, g.subscribed) {
		g.subscribed = meta
		bump = true
	}
	if bump {
		g.epoch++
	}
	if g.epoch > g.assignmentEpoch {
		g.computeTarget(topics)
	}

	old := m.assigned
	if m.epoch != g.assignmentEpoch {
		m.prevEpoch, m.epoch = m.epoch, g.assignmentEpoch
		m.assigned = g.target[m.id]
	}
	m.deadline = now.Add(g.cfg.SessionTimeout)

	id := m.id
	resp.MemberID = &id
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(g.cfg.HeartbeatInterval / time.Millisecond)
	if req.MemberEpoch == 0 || !old.Equal(m.assigned) {
		resp.Assignment = assignmentResponse(m.assigned)
	}
	return resp
}

// subscriptionMetadata resolves the topics any member subscribes to.
func (g *Group) subscriptionMetadata(topics TopicLookup) map[string]TopicInfo {
	meta := make(map[string]TopicInfo)
	for _, m := range g.members {
		for _, name := range m.topics {
			if _, done := meta[name]; done {
				continue
			}
			if info, ok := topics(name); ok {
				meta[name] = info
			}
		}
	}
	return meta
}

// computeTarget recomputes the target assignment for the group epoch.
func (g *Group) computeTarget(topics TopicLookup) {
	in := make([]AssignMember, 0, len(g.members))
	for _, m := range g.members {
		in = append(in, AssignMember{ID: m.id, Topics: m.topics, Now: g.target[m.id]})
	}
	g.target = Assign(in, topics)
	g.assignmentEpoch = g.epoch
}

// remove takes a member out (leave or fencing) and bumps the group epoch
// once, as Kafka does, with the subscription metadata of the members left;
// the target is recomputed on the next heartbeat.
func (g *Group) remove(id string) {
	delete(g.members, id)
	delete(g.target, id)
	maps.DeleteFunc(g.subscribed, func(name string, _ TopicInfo) bool {
		for _, m := range g.members {
			if slices.Contains(m.topics, name) {
				return false
			}
		}
		return true
	})
	g.epoch++
}

func assignmentResponse(a Assignment) *kmsg.ShareGroupHeartbeatResponseAssignment {
	out := new(kmsg.ShareGroupHeartbeatResponseAssignment)
	out.Default()
	out.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
	for _, t := range a {
		tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
		tp.TopicID = t.ID
		tp.Partitions = slices.Clone(t.Partitions)
		out.TopicPartitions = append(out.TopicPartitions, tp)
	}
	return out
}

// Expire fences the members whose session timed out by now and returns
// their ids, sorted. The broker must release what they hold in every share
// partition (Partition.ReleaseMember).
func (g *Group) Expire(now time.Time) []string {
	var fenced []string
	for id, m := range g.members {
		if !m.deadline.After(now) {
			fenced = append(fenced, id)
		}
	}
	slices.Sort(fenced)
	for _, id := range fenced {
		g.remove(id)
	}
	return fenced
}

// NextDeadline is the earliest session deadline, if the group has members:
// the owner should call Expire then.
func (g *Group) NextDeadline() (time.Time, bool) {
	var min time.Time
	for _, m := range g.members {
		if min.IsZero() || m.deadline.Before(min) {
			min = m.deadline
		}
	}
	return min, !min.IsZero()
}

// Describe returns the group as ShareGroupDescribe reports it. The broker
// fills AuthorizedOperations.
func (g *Group) Describe() kmsg.ShareGroupDescribeResponseGroup {
	d := kmsg.NewShareGroupDescribeResponseGroup()
	d.GroupID = g.id
	d.GroupState = "Stable"
	if len(g.members) == 0 {
		d.GroupState = "Empty"
	}
	d.GroupEpoch = g.epoch
	d.AssignmentEpoch = g.assignmentEpoch
	d.Assignor = AssignorName
	ids := slices.Sorted(maps.Keys(g.members))
	for _, id := range ids {
		m := g.members[id]
		dm := kmsg.NewShareGroupDescribeResponseGroupMember()
		dm.MemberID = m.id
		if m.rack != nil {
			rack := *m.rack
			dm.RackID = &rack
		}
		dm.MemberEpoch = m.epoch
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		dm.SubscribedTopicNames = slices.Clone(m.topics)
		for _, t := range m.assigned {
			tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
			tp.TopicID = t.ID
			tp.Topic = t.Name
			tp.Partitions = slices.Clone(t.Partitions)
			dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, tp)
		}
		d.Members = append(d.Members, dm)
	}
	return d
}
