package authz

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareGroupHeartbeat (API 76): READ on the group, else
// GROUP_AUTHORIZATION_FAILED; DESCRIBE on every subscribed topic, else
// TOPIC_AUTHORIZATION_FAILED.
func ShareGroupHeartbeat(c *Checker, _ Env, req *kmsg.ShareGroupHeartbeatRequest) *Outcome[*kmsg.ShareGroupHeartbeatRequest, *kmsg.ShareGroupHeartbeatResponse] {
	code := int16(0)
	switch {
	case !groupRead(c, req.GroupID):
		code = errGroup.Code
	case slices.ContainsFunc(req.SubscribedTopicNames, func(t string) bool { return !c.Allowed(OpDescribe, ResourceTopic, t) }):
		code = errTopic.Code
	default:
		return serve[*kmsg.ShareGroupHeartbeatRequest, *kmsg.ShareGroupHeartbeatResponse](req)
	}
	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.ErrorCode, resp.ErrorMessage = code, message(errorOf(code))
	return reject(req, resp)
}

// ShareGroupDescribe (API 77): as ConsumerGroupDescribe: DESCRIBE on each
// group; a group assigned a topic the principal may not DESCRIBE answers
// TOPIC_AUTHORIZATION_FAILED without its members; authorized operations
// when asked.
func ShareGroupDescribe(c *Checker, _ Env, req *kmsg.ShareGroupDescribeRequest) *Outcome[*kmsg.ShareGroupDescribeRequest, *kmsg.ShareGroupDescribeResponse] {
	kept, denied := split(req.GroupIDs, func(g *string) bool { return c.Allowed(OpDescribe, ResourceGroup, *g) },
		func(g *string) kmsg.ShareGroupDescribeResponseGroup {
			rg := kmsg.NewShareGroupDescribeResponseGroup()
			rg.GroupID, rg.ErrorCode, rg.ErrorMessage = *g, errGroup.Code, message(errGroup)
			return rg
		})
	o := pruned(req, denied, func() *kmsg.ShareGroupDescribeRequest { cp := *req; cp.GroupIDs = kept; return &cp },
		func(r *kmsg.ShareGroupDescribeResponse, d []kmsg.ShareGroupDescribeResponseGroup) {
			r.Groups = append(r.Groups, d...)
		})
	describe := c.can(OpDescribe, ResourceTopic)
	o.then(func(r *kmsg.ShareGroupDescribeResponse) {
		for i := range r.Groups {
			g := &r.Groups[i]
			if g.ErrorCode != 0 {
				continue
			}
			if slices.ContainsFunc(g.Members, func(m kmsg.ShareGroupDescribeResponseGroupMember) bool {
				return slices.ContainsFunc(m.Assignment.TopicPartitions, func(tp kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition) bool {
					return !describe(tp.Topic)
				})
			}) {
				rg := kmsg.NewShareGroupDescribeResponseGroup()
				msg := undescribedTopicsMessage
				rg.GroupID, rg.ErrorCode, rg.ErrorMessage = g.GroupID, errTopic.Code, &msg
				*g = rg
				continue
			}
			if req.IncludeAuthorizedOperations {
				g.AuthorizedOperations = c.Operations(ResourceGroup, g.GroupID)
			}
		}
	})
	return o
}

func groupIDOf(g *string) string {
	if g == nil {
		return ""
	}
	return *g
}

