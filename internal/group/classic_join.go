package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Classic group membership: JoinGroup and the rebalance it drives.
//
// A rebalance moves the group Stable|CompletingRebalance|Empty ->
// PreparingRebalance, parks every JoinGroup until all known members have
// rejoined (or the rebalance timeout removes the ones that did not), then
// starts a new generation in CompletingRebalance and answers the parked
// joins, the leader's answer carrying every member's metadata. The leader's
// SyncGroup brings the assignment, which is persisted before the group
// turns Stable and the parked SyncGroups are answered.

func joinKey(group string) timerKey { return timerKey{kind: timerClassicJoin, group: group} }
func syncKey(group string) timerKey { return timerKey{kind: timerClassicSync, group: group} }
func heartbeatKey(group, member string) timerKey {
	return timerKey{kind: timerClassicHeartbeat, group: group, member: member}
}

// rebalanceTimeoutOf is the request's rebalance timeout; JoinGroup v0 has
// none and uses the session timeout.
func rebalanceTimeoutOf(req *kmsg.JoinGroupRequest) int32 {
	if req.Version == 0 || req.RebalanceTimeoutMillis <= 0 {
		return req.SessionTimeoutMillis
	}
	return req.RebalanceTimeoutMillis
}

func (s *shard) joinGroup(req *kmsg.JoinGroupRequest, client Client, reply func(*kmsg.JoinGroupResponse)) {
	v := req.Version
	g := s.groups[req.Group]
	if g != nil && g.streams != nil {
		if len(g.streams.Members) > 0 {
			reply(joinError(v, kerr.InconsistentGroupProtocol.Code, req.MemberID))
			return
		}
		s.dropEmptyStreamsGroup(g)
	}
	if g != nil && g.consumer != nil {
		if len(g.consumer.members) > 0 {
			// Classic members can not join a group run by the
			// consumer protocol here; see doc.go.
			reply(joinError(v, kerr.InconsistentGroupProtocol.Code, req.MemberID))
			return
		}
		s.dropEmptyConsumerGroup(g)
	}
	unknown := req.MemberID == ""
	created := false
	if g == nil {
		if !unknown {
			reply(joinError(v, kerr.UnknownMemberID.Code, req.MemberID))
			return
		}
		g = newClassicGroupEntry(req.Group)
		s.groups[req.Group] = g
		created = true
	}
	cg := g.classic
	switch {
	case !s.acceptJoiningMember(cg, req.MemberID):
		if m := cg.members[req.MemberID]; m != nil {
			s.removeClassicMember(g, m)
		}
		reply(joinError(v, kerr.GroupMaxSizeReached.Code, ""))
	case unknown:
		s.joinNewMember(g, req, client, reply)
	default:
		s.joinExistingMember(g, req, client, reply)
	}
	if created {
		// Make the new group durable even if nothing else is written
		// for it yet, as Kafka writes an empty group record.
		if err := s.append(g.id, []Record{cg.record(g.id, false, nil)}); err != nil {
			s.stats.appendErrors.Add(1)
		}
	}
}

func (s *shard) acceptJoiningMember(cg *classicGroup, memberID string) bool {
	max := s.cfg.MaxGroupSize
	switch cg.state {
	case classicPreparingRebalance:
		if m := cg.members[memberID]; m != nil && m.join != nil {
			return true
		}
		return cg.numAwaitingJoin() < max
	case classicCompletingRebalance, classicStable:
		_, ok := cg.members[memberID]
		return ok || len(cg.members) < max
	}
	return true
}

