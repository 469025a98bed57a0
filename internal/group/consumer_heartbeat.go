package group

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerGroupHeartbeat (KIP-848): join with epoch 0, heartbeat with the
// current epoch, leave with -1 (or -2 for a static member that will come
// back).

func sessionKey(group, member string) timerKey {
	return timerKey{kind: timerConsumerSession, group: group, member: member}
}

func revokeKey(group, member string) timerKey {
	return timerKey{kind: timerConsumerRebalance, group: group, member: member}
}

func heartbeatError(version, code int16, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
	r := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	r.Version = version
	r.ErrorCode = code
	if msg != "" {
		r.ErrorMessage = &msg
	}
	return r
}

// validateConsumerHeartbeat checks what can be checked without the group,
// with Kafka's error messages.
func validateConsumerHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) (int16, string) {
	blank := func(s *string) bool { return s != nil && strings.TrimSpace(*s) == "" }
	if req.Version >= 1 || req.MemberEpoch > 0 || req.MemberEpoch == -1 {
		if strings.TrimSpace(req.MemberID) == "" {
			return kerr.InvalidRequest.Code, "MemberId can't be empty."
		}
	}
	switch {
	case strings.TrimSpace(req.Group) == "":
		return kerr.InvalidRequest.Code, "GroupId can't be empty."
	case blank(req.InstanceID):
		return kerr.InvalidRequest.Code, "InstanceId can't be empty."
	case blank(req.RackID):
		return kerr.InvalidRequest.Code, "RackId can't be empty."
	}
	switch {
	case req.MemberEpoch == 0:
		if req.RebalanceTimeoutMillis == -1 {
			return kerr.InvalidRequest.Code, "RebalanceTimeoutMs must be provided in first request."
		}
		if req.Topics == nil || len(req.Topics) > 0 {
			return kerr.InvalidRequest.Code, "TopicPartitions must be empty when (re-)joining."
		}
		if req.SubscribedTopicNames == nil && (req.Version < 1 || req.SubscribedTopicRegex == nil) {
			return kerr.InvalidRequest.Code, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."
		}
	case req.MemberEpoch == leftStaticEpoch:
		if req.InstanceID == nil {
			return kerr.InvalidRequest.Code, "InstanceId can't be null."
		}
	case req.MemberEpoch < leftStaticEpoch:
		return kerr.InvalidRequest.Code, "MemberEpoch is invalid."
	}
	if req.ServerAssignor != nil && !validAssignor(*req.ServerAssignor) {
		return kerr.UnsupportedAssignor.Code, fmt.Sprintf("ServerAssignor %s is not supported. Supported assignors: %s, %s.",
			*req.ServerAssignor, AssignorUniform, AssignorRange)
	}
	return 0, ""
}

// epochCheck validates the epoch a member sent. A member may lag one epoch
// if what it owns is within its assignment (the answer that moved it may
// have been lost). Epoch 0 is a rejoin and always allowed.
func epochCheck(m *consumerMember, received int32, owned tps) int16 {
	switch {
	case received == 0:
		return 0
	case received > m.epoch:
		return kerr.FencedMemberEpoch.Code
	case received < m.epoch:
		if received != m.prevEpoch || owned == nil || !isSubset(owned, m.assigned) {
			return kerr.FencedMemberEpoch.Code
		}
	}
	return 0
}

func isSubset(a, b tps) bool {
	for id, ps := range a {
		for p := range ps {
			if !b.has(id, p) {
				return false
			}
		}
	}
	return true
}

func equalStringPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func sortedUnique(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return slices.Compact(out)
}

