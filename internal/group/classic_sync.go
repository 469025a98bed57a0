package group

import (
	"bytes"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Classic group: SyncGroup, Heartbeat and LeaveGroup.

// inconsistent reports a request protocol (type or name) that contradicts
// the group's; a nil request value or an unset group value never does.
func inconsistent(req *string, group string) bool {
	return req != nil && group != "" && *req != group
}

func (s *shard) syncGroup(req *kmsg.SyncGroupRequest, reply func(*kmsg.SyncGroupResponse)) {
	v := req.Version
	g := s.groups[req.Group]
	if g == nil || g.classic == nil || g.classic.state == classicEmpty {
		reply(syncError(v, kerr.UnknownMemberID.Code))
		return
	}
	cg := g.classic
	if code := cg.validateMember(req.MemberID, req.InstanceID); code != 0 {
		reply(syncError(v, code))
		return
	}
	if req.Generation != cg.generation {
		reply(syncError(v, kerr.IllegalGeneration.Code))
		return
	}
	if inconsistent(req.ProtocolType, cg.protocolType) || inconsistent(req.Protocol, cg.protocol) {
		reply(syncError(v, kerr.InconsistentGroupProtocol.Code))
		return
	}
	m := cg.members[req.MemberID]
	switch cg.state {
	case classicPreparingRebalance:
		reply(syncError(v, kerr.RebalanceInProgress.Code))
	case classicCompletingRebalance:
		if old := m.sync; old != nil {
			old.reply(syncError(old.version, kerr.RebalanceInProgress.Code))
		}
		m.sync = &syncWaiter{version: v, reply: reply}
		s.removePendingSync(g, m.id)
		if m.id == cg.leader {
			s.completeLeaderSync(g, req)
		}
	case classicStable:
		s.removePendingSync(g, m.id)
		reply(cg.syncResponse(v, m))
	}
}

// completeLeaderSync persists the leader's assignment and, once durable,
// hands every member its part and makes the group Stable.
func (s *shard) completeLeaderSync(g *group, req *kmsg.SyncGroupRequest) {
	cg := g.classic
	assignment := make(map[string][]byte, len(cg.members))
	for _, a := range req.GroupAssignment {
		assignment[a.MemberID] = bytes.Clone(a.MemberAssignment)
	}
	for id := range cg.members {
		if assignment[id] == nil {
			assignment[id] = []byte{}
		}
	}
	s.log.Info("assignment received from leader", attrGroup, g.id, attrGeneration, cg.generation, attrMember, req.MemberID)
	if err := s.append(g.id, []Record{cg.record(g.id, true, assignment)}); err != nil {
		s.stats.appendErrors.Add(1)
		s.resetAndPropagateAssignment(g, appendErrorCode(err))
		s.maybePrepareRebalanceOrCompleteJoin(g)
		return
	}
	for id, m := range cg.members {
		m.assignment = assignment[id]
	}
	s.propagateAssignment(g, 0)
	cg.transition(classicStable, s.now())
	s.log.Info("classic group stable", attrGroup, g.id, attrGeneration, cg.generation)
}

func (cg *classicGroup) syncResponse(version int16, m *classicMember) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.Version = version
	r.ProtocolType = optString(cg.protocolType)
	r.Protocol = optString(cg.protocol)
	r.MemberAssignment = m.assignment
	if r.MemberAssignment == nil {
		r.MemberAssignment = []byte{}
	}
	return r
}

func (s *shard) resetAndPropagateAssignment(g *group, code int16) {
	for _, m := range g.classic.members {
		m.assignment = []byte{}
	}
	s.propagateAssignment(g, code)
}

// propagateAssignment answers every parked SyncGroup.
func (s *shard) propagateAssignment(g *group, code int16) {
	cg := g.classic
	for _, m := range cg.sortedMembers() {
		w := m.sync
		if w == nil {
			continue
		}
		m.sync = nil
		var r *kmsg.SyncGroupResponse
		if code == 0 {
			r = cg.syncResponse(w.version, m)
		} else {
			r = syncError(w.version, code)
		}
		w.reply(r)
		// A member's session could have lapsed while it was parked; its
		// clock restarts now that it has its answer.
		s.rescheduleClassicHeartbeat(g, m)
	}
}

func (s *shard) heartbeat(req *kmsg.HeartbeatRequest) int16 {
	g := s.groups[req.Group]
	if g == nil || g.classic == nil {
		return kerr.UnknownMemberID.Code
	}
	cg := g.classic
	if code := cg.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return code
	}
	if req.Generation != cg.generation {
		return kerr.IllegalGeneration.Code
	}
	switch cg.state {
	case classicPreparingRebalance:
		s.rescheduleClassicHeartbeat(g, cg.members[req.MemberID])
		return kerr.RebalanceInProgress.Code
	case classicCompletingRebalance, classicStable:
		// Members may heartbeat between their join answer and sync.
		s.rescheduleClassicHeartbeat(g, cg.members[req.MemberID])
		return 0
	}
	return kerr.UnknownMemberID.Code
}

func (s *shard) leaveGroup(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.Version = req.Version
	members := req.Members
	if req.Version < 3 {
		members = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	g := s.groups[req.Group]
	left := 0
	for _, rm := range members {
		mr := kmsg.NewLeaveGroupResponseMember()
		mr.MemberID = rm.MemberID
		mr.InstanceID = rm.InstanceID
		if g == nil || g.classic == nil {
			mr.ErrorCode = kerr.UnknownMemberID.Code
		} else {
			mr.ErrorCode = s.leaveOne(g, rm)
		}
		if mr.ErrorCode == 0 {
			left++
		}
		resp.Members = append(resp.Members, mr)
	}
	if left > 0 {
		switch g.classic.state {
		case classicStable, classicCompletingRebalance:
			s.maybePrepareRebalanceOrCompleteJoin(g)
		case classicPreparingRebalance:
			s.maybeCompleteJoinPhase(g)
		}
	}
	if req.Version < 3 {
		resp.ErrorCode = resp.Members[0].ErrorCode
		resp.Members = nil
	}
	return resp
}

func (s *shard) leaveOne(g *group, rm kmsg.LeaveGroupRequestMember) int16 {
	cg := g.classic
	switch {
	case rm.MemberID == "":
		// Administrative removal of a static member by instance id.
		if rm.InstanceID == nil {
			return kerr.UnknownMemberID.Code
		}
		id, ok := cg.static[*rm.InstanceID]
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		s.log.Info("static member removed by LeaveGroup", attrGroup, g.id, attrMember, id)
		s.removeClassicMember(g, cg.members[id])
	default:
		if _, ok := cg.pending[rm.MemberID]; ok {
			delete(cg.pending, rm.MemberID)
			s.cancel(heartbeatKey(g.id, rm.MemberID))
			return 0
		}
		if code := cg.validateMember(rm.MemberID, rm.InstanceID); code != 0 {
			return code
		}
		s.log.Info("member left classic group", attrGroup, g.id, attrMember, rm.MemberID)
		s.removeClassicMember(g, cg.members[rm.MemberID])
	}
	return 0
}
