package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete and expiry.

func (s *shard) topicsKnown() bool {
	_, none := s.cfg.Topics.(noTopics)
	return !none
}

// commitTarget is one partition of an OffsetCommit that passed the topic
// checks, with where its answer goes.
type commitTarget struct {
	topic string
	id    topicID
	p     *kmsg.OffsetCommitRequestTopicPartition
	code  *int16
}

func (s *shard) offsetCommit(req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := kmsg.NewPtrOffsetCommitResponse()
	resp.Version = req.Version
	var targets []commitTarget
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		st.TopicID = rt.TopicID
		st.Partitions = make([]kmsg.OffsetCommitResponseTopicPartition, len(rt.Partitions))
		name, id, info, code := s.resolveCommitTopic(req.Version, rt.Topic, rt.TopicID)
		for pi := range rt.Partitions {
			p := &rt.Partitions[pi]
			sp := &st.Partitions[pi]
			*sp = kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition = p.Partition
			if sp.ErrorCode = partitionCode(info, code, p.Partition); sp.ErrorCode == 0 {
				targets = append(targets, commitTarget{topic: name, id: id, p: p, code: &sp.ErrorCode})
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(targets) == 0 {
		return resp
	}

	g := s.groups[req.Group]
	var check func(topicID, int32) int16
	code := int16(0)
	if g == nil {
		switch {
		case req.Generation < 0:
			// A consumer that manages its own partitions (or an admin)
			// commits to a group that does not exist: a "simple" group
			// is created to hold the offsets.
		case req.Version >= 9:
			code = kerr.GroupIDNotFound.Code
		default:
			code = kerr.IllegalGeneration.Code
		}
	} else if g.streams != nil {
		code = validateStreamsCommit(g.streams, req.MemberID, req.Generation, req.Version)
	} else if g.consumer != nil {
		code, check = s.validateConsumerCommit(g, req)
	} else {
		code = s.validateClassicCommit(g, req)
	}
	if code != 0 {
		for _, t := range targets {
			*t.code = code
		}
		return resp
	}

	now := s.now()
	var recs []Record
	var applied []commitTarget
	var values []*offsetValue
	for _, t := range targets {
		if check != nil {
			if c := check(t.id, t.p.Partition); c != 0 {
				*t.code = c
				continue
			}
		}
		v, code := s.commitValue(t.p.Offset, t.p.LeaderEpoch, req.Version >= 6, t.p.Metadata, t.id, now)
		if code != 0 {
			*t.code = code
			continue
		}
		if req.Version >= 2 && req.Version <= 4 && req.RetentionTimeMillis != -1 {
			v.expireMs = now.UnixMilli() + req.RetentionTimeMillis
		}
		recs = append(recs, encodeRecord(decodedRecord{kind: recOffset, group: req.Group, topic: t.topic, partition: t.p.Partition, offset: v}))
		applied = append(applied, t)
		values = append(values, v)
	}
	if len(recs) == 0 {
		return resp
	}
	if err := s.append(req.Group, recs); err != nil {
		s.stats.appendErrors.Add(1)
		code := appendErrorCode(err)
		for _, t := range applied {
			*t.code = code
		}
		return resp
	}
	if g == nil {
		g = newClassicGroupEntry(req.Group)
		g.classic.stateTime = now
		s.groups[req.Group] = g
	}
	for i, t := range applied {
		values[i].seq = s.nextSeq()
		g.setOffset(t.topic, t.p.Partition, values[i])
	}
	s.stats.offsetsCommitted.Add(uint64(len(applied)))
	return resp
}

// partitionCode is the code of a committed partition of a topic resolved
// with code (and info, when topics are known): 0 when it may be committed.
func partitionCode(info *TopicInfo, code int16, p int32) int16 {
	switch {
	case code != 0:
		return code
	case info != nil && (p < 0 || p >= info.Partitions):
		return kerr.UnknownTopicOrPartition.Code
	}
	return 0
}

// commitValue is the value a commit of one partition stores, or
// OFFSET_METADATA_TOO_LARGE. The leader epoch is kept if the request
// version carries it.
func (s *shard) commitValue(offset int64, leaderEpoch int32, withEpoch bool, metadata *string, id topicID, now time.Time) (*offsetValue, int16) {
	md := ""
	if metadata != nil {
		md = *metadata
	}
	if len(md) > s.cfg.OffsetMetadataMaxBytes {
		return nil, kerr.OffsetMetadataTooLarge.Code
	}
	v := &offsetValue{offset: offset, leaderEpoch: -1, metadata: md, commitMs: now.UnixMilli(), expireMs: -1, topicID: id}
	if withEpoch {
		v.leaderEpoch = leaderEpoch
	}
	return v, 0
}

// resolveCommitTopic finds a committed topic. v10 names topics by id. An
// unknown topic fails its partitions, as the broker does before the
// coordinator sees a commit; without a Topics source nothing is checked.
func (s *shard) resolveCommitTopic(version int16, name string, id topicID) (string, topicID, *TopicInfo, int16) {
	if version >= 10 {
		ti, ok := s.cfg.Topics.TopicByID(id)
		if !ok {
			return "", id, nil, kerr.UnknownTopicID.Code
		}
		return ti.Name, id, &ti, 0
	}
	if !s.topicsKnown() {
		return name, topicID{}, nil, 0
	}
	ti, ok := s.cfg.Topics.TopicByName(name)
	if !ok {
		return name, topicID{}, nil, kerr.UnknownTopicOrPartition.Code
	}
	return name, ti.ID, &ti, 0
}

func (g *group) setOffset(topic string, partition int32, v *offsetValue) {
	ps := g.offsets[topic]
	if ps == nil {
		ps = make(map[int32]*offsetValue)
		g.offsets[topic] = ps
	}
	ps[partition] = v
}

func (g *group) deleteOffset(topic string, partition int32) {
	if ps := g.offsets[topic]; ps != nil {
		delete(ps, partition)
		if len(ps) == 0 {
			delete(g.offsets, topic)
		}
	}
}

// validateClassicCommit checks a commit against a classic group.
func (s *shard) validateClassicCommit(g *group, req *kmsg.OffsetCommitRequest) int16 {
	cg := g.classic
	if req.Generation < 0 && cg.state == classicEmpty {
		return 0
	}
	if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil {
		if code := cg.validateMember(req.MemberID, req.InstanceID); code != 0 {
			return code
		}
		if req.Generation != cg.generation {
			return kerr.IllegalGeneration.Code
		}
	} else if cg.state != classicEmpty {
		return kerr.UnknownMemberID.Code
	}
	switch cg.state {
	case classicCompletingRebalance:
		// The member has its new generation but not its assignment yet.
		return kerr.RebalanceInProgress.Code
	case classicStable, classicPreparingRebalance:
		// A commit keeps a classic member's session alive.
		if m := cg.members[req.MemberID]; m != nil {
			s.rescheduleClassicHeartbeat(g, m)
		}
	}
	return 0
}

// validateConsumerCommit checks a commit against a consumer-protocol group.
// A member may commit with its current epoch; with an older one only for
// partitions it was assigned at that epoch or earlier and still holds
// (KIP-1251), so a commit racing an epoch bump does not fail needlessly.
func (s *shard) validateConsumerCommit(g *group, req *kmsg.OffsetCommitRequest) (int16, func(topicID, int32) int16) {
	c := g.consumer
	if req.Generation < 0 && len(c.members) == 0 {
		return 0, nil
	}
	m := c.members[req.MemberID]
	if m == nil {
		return kerr.UnknownMemberID.Code, nil
	}
	if req.Version < 9 {
		return kerr.UnsupportedVersion.Code, nil
	}
	switch {
	case req.Generation > m.epoch:
		return kerr.StaleMemberEpoch.Code, nil
	case req.Generation == m.epoch:
		return 0, nil
	}
	epoch := req.Generation
	return 0, func(id topicID, p int32) int16 {
		if at, ok := m.assignmentEpochOf(id, p); ok && at <= epoch {
			return 0
		}
		return kerr.StaleMemberEpoch.Code
	}
}

// offsetFetch answers one group of an OffsetFetch (v8+ batches groups).
// offsetFetch answers one group of an OffsetFetch. With requireStable
// (v7+), a partition with uncommitted transactional offsets is
// UNSTABLE_OFFSET_COMMIT: the consumer waits for the transaction to end
// instead of reading from an offset about to change.
func (s *shard) offsetFetch(version int16, requireStable bool, rg *kmsg.OffsetFetchRequestGroup) kmsg.OffsetFetchResponseGroup {
	out := kmsg.NewOffsetFetchResponseGroup()
	out.Group = rg.Group
	g := s.groups[rg.Group]
	if g != nil && g.consumer != nil && version >= 9 {
		if code := g.consumer.validateFetch(rg.MemberID, rg.MemberEpoch); code != 0 {
			out.ErrorCode = code
			return out
		}
	}
	if g != nil && g.streams != nil && version >= 9 {
		if code := validateStreamsFetch(g.streams, rg.MemberID, rg.MemberEpoch); code != 0 {
			out.ErrorCode = code
			return out
		}
	}
	if rg.Topics == nil {
		if g == nil {
			return out
		}
		for _, topic := range g.sortedTopics() {
			st := kmsg.NewOffsetFetchResponseGroupTopic()
			st.Topic = topic
			if version >= 10 {
				ti, ok := s.cfg.Topics.TopicByName(topic)
				if !ok {
					// v10 can only name topics by id.
					continue
				}
				st.TopicID = ti.ID
			}
			ps := g.offsets[topic]
			for _, p := range sortedPartitions(ps) {
				st.Partitions = append(st.Partitions, s.fetched(g, requireStable, topic, p, ps[p]))
			}
			out.Topics = append(out.Topics, st)
		}
		return out
	}
	for _, rt := range rg.Topics {
		st := kmsg.NewOffsetFetchResponseGroupTopic()
		st.Topic = rt.Topic
		st.TopicID = rt.TopicID
		name := rt.Topic
		code := int16(0)
		if version >= 10 {
			if ti, ok := s.cfg.Topics.TopicByID(rt.TopicID); ok {
				name = ti.Name
			} else {
				code = kerr.UnknownTopicID.Code
			}
		}
		for _, p := range rt.Partitions {
			if g == nil || code != 0 {
				sp := fetchedPartition(p, nil)
				sp.ErrorCode = code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			st.Partitions = append(st.Partitions, s.fetched(g, requireStable, name, p, g.offsets[name][p]))
		}
		out.Topics = append(out.Topics, st)
	}
	return out
}

// fetched is a partition's OffsetFetch answer.
func (s *shard) fetched(g *group, requireStable bool, topic string, p int32, v *offsetValue) kmsg.OffsetFetchResponseGroupTopicPartition {
	if requireStable && s.hasPending(g, topic, p) {
		sp := fetchedPartition(p, nil)
		sp.ErrorCode = kerr.UnstableOffsetCommit.Code
		return sp
	}
	return fetchedPartition(p, v)
}

func fetchedPartition(p int32, v *offsetValue) kmsg.OffsetFetchResponseGroupTopicPartition {
	sp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
	sp.Partition = p
	if v == nil {
		sp.Offset = -1
		sp.LeaderEpoch = -1
		sp.Metadata = kmsg.StringPtr("")
		return sp
	}
	sp.Offset = v.offset
	sp.LeaderEpoch = v.leaderEpoch
	sp.Metadata = kmsg.StringPtr(v.metadata)
	return sp
}

func (s *shard) offsetDelete(req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := kmsg.NewPtrOffsetDeleteResponse()
	resp.Version = req.Version
	g := s.groups[req.Group]
	if g == nil {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp
	}
	if cg := g.classic; cg != nil {
		switch cg.state {
		case classicStable, classicPreparingRebalance, classicCompletingRebalance:
			if cg.protocolType != consumerProtocolType {
				resp.ErrorCode = kerr.NonEmptyGroup.Code
				return resp
			}
		}
	}
	type del struct {
		topic     string
		partition int32
	}
	var dels []del
	var recs []Record
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetDeleteResponseTopic()
		st.Topic = rt.Topic
		code := int16(0)
		if s.topicsKnown() {
			if _, ok := s.cfg.Topics.TopicByName(rt.Topic); !ok {
				code = kerr.UnknownTopicOrPartition.Code
			}
		}
		if code == 0 && g.subscribedTo(rt.Topic) {
			code = kerr.GroupSubscribedToTopic.Code
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetDeleteResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.ErrorCode = code
			st.Partitions = append(st.Partitions, sp)
			if code == 0 && (g.offsets[rt.Topic][rp.Partition] != nil || s.hasPending(g, rt.Topic, rp.Partition)) {
				dels = append(dels, del{rt.Topic, rp.Partition})
				recs = append(recs, offsetTombstone(g.id, rt.Topic, rp.Partition))
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	if err := s.append(g.id, recs); err != nil {
		s.stats.appendErrors.Add(1)
		r := kmsg.NewPtrOffsetDeleteResponse()
		r.Version = req.Version
		r.ErrorCode = appendErrorCode(err)
		return r
	}
	for _, d := range dels {
		g.deleteOffset(d.topic, d.partition)
		s.dropPending(g, d.topic, d.partition)
	}
	return resp
}

func offsetTombstone(group, topic string, partition int32) Record {
	return encodeRecord(decodedRecord{kind: recOffset, group: group, topic: topic, partition: partition})
}

// Offset expiry (offsets.retention.minutes). Which offsets may expire
// depends on the group, as in Kafka:
//   - a simple group (no protocol): any offset, counted from its commit;
//   - an empty classic group: any offset, counted from when the group
//     became empty (or the commit, if later);
//   - a stable classic consumer group whose subscriptions are known: the
//     offsets of topics nobody subscribes to, counted from the commit;
//   - a consumer-protocol group: offsets of unsubscribed topics, from the
//     commit;
//   - any other classic group: none.
//
// An offset committed with an explicit retention (OffsetCommit v2-v4)
// expires at that time instead. A group that is empty and has no offsets
// left (including one that never had any) is deleted.

func offsetExpiryKey() timerKey { return timerKey{kind: timerOffsetExpiry} }

func (s *shard) scheduleOffsetExpiry() {
	s.schedule(offsetExpiryKey(), s.cfg.OffsetsRetentionCheckInterval, func() {
		s.expireOffsets()
		s.scheduleOffsetExpiry()
	})
}

func (s *shard) expireOffsets() {
	now := s.now()
	for _, g := range s.groups {
		s.expireGroupOffsets(g, now)
	}
}

// expiryBase returns, for a group, whether its offsets may expire now and
// the time an offset's retention counts from.
func (g *group) expiryBase() (ok bool, base func(*offsetValue) int64) {
	fromCommit := func(v *offsetValue) int64 { return v.commitMs }
	if g.consumer != nil || g.streams != nil {
		return true, fromCommit
	}
	cg := g.classic
	switch {
	case cg.protocolType == "":
		return true, fromCommit
	case cg.state == classicEmpty:
		since := cg.stateTime.UnixMilli()
		return true, func(v *offsetValue) int64 { return max(since, v.commitMs) }
	case cg.state == classicStable && cg.protocolType == consumerProtocolType && cg.subscribedKnown:
		return true, fromCommit
	}
	return false, nil
}

func (s *shard) expireGroupOffsets(g *group, now time.Time) {
	ok, base := g.expiryBase()
	if !ok {
		return
	}
	nowMs := now.UnixMilli()
	retention := s.cfg.OffsetsRetention.Milliseconds()
	type tp struct {
		topic string
		p     int32
	}
	var expired []tp
	var recs []Record
	for _, topic := range g.sortedTopics() {
		if g.subscribedTo(topic) {
			continue
		}
		ps := g.offsets[topic]
		for _, p := range sortedPartitions(ps) {
			v := ps[p]
			if s.hasPending(g, topic, p) {
				// Kept until the transaction writing it ends.
				continue
			}
			due := base(v) + retention
			if v.expireMs != -1 {
				due = v.expireMs
			}
			if nowMs >= due {
				expired = append(expired, tp{topic, p})
				recs = append(recs, offsetTombstone(g.id, topic, p))
			}
		}
	}
	if len(expired) == g.offsetCount() && g.isEmpty() && !g.hasPendingMembers() && len(g.openTxns) == 0 {
		// Nothing will be left: delete the whole group.
		recs = append(recs, s.groupTombstones(g)...)
		if err := s.append(g.id, recs); err != nil {
			s.stats.appendErrors.Add(1)
			return
		}
		s.stats.offsetsExpired.Add(uint64(len(expired)))
		s.log.Info("group deleted: offsets expired", attrGroup, g.id)
		s.removeGroup(g)
		return
	}
	if len(expired) == 0 {
		return
	}
	if err := s.append(g.id, recs); err != nil {
		s.stats.appendErrors.Add(1)
		return
	}
	for _, e := range expired {
		g.deleteOffset(e.topic, e.p)
	}
	s.stats.offsetsExpired.Add(uint64(len(expired)))
	s.log.Info("offsets expired", attrGroup, g.id, "count", len(expired))
}

// dropDeletedTopicOffsets deletes the offsets of topics that no longer
// exist, or that were deleted and created anew (their id changed).
func (s *shard) dropDeletedTopicOffsets(g *group) {
	if !s.topicsKnown() {
		return
	}
	type tp struct {
		topic string
		p     int32
	}
	var gone []tp
	var recs []Record
	for _, topic := range g.sortedTopics() {
		ti, exists := s.cfg.Topics.TopicByName(topic)
		ps := g.offsets[topic]
		for _, p := range sortedPartitions(ps) {
			v := ps[p]
			if exists && (v.topicID == topicID{} || v.topicID == ti.ID) {
				continue
			}
			gone = append(gone, tp{topic, p})
			recs = append(recs, offsetTombstone(g.id, topic, p))
		}
	}
	if len(gone) == 0 {
		return
	}
	if err := s.append(g.id, recs); err != nil {
		s.stats.appendErrors.Add(1)
		return
	}
	for _, d := range gone {
		g.deleteOffset(d.topic, d.p)
	}
	s.log.Info("offsets of deleted topics removed", attrGroup, g.id, "count", len(gone))
}
