package group

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/streamsgroup"
)

// Streams groups (KIP-1071). The group's membership, topology and
// assignment are internal/streamsgroup's pure state machine; the shard
// gives it its place in the group id namespace beside classic and
// consumer groups, persists what it changes, runs its session and
// revocation timers, and answers the offsets and admin APIs for it.

func streamsSessionKey(group, member string) timerKey {
	return timerKey{kind: timerStreamsSession, group: group, member: member}
}

func streamsRevokeKey(group, member string) timerKey {
	return timerKey{kind: timerStreamsRebalance, group: group, member: member}
}

// streamsTopics adapts the coordinator's Topics to streamsgroup's view.
type streamsTopics struct{ t Topics }

func (v streamsTopics) Partitions(name string) (int32, bool) {
	ti, ok := v.t.TopicByName(name)
	return ti.Partitions, ok
}

// StreamsGroupHeartbeat handles StreamsGroupHeartbeat (key 88). Besides
// the answer it returns the internal topics (repartition and changelog)
// the group needs and that do not exist: the broker creates them, as
// Kafka's broker does after the coordinator answers, and calls
// TopicsChanged once they exist.
func (c *Coordinator) StreamsGroupHeartbeat(ctx context.Context, client Client, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, []streamsgroup.NewTopic, error) {
	if code := c.unavailable(); code != 0 {
		return streamsgroup.ErrorResponse(req.Version, code, ""), nil, nil
	}
	if code, msg := streamsgroup.ValidateRequest(req); code != 0 {
		return streamsgroup.ErrorResponse(req.Version, code, msg), nil, nil
	}
	type answer struct {
		resp   *kmsg.StreamsGroupHeartbeatResponse
		create []streamsgroup.NewTopic
	}
	a, err := oneGroup(c, ctx, req.Group, nil,
		func(code int16) answer { return answer{resp: streamsgroup.ErrorResponse(req.Version, code, "")} },
		func(s *shard, reply func(answer)) {
			resp, create := s.streamsHeartbeat(req, client)
			reply(answer{resp, create})
		})
	return a.resp, a.create, err
}

// StreamsGroupDescribe handles StreamsGroupDescribe (key 89).
// AuthorizedOperations is left for the broker to fill.
func (c *Coordinator) StreamsGroupDescribe(ctx context.Context, req *kmsg.StreamsGroupDescribeRequest) (*kmsg.StreamsGroupDescribeResponse, error) {
	groups, err := perGroup(c, ctx, req.Groups, rejectEmptyID,
		func(i int, code int16) kmsg.StreamsGroupDescribeResponseGroup {
			g := kmsg.NewStreamsGroupDescribeResponseGroup()
			g.Group, g.ErrorCode = req.Groups[i], code
			return g
		},
		func(s *shard, i int) kmsg.StreamsGroupDescribeResponseGroup {
			return s.streamsGroupDescribe(req.Groups[i])
		})
	if err != nil {
		return nil, err
	}
	resp := kmsg.NewPtrStreamsGroupDescribeResponse()
	resp.Version = req.Version
	resp.Groups = groups
	return resp, nil
}

func (s *shard) streamsGroupDescribe(id string) kmsg.StreamsGroupDescribeResponseGroup {
	g := s.groups[id]
	if g == nil || g.streams == nil {
		dg := kmsg.NewStreamsGroupDescribeResponseGroup()
		dg.Group = id
		dg.ErrorCode = kerr.GroupIDNotFound.Code
		msg := fmt.Sprintf("Group %s not found.", id)
		if g != nil {
			msg = fmt.Sprintf("Group %s is not a streams group.", id)
		}
		dg.ErrorMessage = &msg
		return dg
	}
	return g.streams.Describe()
}

func (s *shard) newStreamsGroup(id string) *streamsgroup.Group {
	return streamsgroup.New(id, s.cfg.Streams)
}