func (s *shard) consumerHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, client Client) *kmsg.ConsumerGroupHeartbeatResponse {
	v := req.Version
	if req.MemberEpoch < 0 {
		return s.consumerLeave(req)
	}
	join := req.MemberEpoch == 0
	g := s.groups[req.Group]
	convert := false
	switch {
	case g == nil:
		if !join {
			return heartbeatError(v, kerr.GroupIDNotFound.Code, fmt.Sprintf("Consumer group %s not found.", req.Group))
		}
		g = &group{id: req.Group, consumer: newConsumerGroup(), offsets: make(map[string]map[int32]*offsetValue)}
	case g.consumer == nil:
		if !join || !g.isEmpty() || g.hasPendingMembers() {
			// Live classic groups are not migrated; see doc.go.
			return heartbeatError(v, kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s is not a consumer group.", req.Group))
		}
		convert = true
	}
	c := g.consumer
	if c == nil {
		c = newConsumerGroup()
	}

	memberID := req.MemberID
	if len(c.members) >= s.cfg.MaxGroupSize && (memberID == "" || c.members[memberID] == nil) {
		return heartbeatError(v, kerr.GroupMaxSizeReached.Code,
			fmt.Sprintf("The consumer group has reached its maximum capacity of %d members.", s.cfg.MaxGroupSize))
	}
	if memberID == "" {
		memberID = s.consumerMemberID()
	}
	owned := ownedSet(req.Topics)

	// Find the member, or make it.
	// isNew marks a member the group has not seen before (its arrival
	// bumps the epoch); a static member taking over its old place is not
	// new.
	var m, replaced *consumerMember
	isNew := false
	if req.InstanceID == nil {
		m = c.members[memberID]
		switch {
		case m == nil && !join:
			return heartbeatError(v, kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", memberID, req.Group))
		case m == nil:
			m, isNew = newConsumerMember(memberID), true
		default:
			if code := epochCheck(m, req.MemberEpoch, owned); code != 0 {
				return heartbeatError(v, code, "The consumer group member has a different member epoch than the one known by the group coordinator. The member must abandon all its partitions and rejoin.")
			}
		}
	} else {
		var existing *consumerMember
		if id, ok := c.static[*req.InstanceID]; ok {
			existing = c.members[id]
		}
		switch {
		case join && existing == nil:
			if m = c.members[memberID]; m == nil {
				m, isNew = newConsumerMember(memberID), true
			}
		case join && existing.id == memberID:
			m = existing
		case join:
			if existing.epoch != leftStaticEpoch {
				return heartbeatError(v, kerr.UnreleasedInstanceID.Code, fmt.Sprintf(
					"Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.",
					memberID, *req.InstanceID, existing.id))
			}
			// The static member is back under a new member id: it takes
			// over the old member's assignment, at epoch 0.
			nm := *existing
			nm.id = memberID
			nm.epoch, nm.prevEpoch = 0, 0
			m, replaced = &nm, existing
		case existing == nil:
			return heartbeatError(v, kerr.UnknownMemberID.Code, fmt.Sprintf("Instance id %s is unknown.", *req.InstanceID))
		case existing.id != memberID:
			return heartbeatError(v, kerr.FencedInstanceID.Code, fmt.Sprintf(
				"Static member %s with instance id %s was fenced by member %s.", memberID, *req.InstanceID, existing.id))
		default:
			if code := epochCheck(existing, req.MemberEpoch, owned); code != 0 {
				return heartbeatError(v, code, "The consumer group member has a different member epoch than the one known by the group coordinator. The member must abandon all its partitions and rejoin.")
			}
			m = existing
		}
	}

	// Validate the subscription update before changing anything.
	var newNames []string
	if req.SubscribedTopicNames != nil {
		newNames = sortedUnique(req.SubscribedTopicNames)
	}
	newRegex, newRE := m.regex, m.re
	if v >= 1 && req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != m.regex {
		newRegex, newRE = *req.SubscribedTopicRegex, nil
		if newRegex != "" {
			re, err := compileRegex(newRegex)
			if err != nil {
				return heartbeatError(v, kerr.InvalidRegularExpression.Code,
					fmt.Sprintf("SubscribedTopicRegex `%s` is not a valid regular expression: %v.", newRegex, err))
			}
			newRE = re
		}
	}

	// From here on the request is accepted.
	if join && m.epoch == leftStaticEpoch {
		// Back from a temporary leave under the same member id.
		m.epoch, m.prevEpoch = 0, 0
	}
	if convert {
		s.convertToConsumer(g)
	}
	if s.groups[g.id] == nil {
		s.groups[g.id] = g
	}
	g.consumer = c
	if replaced != nil {
		s.replaceConsumerMember(g, replaced, m)
	}
	old := m.assigned.clone()
	subChanged := isNew
	if req.SubscribedTopicNames != nil && !slices.Equal(newNames, m.names) {
		m.names = newNames
		subChanged = true
	}
	if newRegex != m.regex {
		m.regex, m.re = newRegex, newRE
		subChanged = true
	}
	// Only a real change is written; a plain heartbeat writes nothing.
	changed := subChanged || replaced != nil
	if req.InstanceID != nil && !equalStringPtr(m.instanceID, req.InstanceID) {
		m.instanceID, changed = cloneString(req.InstanceID), true
	}
	if req.RackID != nil && !equalStringPtr(m.rackID, req.RackID) {
		m.rackID, changed = cloneString(req.RackID), true
	}
	if req.RebalanceTimeoutMillis > 0 && req.RebalanceTimeoutMillis != m.rebalanceTimeout {
		m.rebalanceTimeout, changed = req.RebalanceTimeoutMillis, true
	}
	if req.ServerAssignor != nil && *req.ServerAssignor != m.assignor {
		m.assignor, changed = *req.ServerAssignor, true
	}
	if client.ID != m.clientID || client.Host != m.clientHost {
		m.clientID, m.clientHost, changed = client.ID, client.Host, true
	}
	c.members[m.id] = m
	if m.instanceID != nil {
		c.static[*m.instanceID] = m.id
	}
	if changed {
		c.markDirty(m.id)
	}
	if isNew {
		s.log.Info("member joins consumer group", attrGroup, g.id, attrMember, m.id)
	}

	// 1. Bump the group epoch if membership, subscriptions or the
	// subscribed topics changed. A heartbeat also resolves the group's
	// regexes when due, with its client's DESCRIBE filter (regex.go).
	bump := c.epoch == 0 || subChanged
	now := s.now()
	if c.regexRefreshDue(now, s.cfg.RegexRefreshInterval) && c.refreshRegexes(s.cfg.Topics, client.Describable, now) {
		bump = true
	}
	if subChanged {
		c.dropUnusedRegexes()
	}
	if bump || now.Sub(c.subscribedAt) >= s.cfg.MetadataRefreshInterval {
		if c.resolveSubscription(s.cfg.Topics, now) {
			bump = true
		}
	}
	if bump {
		s.bumpConsumerEpoch(g)
	}
	// 2. Recompute the target assignment if it is behind.
	if c.epoch > c.assignmentEpoch {
		c.computeTarget(s.cfg.DefaultAssignor)
	}
	// 3. Move the member toward its target.
	s.reconcileMember(g, m, owned)
	s.scheduleConsumerSession(g.id, m.id)

	resp := s.heartbeatAnswer(g, v, m.id, m.epoch)
	if resp.ErrorCode != 0 {
		return resp
	}
	resp.HeartbeatIntervalMillis = ms(s.cfg.ConsumerHeartbeatInterval)
	full := join || (req.RebalanceTimeoutMillis != -1 && req.SubscribedTopicNames != nil && req.Topics != nil)
	if full || !old.sameKeys(m.assigned) {
		resp.Assignment = heartbeatAssignment(m.assigned)
	}
	return resp
}

func (s *shard) bumpConsumerEpoch(g *group) {
	c := g.consumer
	c.epoch++
	c.dirtyMeta = true
	s.stats.consumerEpochBumps.Add(1)
	s.log.Info("consumer group epoch bumped", attrGroup, g.id, attrEpoch, c.epoch, "members", len(c.members))
}

// reconcileMember applies reconciliation to m and keeps the holders map
// and the revocation timer in step with it.
func (s *shard) reconcileMember(g *group, m *consumerMember, owned tps) {
	c := g.consumer
	if m.epoch == leftStaticEpoch {
		return
	}
	subscribed := c.memberTopicIDs(m)
	next := reconcile(m.assignState, reconcileInput{
		memberID:    m.id,
		target:      m.target,
		targetEpoch: c.assignmentEpoch,
		subscribed:  func(id topicID) bool { return subscribed[id] },
		holder:      c.holder,
		owned:       owned,
	})
	if next.epoch == m.epoch && next.state == m.state && next.assigned.sameKeys(m.assigned) && next.pending.sameKeys(m.pending) {
		return
	}
	c.release(m.id, m.assigned)
	c.release(m.id, m.pending)
	m.assignState = next
	if n := c.hold(m.id, m.assigned) + c.hold(m.id, m.pending); n > 0 {
		s.log.Error("partition held by two members; keeping the first holder", attrGroup, g.id, attrMember, m.id, "conflicts", n)
	}
	c.markDirty(m.id)
	if m.state == memberUnrevoked {
		s.scheduleRevocationTimeout(g.id, m)
	} else {
		s.cancel(revokeKey(g.id, m.id))
	}
}

func (s *shard) scheduleConsumerSession(groupID, memberID string) {
	s.schedule(sessionKey(groupID, memberID), s.cfg.ConsumerSessionTimeout, func() {
		g := s.groups[groupID]
		if g == nil || g.consumer == nil || g.consumer.members[memberID] == nil {
			return
		}
		s.stats.membersExpired.Add(1)
		s.log.Info("consumer member session expired", attrGroup, groupID, attrMember, memberID)
		s.fenceConsumerMember(g, g.consumer.members[memberID])
		s.flushConsumer(g)
	})
}

// scheduleRevocationTimeout fences a member that has not given up its
// revoked partitions within its rebalance timeout.
func (s *shard) scheduleRevocationTimeout(groupID string, m *consumerMember) {
	key := revokeKey(groupID, m.id)
	if s.scheduled(key) {
		return
	}
	memberID, epoch := m.id, m.epoch
	s.schedule(key, msDur(m.rebalanceTimeout), func() {
		g := s.groups[groupID]
		if g == nil || g.consumer == nil {
			return
		}
		cur := g.consumer.members[memberID]
		if cur == nil || cur.epoch != epoch || cur.state != memberUnrevoked {
			return
		}
		s.log.Info("consumer member fenced: partitions not revoked in time", attrGroup, groupID, attrMember, memberID, attrEpoch, epoch)
		s.fenceConsumerMember(g, cur)
		s.flushConsumer(g)
	})
}

// fenceConsumerMember removes a member: its partitions become free and the
// group epoch moves so the others are reassigned.
func (s *shard) fenceConsumerMember(g *group, m *consumerMember) {
	c := g.consumer
	c.release(m.id, m.assigned)
	c.release(m.id, m.pending)
	delete(c.members, m.id)
	if m.instanceID != nil && c.static[*m.instanceID] == m.id {
		delete(c.static, *m.instanceID)
	}
	c.markGone(m.id)
	s.cancel(sessionKey(g.id, m.id))
	s.cancel(revokeKey(g.id, m.id))
	s.bumpConsumerEpoch(g)
	c.dropUnusedRegexes()
	c.resolveSubscription(s.cfg.Topics, s.now())
	c.computeTarget(s.cfg.DefaultAssignor)
}

// replaceConsumerMember hands a static member's state over to the member
// id it rejoined with.
func (s *shard) replaceConsumerMember(g *group, old, nm *consumerMember) {
	c := g.consumer
	c.release(old.id, old.assigned)
	c.release(old.id, old.pending)
	delete(c.members, old.id)
	c.markGone(old.id)
	s.cancel(sessionKey(g.id, old.id))
	s.cancel(revokeKey(g.id, old.id))
	nm.assigned = old.assigned.clone()
	nm.pending = old.pending.clone()
	nm.target = old.target.clone()
	c.members[nm.id] = nm
	c.hold(nm.id, nm.assigned)
	c.hold(nm.id, nm.pending)
	s.log.Info("static member rejoined under a new member id", attrGroup, g.id, attrMember, nm.id, "old_member", old.id)
}

func (s *shard) consumerLeave(req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	v := req.Version
	g := s.groups[req.Group]
	if g == nil || g.consumer == nil {
		return heartbeatError(v, kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s not found.", req.Group))
	}
	c := g.consumer
	var m *consumerMember
	if req.InstanceID == nil {
		if m = c.members[req.MemberID]; m == nil {
			return heartbeatError(v, kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, req.Group))
		}
	} else {
		if id, ok := c.static[*req.InstanceID]; ok {
			m = c.members[id]
		}
		if m == nil {
			return heartbeatError(v, kerr.UnknownMemberID.Code, fmt.Sprintf("Instance id %s is unknown.", *req.InstanceID))
		}
		if m.id != req.MemberID {
			return heartbeatError(v, kerr.FencedInstanceID.Code, fmt.Sprintf(
				"Static member %s with instance id %s was fenced by member %s.", req.MemberID, *req.InstanceID, m.id))
		}
	}
	if req.MemberEpoch == leftStaticEpoch && m.instanceID != nil {
		// The static member will be back: it keeps its assignment (but no
		// longer holds what it was revoking) until its session expires.
		c.release(m.id, m.pending)
		m.pending = make(tps)
		if m.state == memberUnrevoked {
			m.state = memberStable
		}
		m.prevEpoch = m.epoch
		m.epoch = leftStaticEpoch
		c.markDirty(m.id)
		s.cancel(revokeKey(g.id, m.id))
		s.log.Info("static member left temporarily", attrGroup, g.id, attrMember, m.id)
	} else {
		s.log.Info("member left consumer group", attrGroup, g.id, attrMember, m.id)
		s.fenceConsumerMember(g, m)
	}
	return s.heartbeatAnswer(g, v, req.MemberID, req.MemberEpoch)
}

// heartbeatAnswer persists the group's changes and answers with the
// member's id and epoch, or with the error the persisting met.
func (s *shard) heartbeatAnswer(g *group, v int16, memberID string, epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
	if code := s.flushConsumer(g); code != 0 {
		return heartbeatError(v, code, "")
	}
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version = v
	resp.MemberID = kmsg.StringPtr(memberID)
	resp.MemberEpoch = epoch
	return resp
}

// flushConsumer persists the group's pending changes; it returns the code
// to answer with if that failed. The in-memory state is kept either way:
// members whose change was lost are fenced by epoch checks after a
// restart and rejoin.
func (s *shard) flushConsumer(g *group) int16 {
	recs := g.consumer.pendingRecords(g.id)
	if err := s.append(g.id, recs); err != nil {
		s.stats.appendErrors.Add(1)
		return appendErrorCode(err)
	}
	return 0
}

// convertToConsumer turns an empty classic group into a consumer group;
// its offsets stay.
func (s *shard) convertToConsumer(g *group) {
	if g.streams != nil {
		s.dropEmptyStreamsGroup(g)
	}
	if g.classic.protocolType != "" || g.classic.generation > 0 {
		if err := s.append(g.id, []Record{encodeRecord(decodedRecord{kind: recClassicGroup, group: g.id})}); err != nil {
			s.stats.appendErrors.Add(1)
		}
	}
	for k := range s.timers {
		if k.group == g.id {
			s.cancel(k)
		}
	}
	s.log.Info("empty classic group becomes a consumer group", attrGroup, g.id)
	g.classic = nil
}

// dropEmptyConsumerGroup turns an empty consumer group back into a classic
// one for a JoinGroup; its offsets stay.
func (s *shard) dropEmptyConsumerGroup(g *group) {
	if err := s.append(g.id, g.consumer.tombstones(g.id)); err != nil {
		s.stats.appendErrors.Add(1)
	}
	s.log.Info("empty consumer group becomes a classic group", attrGroup, g.id)
	g.consumer = nil
	g.classic = newClassicGroup()
	g.classic.stateTime = s.now()
}

// topicsChanged re-resolves every consumer group's subscriptions and
// reassigns the groups whose topics changed. Regexes keep their
// resolution, less deleted topics; the next heartbeat resolves them
// again (regex.go). It also drops the committed offsets of deleted
// topics, as Kafka does when partitions are deleted.
func (s *shard) topicsChanged() {
	now := s.now()
	for _, g := range s.groups {
		s.dropDeletedTopicOffsets(g)
		if g.streams != nil {
			s.streamsTopicsChanged(g)
			continue
		}
		c := g.consumer
		if c == nil || len(c.members) == 0 {
			continue
		}
		c.regexesStale = true
		if !c.resolveSubscription(s.cfg.Topics, now) {
			continue
		}
		s.bumpConsumerEpoch(g)
		c.computeTarget(s.cfg.DefaultAssignor)
		s.flushConsumer(g)
	}
}
