package group

import (
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Group administration: DescribeGroups, ListGroups, DeleteGroups and
// ConsumerGroupDescribe, each answered per shard for the groups it owns.

func (g *group) hasPendingMembers() bool {
	return g.classic != nil && len(g.classic.pending) > 0
}

func (s *shard) describeGroup(version int16, id string) kmsg.DescribeGroupsResponseGroup {
	dg := kmsg.NewDescribeGroupsResponseGroup()
	dg.Group = id
	g := s.groups[id]
	if g == nil || g.classic == nil {
		dg.State = classicDead.String()
		if version >= 6 {
			dg.ErrorCode = kerr.GroupIDNotFound.Code
			msg := fmt.Sprintf("Group %s not found.", id)
			if g != nil {
				msg = fmt.Sprintf("Group %s is not a classic group.", id)
			}
			dg.ErrorMessage = &msg
		}
		return dg
	}
	cg := g.classic
	dg.State = cg.state.String()
	dg.ProtocolType = cg.protocolType
	stable := cg.state == classicStable
	if stable {
		dg.Protocol = cg.protocol
	}
	for _, m := range cg.sortedMembers() {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID = m.id
		dm.InstanceID = m.instanceID
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		dm.ProtocolMetadata = []byte{}
		dm.MemberAssignment = []byte{}
		if stable {
			if md := m.metadata(cg.protocol); md != nil {
				dm.ProtocolMetadata = md
			}
			if m.assignment != nil {
				dm.MemberAssignment = m.assignment
			}
		}
		dg.Members = append(dg.Members, dm)
	}
	return dg
}

// listFilter is a ListGroups states/types filter, compared without case.
type listFilter struct {
	states map[string]bool
	types  map[string]bool
}

func newListFilter(req *kmsg.ListGroupsRequest) listFilter {
	var f listFilter
	if req.Version >= 4 && len(req.StatesFilter) > 0 {
		f.states = make(map[string]bool)
		for _, st := range req.StatesFilter {
			f.states[strings.ToLower(strings.TrimSpace(st))] = true
		}
	}
	if req.Version >= 5 && len(req.TypesFilter) > 0 {
		f.types = make(map[string]bool)
		for _, t := range req.TypesFilter {
			f.types[strings.ToLower(strings.TrimSpace(t))] = true
		}
	}
	return f
}

func (s *shard) listGroups(f listFilter) []kmsg.ListGroupsResponseGroup {
	var out []kmsg.ListGroupsResponseGroup
	for _, g := range s.groups {
		state := g.stateName()
		if f.states != nil && !f.states[strings.ToLower(state)] {
			continue
		}
		if f.types != nil && !f.types[g.typeName()] {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group = g.id
		lg.ProtocolType = g.protocolTypeName()
		lg.GroupState = state
		lg.GroupType = g.typeName()
		out = append(out, lg)
	}
	return out
}

func (s *shard) deleteGroup(version int16, id string) kmsg.DeleteGroupsResponseGroup {
	dg := kmsg.NewDeleteGroupsResponseGroup()
	dg.Group = id
	fail := func(code int16, msg string) kmsg.DeleteGroupsResponseGroup {
		dg.ErrorCode = code
		if version >= 3 {
			dg.ErrorMessage = &msg
		}
		return dg
	}
	g := s.groups[id]
	if g == nil {
		return fail(kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s not found.", id))
	}
	if !g.isEmpty() {
		return fail(kerr.NonEmptyGroup.Code, "The group is not empty.")
	}
	recs := make([]Record, 0, g.offsetCount()+1)
	for _, topic := range g.sortedTopics() {
		for _, p := range sortedPartitions(g.offsets[topic]) {
			recs = append(recs, offsetTombstone(id, topic, p))
		}
	}
	// Uncommitted transactional offsets go too.
	for _, np := range s.pendingOnly(g) {
		recs = append(recs, offsetTombstone(id, np.topic, np.partition))
	}
	recs = append(recs, s.groupTombstones(g)...)
	if err := s.append(id, recs); err != nil {
		s.stats.appendErrors.Add(1)
		code := appendErrorCode(err)
		return fail(code, kerr.ErrorForCode(code).Error())
	}
	s.log.Info("group deleted", attrGroup, id)
	s.removeGroup(g)
	return dg
}

// groupTombstones deletes the group's own records (not its offsets).
func (s *shard) groupTombstones(g *group) []Record {
	if g.streams != nil {
		return streamsTombstones(g)
	}
	if g.consumer != nil {
		return g.consumer.tombstones(g.id)
	}
	return []Record{encodeRecord(decodedRecord{kind: recClassicGroup, group: g.id})}
}

// removeGroup forgets a group, its timers and its uncommitted
// transactional offsets.
func (s *shard) removeGroup(g *group) {
	s.forgetPending(g)
	for k := range s.timers {
		if k.group == g.id && k.kind != timerOffsetExpiry {
			s.cancel(k)
		}
	}
	if g.classic != nil {
		g.classic.failWaiters(kerr.UnknownMemberID.Code)
	}
	delete(s.groups, g.id)
}

func (s *shard) consumerGroupDescribe(id string) kmsg.ConsumerGroupDescribeResponseGroup {
	dg := kmsg.NewConsumerGroupDescribeResponseGroup()
	dg.Group = id
	g := s.groups[id]
	if g == nil || g.consumer == nil {
		dg.ErrorCode = kerr.GroupIDNotFound.Code
		msg := fmt.Sprintf("Group %s not found.", id)
		if g != nil {
			msg = fmt.Sprintf("Group %s is not a consumer group.", id)
		}
		dg.ErrorMessage = &msg
		return dg
	}
	c := g.consumer
	dg.State = c.state().String()
	dg.Epoch = c.epoch
	dg.AssignmentEpoch = c.assignmentEpoch
	dg.AssignorName = c.preferredAssignor(s.cfg.DefaultAssignor)
	ids := make([]string, 0, len(c.members))
	for id := range c.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, mid := range ids {
		m := c.members[mid]
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID = m.id
		dm.InstanceID = m.instanceID
		dm.RackID = m.rackID
		dm.MemberEpoch = m.epoch
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		dm.SubscribedTopics = append([]string{}, m.names...)
		dm.SubscribedTopicRegex = optString(m.regex)
		dm.Assignment = s.describeAssignment(m.assigned.partitionLists())
		dm.TargetAssignment = s.describeAssignment(m.target.partitionLists())
		dm.MemberType = 1 // consumer protocol
		dg.Members = append(dg.Members, dm)
	}
	return dg
}

func (s *shard) describeAssignment(a map[topicID][]int32) kmsg.Assignment {
	var out kmsg.Assignment
	for _, id := range sortedTopicIDs(a) {
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID = id
		if ti, ok := s.cfg.Topics.TopicByID(id); ok {
			tp.Topic = ti.Name
		}
		tp.Partitions = a[id]
		out.TopicPartitions = append(out.TopicPartitions, tp)
	}
	return out
}
