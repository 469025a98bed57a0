package kraft

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// NotControllerResponse is the answer of a node that does not run the
// active controller: req's response kind at req's version, with
// NOT_CONTROLLER wherever the response carries an error code (the
// top-level code, or each item the request named). It returns nil for a
// request that is not one of the ControllerKeys.
func NotControllerResponse(req kmsg.Request) kmsg.Response {
	return ErrorResponse(req, kerr.NotController.Code)
}

// ErrorResponse is NotControllerResponse with another error code, for a
// broker answering a request it could not get decided (REQUEST_TIMED_OUT
// after a controller change, say).
func ErrorResponse(req kmsg.Request, code int16) kmsg.Response {
	switch r := req.(type) {
	case *kmsg.BrokerRegistrationRequest:
		resp := r.ResponseKind().(*kmsg.BrokerRegistrationResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.BrokerHeartbeatRequest:
		resp := r.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
		resp.ErrorCode = code
		resp.IsFenced = true
		return resp
	case *kmsg.UnregisterBrokerRequest:
		resp := r.ResponseKind().(*kmsg.UnregisterBrokerResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.AllocateProducerIDsRequest:
		resp := r.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.AlterPartitionRequest:
		resp := r.ResponseKind().(*kmsg.AlterPartitionResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.AlterPartitionAssignmentsRequest:
		resp := r.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.ListPartitionReassignmentsRequest:
		resp := r.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.CreateTopicsRequest:
		resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, t := range r.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic, st.ErrorCode = t.Topic, code
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.DeleteTopicsRequest:
		resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
		add := func(name *string, id [16]byte) {
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic, st.TopicID, st.ErrorCode = name, id, code
			resp.Topics = append(resp.Topics, st)
		}
		for _, name := range r.TopicNames {
			add(&name, [16]byte{})
		}
		for _, t := range r.Topics {
			add(t.Topic, t.TopicID)
		}
		return resp
	case *kmsg.CreatePartitionsRequest:
		resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
		for _, t := range r.Topics {
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic, st.ErrorCode = t.Topic, code
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.ElectLeadersRequest:
		resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
		resp.ErrorCode = code
		for _, t := range r.Topics {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = t.Topic
			for _, p := range t.Partitions {
				sp := kmsg.NewElectLeadersResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p, code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.IncrementalAlterConfigsRequest:
		resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		for _, rr := range r.Resources {
			out := kmsg.NewIncrementalAlterConfigsResponseResource()
			out.ResourceType, out.ResourceName, out.ErrorCode = rr.ResourceType, rr.ResourceName, code
			resp.Resources = append(resp.Resources, out)
		}
		return resp
	case *kmsg.CreateACLsRequest:
		resp := r.ResponseKind().(*kmsg.CreateACLsResponse)
		for range r.Creations {
			out := kmsg.NewCreateACLsResponseResult()
			out.ErrorCode = code
			resp.Results = append(resp.Results, out)
		}
		return resp
	case *kmsg.DeleteACLsRequest:
		resp := r.ResponseKind().(*kmsg.DeleteACLsResponse)
		for range r.Filters {
			out := kmsg.NewDeleteACLsResponseResult()
			out.ErrorCode = code
			resp.Results = append(resp.Results, out)
		}
		return resp
	case *kmsg.AlterClientQuotasRequest:
		resp := r.ResponseKind().(*kmsg.AlterClientQuotasResponse)
		for _, e := range r.Entries {
			out := kmsg.NewAlterClientQuotasResponseEntry()
			out.ErrorCode = code
			for _, p := range e.Entity {
				out.Entity = append(out.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: p.Type, Name: p.Name})
			}
			resp.Entries = append(resp.Entries, out)
		}
		return resp
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
		add := func(user string) {
			out := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			out.User, out.ErrorCode = user, code
			resp.Results = append(resp.Results, out)
		}
		for _, d := range r.Deletions {
			add(d.Name)
		}
		for _, u := range r.Upsertions {
			add(u.Name)
		}
		return resp
	case *kmsg.UpdateFeaturesRequest:
		resp := r.ResponseKind().(*kmsg.UpdateFeaturesResponse)
		resp.ErrorCode = code
		if r.Version < 2 {
			for _, u := range r.FeatureUpdates {
				res := kmsg.NewUpdateFeaturesResponseResult()
				res.Feature, res.ErrorCode = u.Feature, code
				resp.Results = append(resp.Results, res)
			}
		}
		return resp
	case *kmsg.DescribeQuorumRequest:
		resp := r.ResponseKind().(*kmsg.DescribeQuorumResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.AddRaftVoterRequest:
		resp := r.ResponseKind().(*kmsg.AddRaftVoterResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.RemoveRaftVoterRequest:
		resp := r.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.AlterConfigsRequest:
		resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
		for _, rr := range r.Resources {
			out := kmsg.NewAlterConfigsResponseResource()
			out.ResourceType, out.ResourceName, out.ErrorCode = rr.ResourceType, rr.ResourceName, code
			resp.Resources = append(resp.Resources, out)
		}
		return resp
	}
	return nil
}

// IsNotController reports whether resp says NOT_CONTROLLER: in its
// top-level error code, or, for responses without one, in every item
// (there must be at least one). The per-partition NOT_CONTROLLER the
// controller gives an AlterPartition whose epochs are ahead of its own is
// not counted: the partition leader retries that one itself.
func IsNotController(resp kmsg.Response) bool {
	code := kerr.NotController.Code
	all := func(n int, item func(i int) int16) bool {
		for i := range n {
			if item(i) != code {
				return false
			}
		}
		return n > 0
	}
	switch r := resp.(type) {
	case *kmsg.BrokerRegistrationResponse:
		return r.ErrorCode == code
	case *kmsg.BrokerHeartbeatResponse:
		return r.ErrorCode == code
	case *kmsg.UnregisterBrokerResponse:
		return r.ErrorCode == code
	case *kmsg.AllocateProducerIDsResponse:
		return r.ErrorCode == code
	case *kmsg.AlterPartitionResponse:
		return r.ErrorCode == code
	case *kmsg.AlterPartitionAssignmentsResponse:
		return r.ErrorCode == code
	case *kmsg.ListPartitionReassignmentsResponse:
		return r.ErrorCode == code
	case *kmsg.ElectLeadersResponse:
		if r.Version >= 1 {
			return r.ErrorCode == code
		}
		return all(len(r.Topics), func(i int) int16 {
			if len(r.Topics[i].Partitions) == 0 {
				return 0
			}
			return r.Topics[i].Partitions[0].ErrorCode
		})
	case *kmsg.CreateTopicsResponse:
		return all(len(r.Topics), func(i int) int16 { return r.Topics[i].ErrorCode })
	case *kmsg.DeleteTopicsResponse:
		return all(len(r.Topics), func(i int) int16 { return r.Topics[i].ErrorCode })
	case *kmsg.CreatePartitionsResponse:
		return all(len(r.Topics), func(i int) int16 { return r.Topics[i].ErrorCode })
	case *kmsg.IncrementalAlterConfigsResponse:
		return all(len(r.Resources), func(i int) int16 { return r.Resources[i].ErrorCode })
	case *kmsg.CreateACLsResponse:
		return all(len(r.Results), func(i int) int16 { return r.Results[i].ErrorCode })
	case *kmsg.DeleteACLsResponse:
		return all(len(r.Results), func(i int) int16 { return r.Results[i].ErrorCode })
	case *kmsg.AlterClientQuotasResponse:
		return all(len(r.Entries), func(i int) int16 { return r.Entries[i].ErrorCode })
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		return all(len(r.Results), func(i int) int16 { return r.Results[i].ErrorCode })
	case *kmsg.AlterConfigsResponse:
		return all(len(r.Resources), func(i int) int16 { return r.Resources[i].ErrorCode })
	case *kmsg.UpdateFeaturesResponse:
		return r.ErrorCode == code
	case *kmsg.DescribeQuorumResponse:
		return r.ErrorCode == code
	case *kmsg.AddRaftVoterResponse:
		return r.ErrorCode == code
	case *kmsg.RemoveRaftVoterResponse:
		return r.ErrorCode == code
	}
	return false
}
