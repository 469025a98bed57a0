package authz

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupRead is the READ on its group that every request of a group
// member needs.
func groupRead(c *Checker, group string) bool { return c.Allowed(OpRead, ResourceGroup, group) }

// OffsetCommit (API 8): READ on the group, else every partition answers
// GROUP_AUTHORIZATION_FAILED; READ on each topic, else its partitions
// answer TOPIC_AUTHORIZATION_FAILED and are not committed.
func OffsetCommit(c *Checker, env Env, req *kmsg.OffsetCommitRequest) *Outcome[*kmsg.OffsetCommitRequest, *kmsg.OffsetCommitResponse] {
	answer := func(t *kmsg.OffsetCommitRequestTopic, code int16) kmsg.OffsetCommitResponseTopic {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		return rt
	}
	if !groupRead(c, req.Group) {
		resp := kmsg.NewPtrOffsetCommitResponse()
		for i := range req.Topics {
			resp.Topics = append(resp.Topics, answer(&req.Topics[i], errGroup.Code))
		}
		return reject(req, resp)
	}
	read := c.can(OpRead, ResourceTopic)
	kept, denied := split(req.Topics, func(t *kmsg.OffsetCommitRequestTopic) bool {
		name, ok := topicName(env, t.Topic, t.TopicID)
		return !ok || read(name)
	}, func(t *kmsg.OffsetCommitRequestTopic) kmsg.OffsetCommitResponseTopic { return answer(t, errTopic.Code) })
	return pruned(req, denied, func() *kmsg.OffsetCommitRequest { cp := *req; cp.Topics = kept; return &cp },
		func(r *kmsg.OffsetCommitResponse, d []kmsg.OffsetCommitResponseTopic) {
			r.Topics = append(r.Topics, d...)
		})
}

// OffsetFetch (API 9): DESCRIBE on each group, else the group answers
// GROUP_AUTHORIZATION_FAILED (before version 8, the request's one group:
// the top-level error, and each partition's before version 2). Offsets
// are shown only for topics the principal may DESCRIBE: a named topic
// without it answers TOPIC_AUTHORIZATION_FAILED per partition, and a
// request for all of a group's offsets leaves such topics out.
func OffsetFetch(c *Checker, env Env, req *kmsg.OffsetFetchRequest) *Outcome[*kmsg.OffsetFetchRequest, *kmsg.OffsetFetchResponse] {
	describe := c.can(OpDescribe, ResourceTopic)
	if req.Version < 8 {
		return offsetFetchOld(c, req, describe)
	}
	o := serve[*kmsg.OffsetFetchRequest, *kmsg.OffsetFetchResponse](req)
	type denials struct {
		group  *kmsg.OffsetFetchResponseGroup // the whole group
		topics []kmsg.OffsetFetchResponseGroupTopic
		all    bool // filter the group's topics
	}
	byGroup := map[string]*denials{}
	var groups []kmsg.OffsetFetchRequestGroup
	changed := false
	for _, g := range req.Groups {
		if !c.Allowed(OpDescribe, ResourceGroup, g.Group) {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, errGroup.Code
			byGroup[g.Group] = &denials{group: &rg}
			changed = true
			continue
		}
		if g.Topics == nil {
			byGroup[g.Group] = &denials{all: true}
			groups = append(groups, g)
			continue
		}
		kept, denied := split(g.Topics, func(t *kmsg.OffsetFetchRequestGroupTopic) bool {
			name, ok := topicName(env, t.Topic, t.TopicID)
			return !ok || describe(name)
		}, func(t *kmsg.OffsetFetchRequestGroupTopic) kmsg.OffsetFetchResponseGroupTopic {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset, rp.ErrorCode = p, -1, errTopic.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			return rt
		})
		if len(denied) > 0 {
			changed = true
			g.Topics = append([]kmsg.OffsetFetchRequestGroupTopic{}, kept...) // not nil: nil asks for all
			byGroup[g.Group] = &denials{topics: denied}
		}
		groups = append(groups, g)
	}
	if changed {
		cp := *req
		cp.Groups = groups
		o.Request, o.Partial = &cp, true
	}
	if len(byGroup) == 0 {
		return o
	}
	o.then(func(r *kmsg.OffsetFetchResponse) {
		seen := map[string]bool{}
		for i := range r.Groups {
			g := &r.Groups[i]
			d := byGroup[g.Group]
			if d == nil || seen[g.Group] {
				continue
			}
			seen[g.Group] = true
			if d.all {
				g.Topics = slices.DeleteFunc(g.Topics, func(t kmsg.OffsetFetchResponseGroupTopic) bool {
					name, ok := topicName(env, t.Topic, t.TopicID)
					return ok && !describe(name)
				})
			}
			if g.ErrorCode == 0 {
				g.Topics = append(g.Topics, d.topics...)
			}
		}
		for _, g := range req.Groups {
			d := byGroup[g.Group]
			if d == nil || seen[g.Group] {
				continue
			}
			seen[g.Group] = true
			switch {
			case d.group != nil:
				r.Groups = append(r.Groups, *d.group)
			case len(d.topics) > 0: // the handler left the group out
				rg := kmsg.NewOffsetFetchResponseGroup()
				rg.Group, rg.Topics = g.Group, d.topics
				r.Groups = append(r.Groups, rg)
			}
		}
	})
	return o
}