func (s *shard) streamsHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest, client Client) (*kmsg.StreamsGroupHeartbeatResponse, []streamsgroup.NewTopic) {
	v := req.Version
	join := req.MemberEpoch == 0
	g := s.groups[req.Group]
	created := false
	switch {
	case g == nil && !join:
		return streamsgroup.ErrorResponse(v, kerr.GroupIDNotFound.Code, fmt.Sprintf("Streams group %s not found.", req.Group)), nil
	case g == nil:
		g = &group{id: req.Group, streams: s.newStreamsGroup(req.Group), offsets: make(map[string]map[int32]*offsetValue)}
		created = true
	case g.streams == nil:
		if !join || !g.isEmpty() || g.hasPendingMembers() {
			return streamsgroup.ErrorResponse(v, kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s is not a streams group.", req.Group)), nil
		}
	}
	if req.MemberEpoch < 0 {
		res := g.streams.Leave(req)
		if res.Response.ErrorCode == 0 {
			s.log.Info("streams member left", attrGroup, g.id, attrMember, req.MemberID)
			if code := s.applyStreams(g, res.Changes); code != 0 {
				return streamsgroup.ErrorResponse(v, code, ""), nil
			}
		}
		return res.Response, nil
	}

	sg := g.streams
	if sg == nil {
		// An empty group of another protocol: it becomes a streams group
		// if the heartbeat is accepted; its offsets stay.
		sg = s.newStreamsGroup(req.Group)
	}
	res := sg.Heartbeat(req, streamsgroup.Client{ID: client.ID, Host: client.Host}, streamsTopics{s.cfg.Topics})
	if res.Response.ErrorCode != 0 {
		return res.Response, nil
	}
	if g.streams == nil {
		s.dropOtherProtocol(g)
		g.streams = sg
	}
	if created {
		s.groups[g.id] = g
		s.log.Info("streams group created", attrGroup, g.id)
	}
	if code := s.applyStreams(g, res.Changes); code != 0 {
		return streamsgroup.ErrorResponse(v, code, ""), nil
	}
	s.scheduleStreamsSession(g.id, req.MemberID)
	return res.Response, res.Create
}

// dropOtherProtocol clears an empty classic or consumer group's own
// records and timers before the id becomes a streams group.
func (s *shard) dropOtherProtocol(g *group) {
	switch {
	case g.consumer != nil:
		if err := s.append(g.id, g.consumer.tombstones(g.id)); err != nil {
			s.stats.appendErrors.Add(1)
		}
		g.consumer = nil
	case g.classic != nil:
		if g.classic.protocolType != "" || g.classic.generation > 0 {
			if err := s.append(g.id, []Record{encodeRecord(decodedRecord{kind: recClassicGroup, group: g.id})}); err != nil {
				s.stats.appendErrors.Add(1)
			}
		}
		g.classic = nil
	}
	for k := range s.timers {
		if k.group == g.id && k.kind != timerOffsetExpiry {
			s.cancel(k)
		}
	}
	s.log.Info("empty group becomes a streams group", attrGroup, g.id)
}

// applyStreams persists what a streams group call changed and keeps the
// timers in step: members gone lose theirs, members that must revoke get
// a rebalance timeout. It returns the code to answer with if the write
// failed (the in-memory change stays, as for consumer groups; the next
// successful write of the group catches the log up).
func (s *shard) applyStreams(g *group, ch streamsgroup.Changes) int16 {
	sg := g.streams
	if sg.Epoch > g.streamsEpoch {
		s.stats.streamsEpochBumps.Add(uint64(sg.Epoch - g.streamsEpoch))
		s.log.Debug("streams group epoch bumped", attrGroup, g.id, attrEpoch, sg.Epoch, "members", len(sg.Members))
	}
	g.streamsEpoch = sg.Epoch
	for _, id := range ch.Gone {
		s.cancel(streamsSessionKey(g.id, id))
		s.cancel(streamsRevokeKey(g.id, id))
	}
	for _, id := range ch.Members {
		if m := sg.Members[id]; m != nil {
			if m.State == streamsgroup.UnrevokedTasks {
				s.scheduleStreamsRevocation(g.id, m)
			} else {
				s.cancel(streamsRevokeKey(g.id, id))
			}
		}
	}
	recs := streamsRecords(g.id, sg, ch)
	if len(recs) == 0 {
		return 0
	}
	if err := s.append(g.id, recs); err != nil {
		s.stats.appendErrors.Add(1)
		return appendErrorCode(err)
	}
	return 0
}

// streamsRecords returns the records of what changed: the group record
// first, so that a replay of any prefix sees the group before its members.
func streamsRecords(groupID string, sg *streamsgroup.Group, ch streamsgroup.Changes) []Record {
	var recs []Record
	if ch.Group {
		recs = append(recs, encodeRecord(decodedRecord{kind: recStreamsGroup, group: groupID, sgroup: sg.GroupValue()}))
	}
	for _, id := range ch.Members {
		if v := sg.MemberValue(id); v != nil {
			recs = append(recs, encodeRecord(decodedRecord{kind: recStreamsMember, group: groupID, member: id, smember: v}))
		}
	}
	for _, id := range ch.Gone {
		recs = append(recs, encodeRecord(decodedRecord{kind: recStreamsMember, group: groupID, member: id}))
	}
	return recs
}

// streamsTombstones deletes a streams group's own records.
func streamsTombstones(g *group) []Record {
	var recs []Record
	for _, id := range g.streams.SortedMemberIDs() {
		recs = append(recs, encodeRecord(decodedRecord{kind: recStreamsMember, group: g.id, member: id}))
	}
	return append(recs, encodeRecord(decodedRecord{kind: recStreamsGroup, group: g.id}))
}

func (s *shard) scheduleStreamsSession(groupID, memberID string) {
	s.schedule(streamsSessionKey(groupID, memberID), s.cfg.Streams.SessionTimeout, func() {
		g := s.groups[groupID]
		if g == nil || g.streams == nil || g.streams.Members[memberID] == nil {
			return
		}
		s.stats.membersExpired.Add(1)
		s.log.Info("streams member session expired", attrGroup, groupID, attrMember, memberID)
		var ch streamsgroup.Changes
		g.streams.Remove(memberID, &ch)
		s.applyStreams(g, ch)
	})
}

// scheduleStreamsRevocation fences a member that has not given up its
// revoked tasks within its rebalance timeout.
func (s *shard) scheduleStreamsRevocation(groupID string, m *streamsgroup.Member) {
	key := streamsRevokeKey(groupID, m.ID)
	if s.scheduled(key) {
		return
	}
	memberID, epoch := m.ID, m.Epoch
	s.schedule(key, msDur(m.RebalanceTimeoutMs), func() {
		g := s.groups[groupID]
		if g == nil || g.streams == nil {
			return
		}
		cur := g.streams.Members[memberID]
		if cur == nil || cur.Epoch != epoch || cur.State != streamsgroup.UnrevokedTasks {
			return
		}
		s.log.Info("streams member fenced: tasks not revoked in time", attrGroup, groupID, attrMember, memberID, attrEpoch, epoch)
		var ch streamsgroup.Changes
		g.streams.Remove(memberID, &ch)
		s.applyStreams(g, ch)
	})
}

// streamsTopicsChanged reconfigures a streams group's topology against
// the topics as they are now.
func (s *shard) streamsTopicsChanged(g *group) {
	ch := g.streams.RecheckTopics(streamsTopics{s.cfg.Topics})
	if ch.Group || len(ch.Members) > 0 {
		s.log.Info("streams group topics changed", attrGroup, g.id, attrEpoch, g.streams.Epoch)
		s.applyStreams(g, ch)
	}
}

// validateStreamsCommit checks an OffsetCommit against a streams group:
// only a member at its current epoch commits (STALE_MEMBER_EPOCH
// otherwise), with OffsetCommit v9+; an empty group takes commits from
// outside it (admin tools).
func validateStreamsCommit(sg *streamsgroup.Group, memberID string, epoch int32, version int16) int16 {
	if epoch < 0 && len(sg.Members) == 0 {
		return 0
	}
	m := sg.Members[memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case version < 9:
		return kerr.UnsupportedVersion.Code
	case epoch != m.Epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// validateStreamsTxnCommit is validateStreamsCommit for TxnOffsetCommit,
// where the member fields are optional and a stale epoch is
// ILLEGAL_GENERATION (Kafka maps it so for transactional commits).
func validateStreamsTxnCommit(sg *streamsgroup.Group, req *kmsg.TxnOffsetCommitRequest) int16 {
	switch {
	case req.Generation < 0 && len(sg.Members) == 0:
		return 0
	case req.Generation == -1 && req.MemberID == "" && req.InstanceID == nil:
		return 0
	}
	m := sg.Members[req.MemberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case req.Generation != m.Epoch:
		return kerr.IllegalGeneration.Code
	}
	return 0
}

// validateStreamsFetch checks the member id and epoch of an OffsetFetch
// v9+ to a streams group. An admin fetch carries neither.
func validateStreamsFetch(sg *streamsgroup.Group, memberID *string, epoch int32) int16 {
	return validateMemberFetch(memberID, epoch, sg.MemberEpoch)
}

// replayStreams applies a stored streams group or member record.
func (s *shard) replayStreams(r decodedRecord) error {
	g := s.groups[r.group]
	if r.kind == recStreamsGroup && r.sgroup == nil {
		if g != nil && g.streams != nil {
			g.streams = nil
			g.classic = newClassicGroup()
			g.recorded = false
			s.forgetIfBare(g)
		}
		return nil
	}
	if r.kind == recStreamsMember && r.smember == nil {
		if g != nil && g.streams != nil {
			return g.streams.ReplayMember(r.member, nil)
		}
		return nil
	}
	g = s.replayGroup(r.group)
	if g.streams == nil {
		g.classic, g.consumer = nil, nil
		g.streams = s.newStreamsGroup(r.group)
	}
	g.recorded = true
	if r.kind == recStreamsGroup {
		return g.streams.ReplayGroup(r.sgroup)
	}
	return g.streams.ReplayMember(r.member, r.smember)
}

// streamsLoaded restarts a replayed streams group's member sessions and
// revocation timers, and reconfigures it against today's topics.
func (s *shard) streamsLoaded(g *group) {
	g.streamsEpoch = g.streams.Epoch
	for _, id := range g.streams.SortedMemberIDs() {
		s.scheduleStreamsSession(g.id, id)
		if m := g.streams.Members[id]; m.State == streamsgroup.UnrevokedTasks {
			s.scheduleStreamsRevocation(g.id, m)
		}
	}
	s.streamsTopicsChanged(g)
}

// dropEmptyStreamsGroup turns an empty streams group into a classic one
// for a JoinGroup or a consumer group heartbeat; its offsets stay.
func (s *shard) dropEmptyStreamsGroup(g *group) {
	if err := s.append(g.id, streamsTombstones(g)); err != nil {
		s.stats.appendErrors.Add(1)
	}
	for k := range s.timers {
		if k.group == g.id && k.kind != timerOffsetExpiry {
			s.cancel(k)
		}
	}
	s.log.Info("empty streams group becomes a classic group", attrGroup, g.id)
	g.streams = nil
	g.classic = newClassicGroup()
	g.classic.stateTime = s.now()
}
