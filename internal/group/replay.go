package group

import (
	"time"
)

// Rebuilding state from the Store at start. Records are applied in order,
// latest value winning, exactly as a compacted log would keep them; then
// loaded derives what is not stored (partition holders, timers) and
// starts sessions afresh, as Kafka does when it loads a coordinator.

func (s *shard) replayGroup(id string) *group {
	g := s.groups[id]
	if g == nil {
		g = newClassicGroupEntry(id)
		s.groups[id] = g
	}
	return g
}

func (s *shard) replayConsumerGroup(id string) *consumerGroup {
	g := s.replayGroup(id)
	if g.consumer == nil {
		g.classic, g.streams = nil, nil
		g.consumer = newConsumerGroup()
	}
	return g.consumer
}

// forgetIfBare drops a group that has neither a stored record nor offsets.
func (s *shard) forgetIfBare(g *group) {
	if g != nil && !g.recorded && len(g.offsets) == 0 && len(g.openTxns) == 0 {
		delete(s.groups, g.id)
	}
}

func (s *shard) replay(r decodedRecord) error {
	g := s.groups[r.group]
	switch r.kind {
	case recStreamsGroup, recStreamsMember:
		return s.replayStreams(r)
	case recOffset:
		if r.offset == nil {
			if g != nil {
				g.deleteOffset(r.topic, r.partition)
				s.dropPending(g, r.topic, r.partition)
				s.forgetIfBare(g)
			}
			return nil
		}
		r.offset.seq = s.nextSeq()
		s.replayGroup(r.group).setOffset(r.topic, r.partition, r.offset)
	case recClassicGroup:
		if r.classic == nil {
			if g != nil && g.classic != nil {
				g.classic = newClassicGroup()
				g.recorded = false
				s.forgetIfBare(g)
			}
			return nil
		}
		g = s.replayGroup(r.group)
		g.consumer, g.streams = nil, nil
		g.classic = classicFromValue(r.classic)
		g.recorded = true
	case recConsumerGroup:
		if r.consumer == nil {
			if g != nil && g.consumer != nil {
				g.consumer = nil
				g.classic = newClassicGroup()
				g.recorded = false
				s.forgetIfBare(g)
			}
			return nil
		}
		c := s.replayConsumerGroup(r.group)
		c.epoch = r.consumer.epoch
		c.assignmentEpoch = r.consumer.assignmentEpoch
		s.groups[r.group].recorded = true
	case recConsumerMember:
		if r.cmember == nil {
			if g != nil && g.consumer != nil {
				delete(g.consumer.members, r.member)
			}
			return nil
		}
		c := s.replayConsumerGroup(r.group)
		c.members[r.member] = s.memberFromValue(r.group, r.member, r.cmember)
		s.groups[r.group].recorded = true
	case recConsumerRegex:
		if r.resolved == nil {
			if g != nil && g.consumer != nil {
				delete(g.consumer.regexes, r.regex)
			}
			return nil
		}
		c := s.replayConsumerGroup(r.group)
		at := time.UnixMilli(r.resolved.resolvedMs)
		c.regexes[r.regex] = resolvedRegex{topics: r.resolved.topics, at: at}
		if at.After(c.regexesAt) {
			c.regexesAt = at
		}
	}
	return nil
}

func classicFromValue(v *classicGroupValue) *classicGroup {
	cg := newClassicGroup()
	cg.generation = v.generation
	if v.protocol != nil {
		cg.protocol = *v.protocol
	}
	cg.stateTime = time.UnixMilli(v.stateMs)
	for _, mv := range v.members {
		protocols := make([]protocolValue, len(mv.protocols))
		copy(protocols, mv.protocols)
		cg.add(&classicMember{
			id:               mv.memberID,
			instanceID:       mv.instanceID,
			clientID:         mv.clientID,
			clientHost:       mv.clientHost,
			rebalanceTimeout: mv.rebalanceTimeoutMs,
			sessionTimeout:   mv.sessionTimeoutMs,
			protocolType:     v.protocolType,
			protocols:        protocols,
			assignment:       mv.assignment,
		})
	}
	cg.protocolType = v.protocolType
	cg.leader = ""
	if v.leader != nil {
		if _, ok := cg.members[*v.leader]; ok {
			cg.leader = *v.leader
		}
	}
	if cg.leader == "" {
		if ms := cg.sortedMembers(); len(ms) > 0 {
			cg.leader = ms[0].id
		}
	}
	if len(cg.members) > 0 {
		cg.state = classicStable
	}
	cg.computeSubscribed()
	return cg
}