func offsetFetchOld(c *Checker, req *kmsg.OffsetFetchRequest, describe func(string) bool) *Outcome[*kmsg.OffsetFetchRequest, *kmsg.OffsetFetchResponse] {
	if !c.Allowed(OpDescribe, ResourceGroup, req.Group) {
		resp := kmsg.NewPtrOffsetFetchResponse()
		resp.ErrorCode = errGroup.Code
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset = p, -1
				if req.Version < 2 {
					rp.ErrorCode = errGroup.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return reject(req, resp)
	}
	if req.Topics == nil {
		o := serve[*kmsg.OffsetFetchRequest, *kmsg.OffsetFetchResponse](req)
		o.then(func(r *kmsg.OffsetFetchResponse) {
			r.Topics = slices.DeleteFunc(r.Topics, func(t kmsg.OffsetFetchResponseTopic) bool { return !describe(t.Topic) })
		})
		return o
	}
	kept, denied := split(req.Topics, func(t *kmsg.OffsetFetchRequestTopic) bool { return describe(t.Topic) },
		func(t *kmsg.OffsetFetchRequestTopic) kmsg.OffsetFetchResponseTopic {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.ErrorCode = p, -1, errTopic.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			return rt
		})
	return pruned(req, denied, func() *kmsg.OffsetFetchRequest {
		cp := *req
		cp.Topics = append([]kmsg.OffsetFetchRequestTopic{}, kept...) // not nil: nil asks for all
		return &cp
	}, func(r *kmsg.OffsetFetchResponse, d []kmsg.OffsetFetchResponseTopic) {
		r.Topics = append(r.Topics, d...)
	})
}

// Coordinator key types of FindCoordinator.
const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
	coordinatorShare       = 2
)