func (s *shard) joinNewMember(g *group, req *kmsg.JoinGroupRequest, client Client, reply func(*kmsg.JoinGroupResponse)) {
	cg := g.classic
	if !cg.supportsProtocols(req.ProtocolType, req.Protocols) {
		reply(joinError(req.Version, kerr.InconsistentGroupProtocol.Code, ""))
		return
	}
	id := s.classicMemberID(client.ID, req.InstanceID)
	if req.InstanceID != nil {
		if old, ok := cg.static[*req.InstanceID]; ok {
			s.replaceStaticMember(g, req, old, id, reply)
			return
		}
		s.addMemberAndRebalance(g, req, client, id, reply)
		return
	}
	if req.Version >= 4 {
		// Dynamic members of v4+ first learn their id and must come back
		// with it; until then they are pending, which holds the join
		// phase open for them for one session timeout.
		cg.pending[id] = struct{}{}
		s.schedule(heartbeatKey(g.id, id), msDur(req.SessionTimeoutMillis), func() { s.expireClassicHeartbeat(g.id, id) })
		reply(joinError(req.Version, kerr.MemberIDRequired.Code, id))
		return
	}
	s.addMemberAndRebalance(g, req, client, id, reply)
}

func (s *shard) joinExistingMember(g *group, req *kmsg.JoinGroupRequest, client Client, reply func(*kmsg.JoinGroupResponse)) {
	cg := g.classic
	id := req.MemberID
	v := req.Version
	if !cg.supportsProtocols(req.ProtocolType, req.Protocols) {
		reply(joinError(v, kerr.InconsistentGroupProtocol.Code, id))
		return
	}
	if _, ok := cg.pending[id]; ok {
		if req.InstanceID != nil {
			// Pending ids are only handed to dynamic members.
			reply(joinError(v, kerr.UnknownMemberID.Code, id))
			return
		}
		s.addMemberAndRebalance(g, req, client, id, reply)
		return
	}
	if code := cg.validateMember(id, req.InstanceID); code != 0 {
		reply(joinError(v, code, id))
		return
	}
	m := cg.members[id]
	switch cg.state {
	case classicPreparingRebalance:
		s.updateMemberAndRebalance(g, m, req, reply)
	case classicCompletingRebalance:
		if m.matches(req.Protocols) {
			// The member probably missed the join answer: repeat it.
			reply(cg.joinResponse(v, id, cg.leader == id))
			return
		}
		s.updateMemberAndRebalance(g, m, req, reply)
	case classicStable:
		if cg.leader == id || !m.matches(req.Protocols) {
			// A leader rejoins to make the group rebalance (e.g. its
			// topics' metadata changed); anyone with new metadata too.
			s.updateMemberAndRebalance(g, m, req, reply)
			return
		}
		reply(cg.joinResponse(v, id, false))
	default:
		reply(joinError(v, kerr.UnknownMemberID.Code, id))
	}
}

func (s *shard) addMemberAndRebalance(g *group, req *kmsg.JoinGroupRequest, client Client, id string, reply func(*kmsg.JoinGroupResponse)) {
	cg := g.classic
	m := &classicMember{
		id:               id,
		instanceID:       cloneString(req.InstanceID),
		clientID:         client.ID,
		clientHost:       client.Host,
		rebalanceTimeout: rebalanceTimeoutOf(req),
		sessionTimeout:   req.SessionTimeoutMillis,
		protocolType:     req.ProtocolType,
		protocols:        copyProtocols(req.Protocols),
		join:             &joinWaiter{version: req.Version, reply: reply},
		isNew:            true,
	}
	if cg.state == classicPreparingRebalance && cg.initialDelay {
		cg.newMemberAdded = true
	}
	cg.add(m)
	// A new member can not heartbeat while parked, and a client that gave
	// up and retried would leave a ghost behind; bound its wait.
	s.schedule(heartbeatKey(g.id, id), s.cfg.NewMemberJoinTimeout, func() { s.expireClassicHeartbeat(g.id, id) })
	s.log.Debug("member joins classic group", attrGroup, g.id, attrMember, id, "state", cg.state.String())
	s.maybePrepareRebalanceOrCompleteJoin(g)
}

func (s *shard) updateMemberAndRebalance(g *group, m *classicMember, req *kmsg.JoinGroupRequest, reply func(*kmsg.JoinGroupResponse)) {
	if old := m.join; old != nil {
		// A newer JoinGroup supersedes a parked one; tell the old caller
		// to rejoin rather than leave it hanging.
		old.reply(joinError(old.version, kerr.RebalanceInProgress.Code, m.id))
	}
	g.classic.updateMember(m, copyProtocols(req.Protocols), rebalanceTimeoutOf(req), req.SessionTimeoutMillis,
		&joinWaiter{version: req.Version, reply: reply})
	s.maybePrepareRebalanceOrCompleteJoin(g)
}

