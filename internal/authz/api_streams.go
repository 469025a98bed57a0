package authz

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// topologyTopics returns every topic a streams topology names: source,
// repartition sink and source, and changelog topics.
func topologyTopics(t *kmsg.StreamsGroupHeartbeatRequestTopology) []string {
	var out []string
	for _, s := range t.Subtopologies {
		out = append(out, s.SourceTopics...)
		out = append(out, s.RepartitionSinkTopics...)
		for _, ti := range s.RepartitionSourceTopics {
			out = append(out, ti.Topic)
		}
		for _, ti := range s.StateChangelogTopics {
			out = append(out, ti.Topic)
		}
	}
	return out
}

// StreamsGroupHeartbeat (API 88): READ on the group, else
// GROUP_AUTHORIZATION_FAILED; with a topology (a member joining), DESCRIBE
// on every topic it names, else TOPIC_AUTHORIZATION_FAILED. A topology
// naming one of Kafka's internal topics or an invalid name is served
// without that check: Kafka refuses it first, and so does the group
// coordinator (STREAMS_INVALID_TOPOLOGY), having changed nothing. The
// internal topics the broker creates for the group need CREATE on the
// cluster or on each topic (Creatable).
func StreamsGroupHeartbeat(c *Checker, _ Env, req *kmsg.StreamsGroupHeartbeatRequest) *Outcome[*kmsg.StreamsGroupHeartbeatRequest, *kmsg.StreamsGroupHeartbeatResponse] {
	resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	switch {
	case !groupRead(c, req.Group):
		resp.ErrorCode, resp.ErrorMessage = errGroup.Code, message(errGroup)
	case req.Topology != nil:
		names := topologyTopics(req.Topology)
		if slices.ContainsFunc(names, func(t string) bool { return metadata.InternalTopic(t) || metadata.ValidTopicName(t) != nil }) {
			return serve[*kmsg.StreamsGroupHeartbeatRequest, *kmsg.StreamsGroupHeartbeatResponse](req)
		}
		var denied []string
		for _, t := range names {
			if !c.Allowed(OpDescribe, ResourceTopic, t) && !slices.Contains(denied, t) {
				denied = append(denied, t)
			}
		}
		if len(denied) == 0 {
			return serve[*kmsg.StreamsGroupHeartbeatRequest, *kmsg.StreamsGroupHeartbeatResponse](req)
		}
		msg := "Topics " + strings.Join(denied, ",") + " are not authorized."
		resp.ErrorCode, resp.ErrorMessage = errTopic.Code, &msg
	default:
		return serve[*kmsg.StreamsGroupHeartbeatRequest, *kmsg.StreamsGroupHeartbeatResponse](req)
	}
	return reject(req, resp)
}

// Creatable splits topics into those the principal may create (CREATE on
// the cluster, or on the topic) and the others, as Kafka's broker does
// before it creates a streams group's internal topics.
func (c *Checker) Creatable(topics []string) (allowed, denied []string) {
	if c == nil || c.AllowedCluster(OpCreate) {
		return topics, nil
	}
	for _, t := range topics {
		if c.Allowed(OpCreate, ResourceTopic, t) {
			allowed = append(allowed, t)
		} else {
			denied = append(denied, t)
		}
	}
	return allowed, denied
}

// StreamsGroupDescribe (API 89): DESCRIBE on each group, else it answers
// GROUP_AUTHORIZATION_FAILED. A group whose topology names a topic the
// principal may not DESCRIBE answers TOPIC_AUTHORIZATION_FAILED without
// its topology and members. Described groups carry their authorized
// operations when asked.
func StreamsGroupDescribe(c *Checker, _ Env, req *kmsg.StreamsGroupDescribeRequest) *Outcome[*kmsg.StreamsGroupDescribeRequest, *kmsg.StreamsGroupDescribeResponse] {
	kept, denied := split(req.Groups, func(g *string) bool { return c.Allowed(OpDescribe, ResourceGroup, *g) },
		func(g *string) kmsg.StreamsGroupDescribeResponseGroup {
			rg := kmsg.NewStreamsGroupDescribeResponseGroup()
			rg.Group, rg.ErrorCode, rg.ErrorMessage = *g, errGroup.Code, message(errGroup)
			return rg
		})
	o := pruned(req, denied, func() *kmsg.StreamsGroupDescribeRequest { cp := *req; cp.Groups = kept; return &cp },
		func(r *kmsg.StreamsGroupDescribeResponse, d []kmsg.StreamsGroupDescribeResponseGroup) {
			r.Groups = append(r.Groups, d...)
		})
	describe := c.can(OpDescribe, ResourceTopic)
	o.then(func(r *kmsg.StreamsGroupDescribeResponse) {
		for i := range r.Groups {
			g := &r.Groups[i]
			if g.ErrorCode != 0 {
				continue
			}
			if g.Topology != nil && slices.ContainsFunc(g.Topology.Subtopologies, func(s kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology) bool {
				undescribed := func(ti kmsg.TopicInfo) bool { return !describe(ti.Topic) }
				return slices.ContainsFunc(s.SourceTopics, func(t string) bool { return !describe(t) }) ||
					slices.ContainsFunc(s.RepartitionSinkTopics, func(t string) bool { return !describe(t) }) ||
					slices.ContainsFunc(s.RepartitionSourceTopics, undescribed) || slices.ContainsFunc(s.StateChangelogTopics, undescribed)
			}) {
				rg := kmsg.NewStreamsGroupDescribeResponseGroup()
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