// FindCoordinator (API 10): a group key needs DESCRIBE on the group
// (GROUP_AUTHORIZATION_FAILED), a transactional one DESCRIBE on the
// transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED): per key from
// version 4, the whole answer before. Share keys, which only brokers
// look up, need CLUSTER_ACTION: without it the whole request answers
// CLUSTER_AUTHORIZATION_FAILED.
func FindCoordinator(c *Checker, _ Env, req *kmsg.FindCoordinatorRequest) *Outcome[*kmsg.FindCoordinatorRequest, *kmsg.FindCoordinatorResponse] {
	keyError := func(key string) *kmsg.FindCoordinatorResponseCoordinator {
		var e = errGroup
		switch req.CoordinatorType {
		case coordinatorGroup:
			if c.Allowed(OpDescribe, ResourceGroup, key) {
				return nil
			}
		case coordinatorTransaction:
			if c.Allowed(OpDescribe, ResourceTransactionalID, key) {
				return nil
			}
			e = errTxn
		default:
			return nil
		}
		rc := kmsg.NewFindCoordinatorResponseCoordinator()
		rc.Key, rc.ErrorCode, rc.NodeID, rc.Port = key, e.Code, -1, -1
		return &rc
	}
	whole := func(code int16, msg *string) *Outcome[*kmsg.FindCoordinatorRequest, *kmsg.FindCoordinatorResponse] {
		resp := kmsg.NewPtrFindCoordinatorResponse()
		if req.Version < 4 {
			resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Port = code, msg, -1, -1
		}
		for _, k := range req.CoordinatorKeys {
			rc := kmsg.NewFindCoordinatorResponseCoordinator()
			rc.Key, rc.ErrorCode, rc.ErrorMessage, rc.NodeID, rc.Port = k, code, msg, -1, -1
			resp.Coordinators = append(resp.Coordinators, rc)
		}
		return reject(req, resp)
	}
	if req.CoordinatorType == coordinatorShare && !c.AllowedCluster(OpClusterAction) {
		return whole(errCluster.Code, message(errCluster))
	}
	if req.Version < 4 {
		if rc := keyError(req.CoordinatorKey); rc != nil {
			return whole(rc.ErrorCode, message(errorOf(rc.ErrorCode)))
		}
		return serve[*kmsg.FindCoordinatorRequest, *kmsg.FindCoordinatorResponse](req)
	}
	var kept []string
	var denied []kmsg.FindCoordinatorResponseCoordinator
	for _, k := range req.CoordinatorKeys {
		if rc := keyError(k); rc != nil {
			denied = append(denied, *rc)
		} else {
			kept = append(kept, k)
		}
	}
	return pruned(req, denied, func() *kmsg.FindCoordinatorRequest { cp := *req; cp.CoordinatorKeys = kept; return &cp },
		func(r *kmsg.FindCoordinatorResponse, d []kmsg.FindCoordinatorResponseCoordinator) {
			r.Coordinators = append(r.Coordinators, d...)
		})
}

// JoinGroup (API 11): READ on the group, else the answer is
// GROUP_AUTHORIZATION_FAILED.
func JoinGroup(c *Checker, _ Env, req *kmsg.JoinGroupRequest) *Outcome[*kmsg.JoinGroupRequest, *kmsg.JoinGroupResponse] {
	if groupRead(c, req.Group) {
		return serve[*kmsg.JoinGroupRequest, *kmsg.JoinGroupResponse](req)
	}
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.ErrorCode = errGroup.Code
	if req.Version < 7 {
		resp.Protocol = new(string)
	}
	return reject(req, resp)
}

// Heartbeat (API 12): READ on the group.
func Heartbeat(c *Checker, _ Env, req *kmsg.HeartbeatRequest) *Outcome[*kmsg.HeartbeatRequest, *kmsg.HeartbeatResponse] {
	if groupRead(c, req.Group) {
		return serve[*kmsg.HeartbeatRequest, *kmsg.HeartbeatResponse](req)
	}
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.ErrorCode = errGroup.Code
	return reject(req, resp)
}

// LeaveGroup (API 13): READ on the group.
func LeaveGroup(c *Checker, _ Env, req *kmsg.LeaveGroupRequest) *Outcome[*kmsg.LeaveGroupRequest, *kmsg.LeaveGroupResponse] {
	if groupRead(c, req.Group) {
		return serve[*kmsg.LeaveGroupRequest, *kmsg.LeaveGroupResponse](req)
	}
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.ErrorCode = errGroup.Code
	return reject(req, resp)
}

// SyncGroup (API 14): READ on the group.
func SyncGroup(c *Checker, _ Env, req *kmsg.SyncGroupRequest) *Outcome[*kmsg.SyncGroupRequest, *kmsg.SyncGroupResponse] {
	if groupRead(c, req.Group) {
		return serve[*kmsg.SyncGroupRequest, *kmsg.SyncGroupResponse](req)
	}
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.ErrorCode = errGroup.Code
	return reject(req, resp)
}