// replaceStaticMember handles a static member that rejoins without its
// member id (it restarted): the old id is fenced and the member continues
// under newID, keeping its assignment. In a Stable group whose protocol
// choice does not change, this needs no rebalance.
func (s *shard) replaceStaticMember(g *group, req *kmsg.JoinGroupRequest, oldID, newID string, reply func(*kmsg.JoinGroupResponse)) {
	cg := g.classic
	v := req.Version
	currentLeader := cg.leader
	instanceID := *req.InstanceID
	old := cg.members[oldID]
	fenceClassicWaiters(old)

	nm := s.swapStaticMember(g, old, newID)
	oldProtocols, oldRT, oldST := nm.protocols, nm.rebalanceTimeout, nm.sessionTimeout
	cg.updateMember(nm, copyProtocols(req.Protocols), rebalanceTimeoutOf(req), req.SessionTimeoutMillis,
		&joinWaiter{version: v, reply: reply})
	s.log.Info("static member replaced", attrGroup, g.id, "instance", instanceID, attrMember, newID, "old_member", oldID)

	switch cg.state {
	case classicStable:
		if cg.selectProtocol() != cg.protocol {
			s.maybePrepareRebalanceOrCompleteJoin(g)
			return
		}
		if err := s.append(g.id, []Record{cg.record(g.id, true, nil)}); err != nil {
			s.stats.appendErrors.Add(1)
			nm.join = nil
			cg.updateMember(nm, oldProtocols, oldRT, oldST, nil)
			s.swapStaticMember(g, nm, oldID)
			r := joinError(v, appendErrorCode(err), "")
			r.Generation = cg.generation
			r.ProtocolType = optString(cg.protocolType)
			r.Protocol = optString(cg.protocol)
			r.LeaderID = currentLeader
			reply(r)
			return
		}
		nm.join = nil
		var r *kmsg.JoinGroupResponse
		if v >= 9 {
			// The leader is told to skip the assignment and just sync.
			isLeader := cg.leader == newID
			r = cg.joinResponse(v, newID, isLeader)
			r.SkipAssignment = isLeader
		} else {
			// Older clients would recompute the assignment if they saw
			// they lead, so they are shown the previous leader id.
			r = cg.joinResponse(v, newID, false)
			r.LeaderID = currentLeader
		}
		reply(r)
	case classicCompletingRebalance:
		// The leader may already be computing an assignment for the old
		// id; start over so the new id gets one.
		s.prepareRebalance(g)
	default:
		s.maybeCompleteJoinPhase(g)
	}
}

// swapStaticMember moves a static member to a new member id, keeping its
// place, timeouts, protocols and assignment.
func (s *shard) swapStaticMember(g *group, old *classicMember, newID string) *classicMember {
	cg := g.classic
	nm := *old
	nm.id = newID
	nm.join, nm.sync = nil, nil
	delete(cg.members, old.id)
	cg.members[newID] = &nm
	cg.static[*old.instanceID] = newID
	if cg.leader == old.id {
		cg.leader = newID
	}
	if _, ok := cg.pendingSync[old.id]; ok {
		delete(cg.pendingSync, old.id)
		cg.pendingSync[newID] = struct{}{}
	}
	s.cancel(heartbeatKey(g.id, old.id))
	s.rescheduleClassicHeartbeat(g, &nm)
	return &nm
}

func fenceClassicWaiters(m *classicMember) {
	if w := m.join; w != nil {
		m.join = nil
		w.reply(joinError(w.version, kerr.FencedInstanceID.Code, m.id))
	}
	if w := m.sync; w != nil {
		m.sync = nil
		w.reply(syncError(w.version, kerr.FencedInstanceID.Code))
	}
}

