package kraft

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sampleRequest is a request of key naming one item where the request
// has items.
func sampleRequest(tb testing.TB, key, version int16) kmsg.Request {
	req := kmsg.RequestForKey(key)
	req.SetVersion(version)
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic = "a"
		r.Topics = append(r.Topics, t)
	case *kmsg.DeleteTopicsRequest:
		r.TopicNames = []string{"a"}
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = kmsg.StringPtr("a")
		r.Topics = append(r.Topics, t)
	case *kmsg.CreatePartitionsRequest:
		t := kmsg.NewCreatePartitionsRequestTopic()
		t.Topic = "a"
		r.Topics = append(r.Topics, t)
	case *kmsg.ElectLeadersRequest:
		t := kmsg.NewElectLeadersRequestTopic()
		t.Topic, t.Partitions = "a", []int32{0, 1}
		r.Topics = append(r.Topics, t)
	case *kmsg.IncrementalAlterConfigsRequest:
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "a"
		r.Resources = append(r.Resources, res)
	case *kmsg.CreateACLsRequest:
		r.Creations = append(r.Creations, kmsg.NewCreateACLsRequestCreation())
	case *kmsg.DeleteACLsRequest:
		r.Filters = append(r.Filters, kmsg.NewDeleteACLsRequestFilter())
	case *kmsg.AlterClientQuotasRequest:
		e := kmsg.NewAlterClientQuotasRequestEntry()
		e.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: kmsg.StringPtr("a")}}
		r.Entries = append(r.Entries, e)
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		r.Deletions = append(r.Deletions, kmsg.AlterUserSCRAMCredentialsRequestDeletion{Name: "a", Mechanism: 1})
	case *kmsg.AlterConfigsRequest:
		res := kmsg.NewAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "a"
		r.Resources = append(r.Resources, res)
	case *kmsg.UpdateFeaturesRequest:
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature = "group.version"
		r.FeatureUpdates = append(r.FeatureUpdates, u)
	case *kmsg.DescribeQuorumRequest, *kmsg.AddRaftVoterRequest, *kmsg.RemoveRaftVoterRequest,
		*kmsg.AlterPartitionAssignmentsRequest, *kmsg.ListPartitionReassignmentsRequest, *kmsg.AlterPartitionRequest,
		*kmsg.BrokerRegistrationRequest, *kmsg.BrokerHeartbeatRequest, *kmsg.UnregisterBrokerRequest, *kmsg.AllocateProducerIDsRequest:
	default:
		tb.Fatalf("no sample for key %d", key)
	}
	return req
}

func TestNotControllerResponse(t *testing.T) {
	for _, k := range ControllerKeys {
		for v := k.Min; v <= k.Max; v++ {
			req := sampleRequest(t, k.Key, v)
			resp := NotControllerResponse(req)
			if resp == nil || resp.Key() != k.Key || resp.GetVersion() != v {
				t.Fatalf("%s v%d: %#v", kmsg.NameForKey(k.Key), v, resp)
			}
			if !IsNotController(resp) {
				t.Fatalf("%s v%d: IsNotController false on %#v", kmsg.NameForKey(k.Key), v, resp)
			}
			// Through the wire and back, it still says so.
			body := resp.AppendTo(nil)
			back := req.ResponseKind()
			back.SetVersion(v)
			if err := back.ReadFrom(body); err != nil {
				t.Fatalf("%s v%d: %v", kmsg.NameForKey(k.Key), v, err)
			}
			if !IsNotController(back) {
				t.Fatalf("%s v%d: decoded response lost NOT_CONTROLLER", kmsg.NameForKey(k.Key), v)
			}
			// A plain answer of the same kind is not NOT_CONTROLLER.
			if ok := req.ResponseKind(); IsNotController(ok) {
				t.Fatalf("%s v%d: an empty answer reads as NOT_CONTROLLER", kmsg.NameForKey(k.Key), v)
			}
		}
	}
	if NotControllerResponse(kmsg.NewPtrProduceRequest()) != nil {
		t.Fatal("produce got a NOT_CONTROLLER answer")
	}
	// One item answered otherwise: the request was decided.
	resp := kmsg.NewPtrCreateTopicsResponse()
	for _, code := range []int16{kerr.NotController.Code, 0} {
		t := kmsg.NewCreateTopicsResponseTopic()
		t.ErrorCode = code
		resp.Topics = append(resp.Topics, t)
	}
	if IsNotController(resp) {
		t.Fatal("a mixed answer reads as NOT_CONTROLLER")
	}
}