// DescribeGroups (API 15): DESCRIBE on each group, else it answers
// GROUP_AUTHORIZATION_FAILED; the groups described carry their
// authorized operations when asked (version 3 on).
func DescribeGroups(c *Checker, _ Env, req *kmsg.DescribeGroupsRequest) *Outcome[*kmsg.DescribeGroupsRequest, *kmsg.DescribeGroupsResponse] {
	kept, denied := split(req.Groups, func(g *string) bool { return c.Allowed(OpDescribe, ResourceGroup, *g) },
		func(g *string) kmsg.DescribeGroupsResponseGroup {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode, rg.ErrorMessage = *g, errGroup.Code, message(errGroup)
			return rg
		})
	o := pruned(req, denied, func() *kmsg.DescribeGroupsRequest { cp := *req; cp.Groups = kept; return &cp },
		func(r *kmsg.DescribeGroupsResponse, d []kmsg.DescribeGroupsResponseGroup) {
			r.Groups = append(r.Groups, d...)
		})
	if req.Version >= 3 && req.IncludeAuthorizedOperations {
		o.then(func(r *kmsg.DescribeGroupsResponse) {
			for i := range r.Groups {
				if g := &r.Groups[i]; g.ErrorCode == 0 {
					g.AuthorizedOperations = c.Operations(ResourceGroup, g.Group)
				}
			}
		})
	}
	return o
}

// ListGroups (API 16): with DESCRIBE on the cluster every group is
// listed; otherwise only the groups the principal may DESCRIBE.
func ListGroups(c *Checker, _ Env, req *kmsg.ListGroupsRequest) *Outcome[*kmsg.ListGroupsRequest, *kmsg.ListGroupsResponse] {
	o := serve[*kmsg.ListGroupsRequest, *kmsg.ListGroupsResponse](req)
	if !c.AllowedCluster(OpDescribe) {
		o.then(func(r *kmsg.ListGroupsResponse) {
			r.Groups = slices.DeleteFunc(r.Groups, func(g kmsg.ListGroupsResponseGroup) bool {
				return !c.Allowed(OpDescribe, ResourceGroup, g.Group)
			})
		})
	}
	return o
}

// DeleteGroups (API 42): DELETE on each group, else it answers
// GROUP_AUTHORIZATION_FAILED and is kept.
func DeleteGroups(c *Checker, _ Env, req *kmsg.DeleteGroupsRequest) *Outcome[*kmsg.DeleteGroupsRequest, *kmsg.DeleteGroupsResponse] {
	kept, denied := split(req.Groups, func(g *string) bool { return c.Allowed(OpDelete, ResourceGroup, *g) },
		func(g *string) kmsg.DeleteGroupsResponseGroup {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = *g, errGroup.Code
			return rg
		})
	return pruned(req, denied, func() *kmsg.DeleteGroupsRequest { cp := *req; cp.Groups = kept; return &cp },
		func(r *kmsg.DeleteGroupsResponse, d []kmsg.DeleteGroupsResponseGroup) {
			r.Groups = append(r.Groups, d...)
		})
}

// OffsetDelete (API 47): DELETE on the group, else the answer is
// GROUP_AUTHORIZATION_FAILED; READ on each topic, else its partitions
// answer TOPIC_AUTHORIZATION_FAILED and keep their offsets.
func OffsetDelete(c *Checker, _ Env, req *kmsg.OffsetDeleteRequest) *Outcome[*kmsg.OffsetDeleteRequest, *kmsg.OffsetDeleteResponse] {
	if !c.Allowed(OpDelete, ResourceGroup, req.Group) {
		resp := kmsg.NewPtrOffsetDeleteResponse()
		resp.ErrorCode = errGroup.Code
		return reject(req, resp)
	}
	read := c.can(OpRead, ResourceTopic)
	kept, denied := split(req.Topics, func(t *kmsg.OffsetDeleteRequestTopic) bool { return read(t.Topic) },
		func(t *kmsg.OffsetDeleteRequestTopic) kmsg.OffsetDeleteResponseTopic {
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetDeleteResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, errTopic.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			return rt
		})
	return pruned(req, denied, func() *kmsg.OffsetDeleteRequest { cp := *req; cp.Topics = kept; return &cp },
		func(r *kmsg.OffsetDeleteResponse, d []kmsg.OffsetDeleteResponseTopic) {
			r.Topics = append(r.Topics, d...)
		})
}