func (s *shard) maybePrepareRebalanceOrCompleteJoin(g *group) {
	if g.classic.canRebalance() {
		s.prepareRebalance(g)
		return
	}
	s.maybeCompleteJoinPhase(g)
}

func (s *shard) prepareRebalance(g *group) {
	cg := g.classic
	if cg.state == classicCompletingRebalance {
		s.resetAndPropagateAssignment(g, kerr.RebalanceInProgress.Code)
	}
	s.removeSyncExpiration(g)
	initial := cg.state == classicEmpty
	if initial && s.cfg.InitialRebalanceDelay > 0 {
		delay := s.cfg.InitialRebalanceDelay
		remaining := max(cg.rebalanceTimeout()-delay, 0)
		cg.initialDelay = true
		cg.newMemberAdded = false
		s.schedule(joinKey(g.id), delay, func() { s.tryCompleteInitialRebalance(g.id, delay, remaining) })
	}
	cg.transition(classicPreparingRebalance, s.now())
	s.log.Info("preparing rebalance", attrGroup, g.id, attrGeneration, cg.generation, "members", len(cg.members))
	if !cg.initialDelay {
		s.maybeCompleteJoinElseSchedule(g)
	}
}

func (s *shard) maybeCompleteJoinElseSchedule(g *group) {
	cg := g.classic
	if cg.hasAllMembersJoined() {
		s.completeJoin(g)
		return
	}
	s.schedule(joinKey(g.id), cg.rebalanceTimeout(), func() { s.completeJoinByTimer(g.id) })
}

// tryCompleteInitialRebalance ends the initial delay, or extends it by
// another delay (within the rebalance timeout) if members kept arriving.
func (s *shard) tryCompleteInitialRebalance(id string, delay, remaining time.Duration) {
	g := s.groups[id]
	if g == nil || g.classic == nil {
		return
	}
	cg := g.classic
	if cg.newMemberAdded && remaining != 0 {
		cg.newMemberAdded = false
		next := min(s.cfg.InitialRebalanceDelay, remaining)
		left := max(remaining-delay, 0)
		s.schedule(joinKey(id), next, func() { s.tryCompleteInitialRebalance(id, next, left) })
		return
	}
	s.completeJoin(g)
}

func (s *shard) maybeCompleteJoinPhase(g *group) {
	cg := g.classic
	if cg.state != classicPreparingRebalance || cg.initialDelay || !cg.hasAllMembersJoined() {
		return
	}
	s.completeJoin(g)
}

func (s *shard) completeJoinByTimer(id string) {
	if g := s.groups[id]; g != nil && g.classic != nil && g.classic.state == classicPreparingRebalance {
		s.completeJoin(g)
	}
}

// completeJoin ends the join phase: dynamic members that did not rejoin
// are dropped, a new generation starts and the parked joins are answered.
func (s *shard) completeJoin(g *group) {
	cg := g.classic
	s.cancel(joinKey(g.id))
	cg.initialDelay = false
	cg.newMemberAdded = false
	for _, m := range cg.sortedMembers() {
		if m.join == nil && m.instanceID == nil {
			s.cancel(heartbeatKey(g.id, m.id))
			if w := m.sync; w != nil {
				m.sync = nil
				w.reply(syncError(w.version, kerr.UnknownMemberID.Code))
			}
			cg.remove(m.id)
			s.log.Info("member removed: did not rejoin in time", attrGroup, g.id, attrMember, m.id)
		}
	}
	if !cg.maybeElectNewJoinedLeader() && len(cg.members) > 0 {
		// Nobody rejoined; wait another rebalance timeout for the
		// session timeouts to clear the silent members.
		s.schedule(joinKey(g.id), cg.rebalanceTimeout(), func() { s.completeJoinByTimer(g.id) })
		return
	}
	cg.initNextGeneration(s.now())
	if cg.state == classicEmpty {
		s.log.Info("classic group is empty", attrGroup, g.id, attrGeneration, cg.generation)
		if err := s.append(g.id, []Record{cg.record(g.id, true, nil)}); err != nil {
			s.stats.appendErrors.Add(1)
		}
		return
	}
	s.stats.classicRebalances.Add(1)
	s.log.Info("classic group generation started", attrGroup, g.id, attrGeneration, cg.generation,
		"protocol", cg.protocol, "members", len(cg.members), "leader", cg.leader)
	for _, m := range cg.sortedMembers() {
		if w := m.join; w != nil {
			m.join = nil
			w.reply(cg.joinResponse(w.version, m.id, m.id == cg.leader))
		}
		s.rescheduleClassicHeartbeat(g, m)
		m.isNew = false
		cg.pendingSync[m.id] = struct{}{}
	}
	gen := cg.generation
	s.schedule(syncKey(g.id), cg.rebalanceTimeout(), func() { s.expirePendingSync(g.id, gen) })
}