// ShareFetch (API 78): READ on the group, else the answer is
// GROUP_AUTHORIZATION_FAILED; READ on each topic, else its partitions
// answer TOPIC_AUTHORIZATION_FAILED, for their acknowledgements too,
// and nothing of them is acquired or acknowledged.
func ShareFetch(c *Checker, env Env, req *kmsg.ShareFetchRequest) *Outcome[*kmsg.ShareFetchRequest, *kmsg.ShareFetchResponse] {
	if req.GroupID != nil && *req.GroupID != "" && !groupRead(c, *req.GroupID) {
		resp := kmsg.NewPtrShareFetchResponse()
		resp.ErrorCode, resp.ErrorMessage = errGroup.Code, message(errGroup)
		return reject(req, resp)
	}
	read := c.can(OpRead, ResourceTopic)
	kept, denied := split(req.Topics, func(t *kmsg.ShareFetchRequestTopic) bool {
		name, ok := topicName(env, "", t.TopicID)
		return !ok || read(name)
	}, func(t *kmsg.ShareFetchRequestTopic) kmsg.ShareFetchResponseTopic {
		rt := kmsg.NewShareFetchResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewShareFetchResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, errTopic.Code
			if len(p.AcknowledgementBatches) > 0 {
				rp.AcknowledgeErrorCode = errTopic.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		return rt
	})
	return pruned(req, denied, func() *kmsg.ShareFetchRequest { cp := *req; cp.Topics = kept; return &cp },
		func(r *kmsg.ShareFetchResponse, d []kmsg.ShareFetchResponseTopic) { r.Topics = append(r.Topics, d...) })
}

// ShareAcknowledge (API 79): READ on the group, else the answer is
// GROUP_AUTHORIZATION_FAILED; READ on each topic, else its partitions
// answer TOPIC_AUTHORIZATION_FAILED and nothing of them is acknowledged.
func ShareAcknowledge(c *Checker, env Env, req *kmsg.ShareAcknowledgeRequest) *Outcome[*kmsg.ShareAcknowledgeRequest, *kmsg.ShareAcknowledgeResponse] {
	if g := groupIDOf(req.GroupID); g != "" && !groupRead(c, g) {
		resp := kmsg.NewPtrShareAcknowledgeResponse()
		resp.ErrorCode, resp.ErrorMessage = errGroup.Code, message(errGroup)
		return reject(req, resp)
	}
	read := c.can(OpRead, ResourceTopic)
	kept, denied := split(req.Topics, func(t *kmsg.ShareAcknowledgeRequestTopic) bool {
		name, ok := topicName(env, "", t.TopicID)
		return !ok || read(name)
	}, func(t *kmsg.ShareAcknowledgeRequestTopic) kmsg.ShareAcknowledgeResponseTopic {
		rt := kmsg.NewShareAcknowledgeResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, errTopic.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		return rt
	})
	return pruned(req, denied, func() *kmsg.ShareAcknowledgeRequest { cp := *req; cp.Topics = kept; return &cp },
		func(r *kmsg.ShareAcknowledgeResponse, d []kmsg.ShareAcknowledgeResponseTopic) {
			r.Topics = append(r.Topics, d...)
		})
}

// ReadShareGroupState (API 84), sent between brokers: CLUSTER_ACTION,
// else every partition answers CLUSTER_AUTHORIZATION_FAILED.
func ReadShareGroupState(c *Checker, _ Env, req *kmsg.ReadShareGroupStateRequest) *Outcome[*kmsg.ReadShareGroupStateRequest, *kmsg.ReadShareGroupStateResponse] {
	if c.AllowedCluster(OpClusterAction) {
		return serve[*kmsg.ReadShareGroupStateRequest, *kmsg.ReadShareGroupStateResponse](req)
	}
	resp := kmsg.NewPtrReadShareGroupStateResponse()
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, errCluster.Code, message(errCluster)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return reject(req, resp)
}

// WriteShareGroupState (API 85), sent between brokers: CLUSTER_ACTION,
// else every partition answers CLUSTER_AUTHORIZATION_FAILED.
func WriteShareGroupState(c *Checker, _ Env, req *kmsg.WriteShareGroupStateRequest) *Outcome[*kmsg.WriteShareGroupStateRequest, *kmsg.WriteShareGroupStateResponse] {
	if c.AllowedCluster(OpClusterAction) {
		return serve[*kmsg.WriteShareGroupStateRequest, *kmsg.WriteShareGroupStateResponse](req)
	}
	resp := kmsg.NewPtrWriteShareGroupStateResponse()
	for _, t := range req.Topics {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, errCluster.Code, message(errCluster)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return reject(req, resp)
}

// DescribeShareGroupOffsets (API 90): DESCRIBE on each group, else it
// answers GROUP_AUTHORIZATION_FAILED. A named topic without DESCRIBE
// answers TOPIC_AUTHORIZATION_FAILED per partition; a request for all of
// a group's offsets leaves such topics out.
func DescribeShareGroupOffsets(c *Checker, _ Env, req *kmsg.DescribeShareGroupOffsetsRequest) *Outcome[*kmsg.DescribeShareGroupOffsetsRequest, *kmsg.DescribeShareGroupOffsetsResponse] {
	describe := c.can(OpDescribe, ResourceTopic)
	o := serve[*kmsg.DescribeShareGroupOffsetsRequest, *kmsg.DescribeShareGroupOffsetsResponse](req)
	deniedGroups := map[string]bool{}
	deniedTopics := map[string][]kmsg.DescribeShareGroupOffsetsResponseGroupTopic{}
	all := map[string]bool{}
	var groups []kmsg.DescribeShareGroupOffsetsRequestGroup
	changed := false
	for _, g := range req.Groups {
		if !c.Allowed(OpDescribe, ResourceGroup, g.GroupID) {
			deniedGroups[g.GroupID], changed = true, true
			continue
		}
		if g.Topics == nil {
			all[g.GroupID] = true
			groups = append(groups, g)
			continue
		}
		kept, denied := split(g.Topics, func(t *kmsg.DescribeShareGroupOffsetsRequestGroupTopic) bool { return describe(t.Topic) },
			func(t *kmsg.DescribeShareGroupOffsetsRequestGroupTopic) kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
				rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
					rp.Partition, rp.StartOffset, rp.ErrorCode, rp.ErrorMessage = p, -1, errTopic.Code, message(errTopic)
					rt.Partitions = append(rt.Partitions, rp)
				}
				return rt
			})
		if len(denied) > 0 {
			changed = true
			g.Topics = append([]kmsg.DescribeShareGroupOffsetsRequestGroupTopic{}, kept...) // not nil: nil asks for all
			deniedTopics[g.GroupID] = denied
		}
		groups = append(groups, g)
	}
	if changed {
		cp := *req
		cp.Groups = groups
		o.Request, o.Partial = &cp, true
	}
	o.then(func(r *kmsg.DescribeShareGroupOffsetsResponse) {
		for i := range r.Groups {
			g := &r.Groups[i]
			if all[g.GroupID] {
				g.Topics = slices.DeleteFunc(g.Topics, func(t kmsg.DescribeShareGroupOffsetsResponseGroupTopic) bool { return !describe(t.Topic) })
			}
			if g.ErrorCode == 0 {
				g.Topics = append(g.Topics, deniedTopics[g.GroupID]...)
				delete(deniedTopics, g.GroupID)
			}
		}
		for _, g := range req.Groups {
			switch {
			case deniedGroups[g.GroupID]:
				delete(deniedGroups, g.GroupID)
				rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
				rg.GroupID, rg.ErrorCode, rg.ErrorMessage = g.GroupID, errGroup.Code, message(errGroup)
				r.Groups = append(r.Groups, rg)
			case len(deniedTopics[g.GroupID]) > 0: // the handler left the group out
				rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
				rg.GroupID, rg.Topics = g.GroupID, deniedTopics[g.GroupID]
				delete(deniedTopics, g.GroupID)
				r.Groups = append(r.Groups, rg)
			}
		}
	})
	return o
}