// ConsumerGroupHeartbeat (API 68): READ on the group, else
// GROUP_AUTHORIZATION_FAILED; DESCRIBE on every subscribed topic name,
// else TOPIC_AUTHORIZATION_FAILED. Topics a subscription regex matches
// are for the group coordinator to filter with DescribableTopics.
func ConsumerGroupHeartbeat(c *Checker, _ Env, req *kmsg.ConsumerGroupHeartbeatRequest) *Outcome[*kmsg.ConsumerGroupHeartbeatRequest, *kmsg.ConsumerGroupHeartbeatResponse] {
	code := int16(0)
	switch {
	case !groupRead(c, req.Group):
		code = errGroup.Code
	case slices.ContainsFunc(req.SubscribedTopicNames, func(t string) bool { return !c.Allowed(OpDescribe, ResourceTopic, t) }):
		code = errTopic.Code
	default:
		return serve[*kmsg.ConsumerGroupHeartbeatRequest, *kmsg.ConsumerGroupHeartbeatResponse](req)
	}
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.ErrorCode, resp.ErrorMessage = code, message(errorOf(code))
	return reject(req, resp)
}

// DescribableTopics returns the topics of names the principal may
// DESCRIBE, in order: what a regex subscription may match.
func (c *Checker) DescribableTopics(names []string) []string {
	return slices.DeleteFunc(slices.Clone(names), func(t string) bool { return !c.Allowed(OpDescribe, ResourceTopic, t) })
}

// undescribedTopicsMessage is Kafka's message for a group whose members
// use topics the principal may not DESCRIBE.
const undescribedTopicsMessage = "The group has described topic(s) that the client is not authorized to describe."

// ConsumerGroupDescribe (API 69): DESCRIBE on each group, else it
// answers GROUP_AUTHORIZATION_FAILED. A group whose members are assigned
// (or targeted) a topic the principal may not DESCRIBE answers
// TOPIC_AUTHORIZATION_FAILED without its members. Described groups carry
// their authorized operations when asked.
func ConsumerGroupDescribe(c *Checker, _ Env, req *kmsg.ConsumerGroupDescribeRequest) *Outcome[*kmsg.ConsumerGroupDescribeRequest, *kmsg.ConsumerGroupDescribeResponse] {
	kept, denied := split(req.Groups, func(g *string) bool { return c.Allowed(OpDescribe, ResourceGroup, *g) },
		func(g *string) kmsg.ConsumerGroupDescribeResponseGroup {
			rg := kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group, rg.ErrorCode, rg.ErrorMessage = *g, errGroup.Code, message(errGroup)
			return rg
		})
	o := pruned(req, denied, func() *kmsg.ConsumerGroupDescribeRequest { cp := *req; cp.Groups = kept; return &cp },
		func(r *kmsg.ConsumerGroupDescribeResponse, d []kmsg.ConsumerGroupDescribeResponseGroup) {
			r.Groups = append(r.Groups, d...)
		})
	describe := c.can(OpDescribe, ResourceTopic)
	o.then(func(r *kmsg.ConsumerGroupDescribeResponse) {
		for i := range r.Groups {
			g := &r.Groups[i]
			if g.ErrorCode != 0 {
				continue
			}
			hidden := slices.ContainsFunc(g.Members, func(m kmsg.ConsumerGroupDescribeResponseGroupMember) bool {
				undescribed := func(tp kmsg.AssignmentTopicPartition) bool { return !describe(tp.Topic) }
				return slices.ContainsFunc(m.Assignment.TopicPartitions, undescribed) ||
					slices.ContainsFunc(m.TargetAssignment.TopicPartitions, undescribed)
			})
			if hidden {
				rg := kmsg.NewConsumerGroupDescribeResponseGroup()
				msg := undescribedTopicsMessage
				rg.Group, rg.ErrorCode, rg.ErrorMessage = g.Group, errTopic.Code, &msg
				*g = rg
				continue
			}
			if req.IncludeAuthorizedOperations {
				g.AuthorizedOperations = c.Operations(ResourceGroup, g.Group)
			}
		}
	})
	return o
}
