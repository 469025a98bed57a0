package kraft

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/controller"
	"weir/internal/metadata"
	"weir/internal/wiretag"
)

// APIKeyRange is an API key the controller answers and the versions of it
// that it decodes and answers correctly.
type APIKeyRange struct {
	Key      int16
	Min, Max int16
}

// ControllerKeys are the requests HandleControllerRequest answers: the
// broker lifecycle (62, 63, 64, 67), the admin requests that change
// metadata (19, 20, 30, 31, 33, 37, 43, 44, 45, 46, 49, 51, 57), ISR
// changes (56) and the quorum's APIs (55, 80, 81; quorum_admin.go).
// Minimums are Kafka 4.x's; maximums what kmsg knows.
var ControllerKeys = []APIKeyRange{
	{Key: 19, Min: 2, Max: 7}, // CreateTopics
	{Key: 20, Min: 1, Max: 6}, // DeleteTopics
	{Key: 30, Min: 1, Max: 3}, // CreateAcls
	{Key: 31, Min: 1, Max: 3}, // DeleteAcls
	{Key: 33, Min: 0, Max: 2}, // AlterConfigs
	{Key: 37, Min: 0, Max: 3}, // CreatePartitions
	{Key: 43, Min: 0, Max: 2}, // ElectLeaders
	{Key: 44, Min: 0, Max: 1}, // IncrementalAlterConfigs
	{Key: 45, Min: 0, Max: 1}, // AlterPartitionReassignments
	{Key: 46, Min: 0, Max: 0}, // ListPartitionReassignments
	{Key: 49, Min: 0, Max: 1}, // AlterClientQuotas
	{Key: 51, Min: 0, Max: 0}, // AlterUserScramCredentials
	{Key: 55, Min: 0, Max: 2}, // DescribeQuorum
	{Key: 56, Min: 0, Max: 3}, // AlterPartition
	{Key: 57, Min: 0, Max: 2}, // UpdateFeatures
	{Key: 62, Min: 0, Max: 4}, // BrokerRegistration
	{Key: 63, Min: 0, Max: 2}, // BrokerHeartbeat
	{Key: 64, Min: 0, Max: 0}, // UnregisterBroker
	{Key: 67, Min: 0, Max: 0}, // AllocateProducerIds
	{Key: 80, Min: 0, Max: 1}, // AddRaftVoter
	{Key: 81, Min: 0, Max: 0}, // RemoveRaftVoter
}

// IsControllerKey reports whether HandleControllerRequest answers key.
func IsControllerKey(key int16) bool { return isControllerKey(key) }

func isControllerKey(key int16) bool {
	return slices.ContainsFunc(ControllerKeys, func(r APIKeyRange) bool { return r.Key == key })
}

// HandleControllerRequest is what a broker's Kafka handler calls for the
// ControllerKeys: on the node running the active controller it decides
// the request and returns the response once its batch is committed; on
// any other node (or while the controller changes hands) it returns the
// response with NOT_CONTROLLER in every error code, which a
// ControllerClient takes as the cue to find the controller again. An
// error is returned for a key this package does not handle and when ctx
// ends first. A request that asks for it (wiretag.ControllerOffset, sent
// by a KafkaClient) gets the offset at which its outcome committed in
// the response's tags.
func (n *Node) HandleControllerRequest(ctx context.Context, key int16, req kmsg.Request) (kmsg.Response, error) {
	resp, offset, err := n.handleControllerRequest(ctx, key, req)
	if err == nil && offset >= 0 {
		if tags := requestTags(req); tags != nil && wiretag.AsksControllerOffset(tags) {
			if rt := responseTags(resp); rt != nil {
				wiretag.SetControllerOffset(rt, offset)
			}
		}
	}
	return resp, err
}