func (s *shard) memberFromValue(groupID, id string, v *consumerMemberValue) *consumerMember {
	m := &consumerMember{
		id:               id,
		instanceID:       v.instanceID,
		rackID:           v.rackID,
		clientID:         v.clientID,
		clientHost:       v.clientHost,
		rebalanceTimeout: v.rebalanceTimeoutMs,
		names:            v.subscribedNames,
		assignState: assignState{
			epoch:     v.epoch,
			prevEpoch: v.prevEpoch,
			state:     memberState(v.state),
			assigned:  tpsFromEpochTopics(v.assigned),
			pending:   tpsFromEpochTopics(v.pending),
		},
		target: tpsFromTargetTopics(v.target),
	}
	if v.assignor != nil {
		m.assignor = *v.assignor
	}
	if v.regex != nil && *v.regex != "" {
		re, err := compileRegex(*v.regex)
		if err != nil {
			s.log.Warn("stored subscription regex does not compile; ignored", attrGroup, groupID, attrMember, id, "err", err)
		} else {
			m.regex, m.re = *v.regex, re
		}
	}
	return m
}

// loaded finishes the replay: it rebuilds derived state, restarts member
// sessions and the offset expiry sweep, and reassigns consumer groups whose
// topics changed while the coordinator was down.
func (s *shard) loaded() {
	for _, g := range s.groups {
		if cg := g.classic; cg != nil {
			for _, m := range cg.members {
				s.rescheduleClassicHeartbeat(g, m)
			}
			continue
		}
		if g.streams != nil {
			s.streamsLoaded(g)
			continue
		}
		c := g.consumer
		for _, id := range c.sortedMemberIDs() {
			m := c.members[id]
			if m.instanceID != nil {
				c.static[*m.instanceID] = id
			}
			if n := c.hold(id, m.assigned) + c.hold(id, m.pending); n > 0 {
				s.log.Error("stored assignment gives a partition to two members", attrGroup, g.id, attrMember, id, "conflicts", n)
			}
			s.scheduleConsumerSession(g.id, id)
			if m.state == memberUnrevoked {
				s.scheduleRevocationTimeout(g.id, m)
			}
		}
		if len(c.members) == 0 {
			continue
		}
		// Topics may have come while the coordinator was away: the next
		// heartbeat resolves the regexes again (Kafka's first image after
		// a load counts as one with new topics).
		c.regexesStale = true
		c.dropUnusedRegexes()
		c.resolveSubscription(s.cfg.Topics, s.now())
		if c.unresolvedRegex() {
			// A regex without a stored resolution (a store written before
			// regexes were recorded) would assign its members nothing;
			// the stored targets stand until a heartbeat resolves it.
			continue
		}
		before := make(map[string]tps, len(c.members))
		for id, m := range c.members {
			before[id] = m.target
		}
		epoch, assignmentEpoch := c.epoch, c.assignmentEpoch
		c.computeTarget(s.cfg.DefaultAssignor)
		changed := epoch > assignmentEpoch
		for id, m := range c.members {
			if !m.target.sameKeys(before[id]) {
				changed = true
			}
		}
		if changed {
			s.bumpConsumerEpoch(g)
			c.assignmentEpoch = c.epoch
			s.flushConsumer(g)
		} else {
			c.assignmentEpoch = assignmentEpoch
			c.dirtyMeta = false
			clear(c.dirtyMembers)
		}
	}
	s.scheduleOffsetExpiry()
}
