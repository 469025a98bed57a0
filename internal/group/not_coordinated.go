package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// NotCoordinated answers a group request whose group this node does not
// coordinate (coordinates says which it does) with NOT_COORDINATOR in
// the fields Kafka puts it in for that request, so the client looks the
// coordinator up again; ok is false when the request is this node's to
// answer. An OffsetFetch v8+ naming several groups is answered
// NOT_COORDINATOR for all of them when any is elsewhere.
func NotCoordinated(body kmsg.Request, coordinates func(group string) bool) (resp kmsg.Response, ok bool) {
	code := kerr.NotCoordinator.Code
	switch r := body.(type) {
	case *kmsg.JoinGroupRequest:
		if coordinates(r.Group) {
			return nil, false
		}
		out := r.ResponseKind().(*kmsg.JoinGroupResponse)
		out.ErrorCode, out.Generation = code, -1
		return out, true
	case *kmsg.SyncGroupRequest:
		if coordinates(r.Group) {
			return nil, false
		}
		out := r.ResponseKind().(*kmsg.SyncGroupResponse)
		out.ErrorCode = code
		return out, true
	case *kmsg.HeartbeatRequest:
		if coordinates(r.Group) {
			return nil, false
		}
		out := r.ResponseKind().(*kmsg.HeartbeatResponse)
		out.ErrorCode = code
		return out, true
	case *kmsg.LeaveGroupRequest:
		if coordinates(r.Group) {
			return nil, false
		}
		out := r.ResponseKind().(*kmsg.LeaveGroupResponse)
		out.ErrorCode = code
		return out, true
	case *kmsg.ConsumerGroupHeartbeatRequest:
		if coordinates(r.Group) {
			return nil, false
		}
		out := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		out.ErrorCode = code
		return out, true
	case *kmsg.StreamsGroupHeartbeatRequest:
		if coordinates(r.Group) {
			return nil, false
		}
		out := r.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
		out.ErrorCode = code
		return out, true
	case *kmsg.OffsetDeleteRequest:
		if coordinates(r.Group) {
			return nil, false
		}
		out := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
		out.ErrorCode = code
		return out, true
	case *kmsg.OffsetCommitRequest:
		if coordinates(r.Group) {
			return nil, false
		}
		out := r.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, t := range r.Topics {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic, st.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p.Partition, code
				st.Partitions = append(st.Partitions, sp)
			}
			out.Topics = append(out.Topics, st)
		}
		return out, true
	case *kmsg.OffsetFetchRequest:
		if r.Version < 8 {
			if coordinates(r.Group) {
				return nil, false
			}
			out := r.ResponseKind().(*kmsg.OffsetFetchResponse)
			out.ErrorCode = code
			return out, true
		}
		for _, g := range r.Groups {
			if !coordinates(g.Group) {
				out := r.ResponseKind().(*kmsg.OffsetFetchResponse)
				for _, g := range r.Groups {
					rg := kmsg.NewOffsetFetchResponseGroup()
					rg.Group, rg.ErrorCode = g.Group, code
					out.Groups = append(out.Groups, rg)
				}
				return out, true
			}
		}
	}
	return nil, false
}