// handleControllerRequest is HandleControllerRequest with the committed
// offset of the outcome (-1 for a NOT_CONTROLLER answer).
func (n *Node) handleControllerRequest(ctx context.Context, key int16, req kmsg.Request) (kmsg.Response, int64, error) {
	if req == nil || req.Key() != key || !isControllerKey(key) {
		return nil, -1, fmt.Errorf("%w: key %d", ErrUnsupportedRequest, key)
	}
	a, err := n.Controller()
	if err == nil {
		var (
			resp   kmsg.Response
			offset int64
		)
		if isQuorumKey(key) {
			resp, offset, err = n.handleQuorumRequest(ctx, a, req)
		} else {
			resp, offset, err = a.DoAt(ctx, req)
		}
		if err == nil {
			return resp, offset, nil
		}
	}
	if errors.Is(err, kerr.NotController) {
		return NotControllerResponse(req), -1, nil
	}
	return nil, -1, err
}

// requestTags and responseTags are a message's unknown tagged fields
// (every kmsg message of the ControllerKeys has them), nil when it has
// none.
func requestTags(m kmsg.Request) *kmsg.Tags   { return unknownTags(m) }
func responseTags(m kmsg.Response) *kmsg.Tags { return unknownTags(m) }

func unknownTags(m any) *kmsg.Tags {
	v := reflect.ValueOf(m)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	f := v.Elem().FieldByName("UnknownTags")
	if !f.IsValid() {
		return nil
	}
	tags, _ := f.Addr().Interface().(*kmsg.Tags)
	return tags
}

// decide runs one request on the controller. It is called on the
// controller's loop.
func decide(c *controller.Controller, req kmsg.Request) (kmsg.Response, []metadata.Record, error) {
	switch r := req.(type) {
	case *kmsg.BrokerRegistrationRequest:
		resp, recs := c.RegisterBroker(r)
		return resp, recs, nil
	case *kmsg.BrokerHeartbeatRequest:
		resp, recs := c.Heartbeat(r)
		return resp, recs, nil
	case *kmsg.UnregisterBrokerRequest:
		resp, recs := c.UnregisterBroker(r)
		return resp, recs, nil
	case *kmsg.AllocateProducerIDsRequest:
		resp, recs := c.AllocateProducerIDs(r)
		return resp, recs, nil
	case *kmsg.CreateTopicsRequest:
		resp, recs := c.CreateTopics(r)
		return resp, recs, nil
	case *kmsg.DeleteTopicsRequest:
		resp, recs := c.DeleteTopics(r)
		return resp, recs, nil
	case *kmsg.CreatePartitionsRequest:
		resp, recs := c.CreatePartitions(r)
		return resp, recs, nil
	case *kmsg.ElectLeadersRequest:
		resp, recs := c.ElectLeaders(r)
		return resp, recs, nil
	case *kmsg.AlterPartitionAssignmentsRequest:
		resp, recs := c.AlterPartitionReassignments(r)
		return resp, recs, nil
	case *kmsg.ListPartitionReassignmentsRequest:
		return c.ListPartitionReassignments(r), nil, nil
	case *kmsg.AlterPartitionRequest:
		resp, recs := c.AlterPartition(r)
		return resp, recs, nil
	case *kmsg.IncrementalAlterConfigsRequest:
		resp, recs := c.IncrementalAlterConfigs(r)
		return resp, recs, nil
	case *kmsg.AlterConfigsRequest:
		resp, recs := c.LegacyAlterConfigs(r)
		return resp, recs, nil
	case *kmsg.CreateACLsRequest:
		resp, recs := c.CreateAcls(r)
		return resp, recs, nil
	case *kmsg.DeleteACLsRequest:
		resp, recs := c.DeleteAcls(r)
		return resp, recs, nil
	case *kmsg.AlterClientQuotasRequest:
		resp, recs := c.AlterClientQuotas(r)
		return resp, recs, nil
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		resp, recs := c.AlterUserScramCredentials(r)
		return resp, recs, nil
	case *kmsg.UpdateFeaturesRequest:
		resp, recs := c.UpdateFeatures(r)
		return resp, recs, nil
	}
	return nil, nil, fmt.Errorf("%w: %s", ErrUnsupportedRequest, kmsg.NameForKey(req.Key()))
}