func (s *shard) rescheduleClassicHeartbeat(g *group, m *classicMember) {
	id, mid := g.id, m.id
	s.schedule(heartbeatKey(id, mid), msDur(m.sessionTimeout), func() { s.expireClassicHeartbeat(id, mid) })
}

// expireClassicHeartbeat runs when a member's session (or a pending or new
// member's wait) timed out.
func (s *shard) expireClassicHeartbeat(id, memberID string) {
	g := s.groups[id]
	if g == nil || g.classic == nil {
		return
	}
	cg := g.classic
	if _, ok := cg.pending[memberID]; ok {
		delete(cg.pending, memberID)
		s.log.Info("pending member expired", attrGroup, id, attrMember, memberID)
		if cg.state == classicPreparingRebalance && !cg.initialDelay && cg.hasAllMembersJoined() {
			s.completeJoin(g)
		}
		return
	}
	m := cg.members[memberID]
	if m == nil || m.hasSatisfiedHeartbeat() {
		return
	}
	s.stats.membersExpired.Add(1)
	s.log.Info("member session expired", attrGroup, id, attrMember, memberID)
	s.removeClassicMember(g, m)
	switch cg.state {
	case classicStable, classicCompletingRebalance:
		s.maybePrepareRebalanceOrCompleteJoin(g)
	case classicPreparingRebalance:
		if !cg.initialDelay && cg.hasAllMembersJoined() {
			s.completeJoin(g)
		}
	}
}

// removeClassicMember drops a member, answering its parked requests with
// UNKNOWN_MEMBER_ID so a live client rejoins.
func (s *shard) removeClassicMember(g *group, m *classicMember) {
	s.cancel(heartbeatKey(g.id, m.id))
	if w := m.join; w != nil {
		m.join = nil
		w.reply(joinError(w.version, kerr.UnknownMemberID.Code, ""))
	}
	if w := m.sync; w != nil {
		m.sync = nil
		w.reply(syncError(w.version, kerr.UnknownMemberID.Code))
	}
	g.classic.remove(m.id)
}

// expirePendingSync removes the members that got their join answer but
// never sent SyncGroup within the rebalance timeout.
func (s *shard) expirePendingSync(id string, generation int32) {
	g := s.groups[id]
	if g == nil || g.classic == nil {
		return
	}
	cg := g.classic
	if generation != cg.generation || len(cg.pendingSync) == 0 {
		return
	}
	if cg.state != classicCompletingRebalance && cg.state != classicStable {
		return
	}
	for mid := range cg.pendingSync {
		if m := cg.members[mid]; m != nil {
			s.log.Info("member removed: no SyncGroup in time", attrGroup, id, attrMember, mid)
			s.removeClassicMember(g, m)
		}
	}
	clear(cg.pendingSync)
	s.prepareRebalance(g)
}

func (s *shard) removeSyncExpiration(g *group) {
	clear(g.classic.pendingSync)
	s.cancel(syncKey(g.id))
}

func (s *shard) removePendingSync(g *group, memberID string) {
	cg := g.classic
	delete(cg.pendingSync, memberID)
	switch cg.state {
	case classicCompletingRebalance, classicStable:
		if len(cg.pendingSync) == 0 {
			s.cancel(syncKey(g.id))
		}
	default:
		s.cancel(syncKey(g.id))
	}
}