// AlterShareGroupOffsets (API 91): READ on the group, else the answer is
// GROUP_AUTHORIZATION_FAILED; READ on each topic, else its partitions
// answer TOPIC_AUTHORIZATION_FAILED and keep their start offsets.
func AlterShareGroupOffsets(c *Checker, _ Env, req *kmsg.AlterShareGroupOffsetsRequest) *Outcome[*kmsg.AlterShareGroupOffsetsRequest, *kmsg.AlterShareGroupOffsetsResponse] {
	if !groupRead(c, req.GroupID) {
		resp := kmsg.NewPtrAlterShareGroupOffsetsResponse()
		resp.ErrorCode, resp.ErrorMessage = errGroup.Code, message(errGroup)
		return reject(req, resp)
	}
	read := c.can(OpRead, ResourceTopic)
	kept, denied := split(req.Topics, func(t *kmsg.AlterShareGroupOffsetsRequestTopic) bool { return read(t.Topic) },
		func(t *kmsg.AlterShareGroupOffsetsRequestTopic) kmsg.AlterShareGroupOffsetsResponseTopic {
			rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, errTopic.Code, message(errTopic)
				rt.Partitions = append(rt.Partitions, rp)
			}
			return rt
		})
	return pruned(req, denied, func() *kmsg.AlterShareGroupOffsetsRequest { cp := *req; cp.Topics = kept; return &cp },
		func(r *kmsg.AlterShareGroupOffsetsResponse, d []kmsg.AlterShareGroupOffsetsResponseTopic) {
			r.Topics = append(r.Topics, d...)
		})
}

// DeleteShareGroupOffsets (API 92): DELETE on the group, else the answer
// is GROUP_AUTHORIZATION_FAILED; READ on each topic, else it answers
// TOPIC_AUTHORIZATION_FAILED and keeps its state.
func DeleteShareGroupOffsets(c *Checker, _ Env, req *kmsg.DeleteShareGroupOffsetsRequest) *Outcome[*kmsg.DeleteShareGroupOffsetsRequest, *kmsg.DeleteShareGroupOffsetsResponse] {
	if !c.Allowed(OpDelete, ResourceGroup, req.GroupID) {
		resp := kmsg.NewPtrDeleteShareGroupOffsetsResponse()
		resp.ErrorCode, resp.ErrorMessage = errGroup.Code, message(errGroup)
		return reject(req, resp)
	}
	read := c.can(OpRead, ResourceTopic)
	kept, denied := split(req.Topics, func(t *kmsg.DeleteShareGroupOffsetsRequestTopic) bool { return read(t.Topic) },
		func(t *kmsg.DeleteShareGroupOffsetsRequestTopic) kmsg.DeleteShareGroupOffsetsResponseTopic {
			rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, errTopic.Code, message(errTopic)
			return rt
		})
	return pruned(req, denied, func() *kmsg.DeleteShareGroupOffsetsRequest { cp := *req; cp.Topics = kept; return &cp },
		func(r *kmsg.DeleteShareGroupOffsetsResponse, d []kmsg.DeleteShareGroupOffsetsResponseTopic) {
			r.Topics = append(r.Topics, d...)
		})
}
