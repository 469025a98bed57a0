package kraft

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/controller"
	"weir/internal/metadata"
)

// APIKeyRange is an API key the controller answers and the versions of it
// that it decodes and answers correctly.
type APIKeyRange struct {
	Key      int16
	Min, Max int16
}

// ControllerKeys are the requests HandleControllerRequest answers: the
// broker lifecycle (62, 63, 64, 67), the admin requests that change
// metadata (19, 20, 30, 31, 37, 43, 44, 45, 46, 49, 51) and ISR changes
// (56). Minimums are Kafka 4.x's; maximums what kmsg knows.
var ControllerKeys = []APIKeyRange{
	{Key: 19, Min: 2, Max: 7}, // CreateTopics
	{Key: 20, Min: 1, Max: 6}, // DeleteTopics
	{Key: 30, Min: 1, Max: 3}, // CreateAcls
	{Key: 31, Min: 1, Max: 3}, // DeleteAcls
	{Key: 37, Min: 0, Max: 3}, // CreatePartitions
	{Key: 43, Min: 0, Max: 2}, // ElectLeaders
	{Key: 44, Min: 0, Max: 1}, // IncrementalAlterConfigs
	{Key: 45, Min: 0, Max: 1}, // AlterPartitionReassignments
	{Key: 46, Min: 0, Max: 0}, // ListPartitionReassignments
	{Key: 49, Min: 0, Max: 1}, // AlterClientQuotas
	{Key: 51, Min: 0, Max: 0}, // AlterUserScramCredentials
	{Key: 56, Min: 0, Max: 3}, // AlterPartition
	{Key: 62, Min: 0, Max: 4}, // BrokerRegistration
	{Key: 63, Min: 0, Max: 2}, // BrokerHeartbeat
	{Key: 64, Min: 0, Max: 0}, // UnregisterBroker
	{Key: 67, Min: 0, Max: 0}, // AllocateProducerIds
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
// ends first.
func (n *Node) HandleControllerRequest(ctx context.Context, key int16, req kmsg.Request) (kmsg.Response, error) {
	if req == nil || req.Key() != key || !isControllerKey(key) {
		return nil, fmt.Errorf("%w: key %d", ErrUnsupportedRequest, key)
	}
	a, err := n.Controller()
	if err == nil {
		var resp kmsg.Response
		resp, err = a.Do(ctx, req)
		if err == nil {
			return resp, nil
		}
	}
	if errors.Is(err, kerr.NotController) {
		return NotControllerResponse(req), nil
	}
	return nil, err
}

// decide runs one request on the controller. It is called on the
// controller's loop.
func decide(c *controller.Controller, req kmsg.Request, merge ConfigMerger) (kmsg.Response, []metadata.Record, error) {
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
		resp, recs := incrementalAlterConfigs(c, r, merge)
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
	}
	return nil, nil, fmt.Errorf("%w: %s", ErrUnsupportedRequest, kmsg.NameForKey(req.Key()))
}

// ConfigMerger turns the operations of one IncrementalAlterConfigs
// resource into the overrides to store, given the resource's current
// overrides in the image (never modified). It validates as it likes: the
// broker plugs in internal/config's IncrementalAlterTopic and friends.
// The error, if any, is that resource's answer.
type ConfigMerger func(res metadata.ConfigResource, current map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) (map[string]string, *config.Error)

// MergeConfigOps applies SET, DELETE, APPEND and SUBTRACT in order
// without validating names or values: APPEND and SUBTRACT treat the
// current value as a comma-separated list. A null value for SET, APPEND
// or SUBTRACT and an unknown operation are INVALID_REQUEST.
func MergeConfigOps(_ metadata.ConfigResource, current map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) (map[string]string, *config.Error) {
	next := maps.Clone(current)
	if next == nil {
		next = map[string]string{}
	}
	for _, op := range ops {
		if op.Op != kmsg.IncrementalAlterConfigOpDelete && op.Value == nil {
			return nil, &config.Error{Code: kerr.InvalidRequest.Code, Message: "Null value not supported for : " + op.Name}
		}
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			next[op.Name] = *op.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(next, op.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			var items []string
			if v := next[op.Name]; v != "" {
				items = strings.Split(v, ",")
			}
			for _, it := range strings.Split(*op.Value, ",") {
				i := slices.Index(items, it)
				switch {
				case op.Op == kmsg.IncrementalAlterConfigOpAppend && i < 0:
					items = append(items, it)
				case op.Op == kmsg.IncrementalAlterConfigOpSubtract && i >= 0:
					items = slices.Delete(items, i, i+1)
				}
			}
			next[op.Name] = strings.Join(items, ",")
		default:
			return nil, &config.Error{Code: kerr.InvalidRequest.Code, Message: fmt.Sprintf("Unknown operation %d for %s.", op.Op, op.Name)}
		}
	}
	return next, nil
}

// incrementalAlterConfigs merges each resource's operations against the
// controller's view and records the differences, all resources in one
// batch (none with ValidateOnly).
func incrementalAlterConfigs(c *controller.Controller, req *kmsg.IncrementalAlterConfigsRequest, merge ConfigMerger) (*kmsg.IncrementalAlterConfigsResponse, []metadata.Record) {
	resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	resp.Version = req.Version
	img := c.Image()
	var (
		changes []controller.ConfigChange
		index   []int // changes[i] answers resp.Resources[index[i]]
	)
	for _, rr := range req.Resources {
		out := kmsg.NewIncrementalAlterConfigsResponseResource()
		out.ResourceType, out.ResourceName = rr.ResourceType, rr.ResourceName
		res := metadata.ConfigResource{Type: metadata.ResourceType(rr.ResourceType), Name: rr.ResourceName}
		if res.Type != metadata.ResourceTopic && res.Type != metadata.ResourceBroker && res.Type != metadata.ResourceGroup {
			setError(&out.ErrorCode, &out.ErrorMessage, kerr.InvalidRequest.Code, fmt.Sprintf("Unsupported resource type %v.", rr.ResourceType))
			resp.Resources = append(resp.Resources, out)
			continue
		}
		current := img.Configs(res)
		next, cerr := merge(res, current, rr.Configs)
		switch {
		case cerr != nil:
			setError(&out.ErrorCode, &out.ErrorMessage, cerr.Code, cerr.Message)
		case req.ValidateOnly:
			if _, ok := img.TopicByName(res.Name); res.Type == metadata.ResourceTopic && !ok {
				setError(&out.ErrorCode, &out.ErrorMessage, kerr.UnknownTopicOrPartition.Code, "Topic "+res.Name+" does not exist.")
			}
		default:
			ch := controller.ConfigChange{Resource: res, Set: map[string]string{}}
			for k, v := range next {
				if old, ok := current[k]; !ok || old != v {
					ch.Set[k] = v
				}
			}
			for k := range current {
				if _, ok := next[k]; !ok {
					ch.Delete = append(ch.Delete, k)
				}
			}
			slices.Sort(ch.Delete)
			changes = append(changes, ch)
			index = append(index, len(resp.Resources))
		}
		resp.Resources = append(resp.Resources, out)
	}
	if len(changes) == 0 {
		return resp, nil
	}
	errs, recs := c.AlterConfigs(changes)
	for i, err := range errs {
		if err != nil {
			out := &resp.Resources[index[i]]
			code, msg := kafkaError(err)
			setError(&out.ErrorCode, &out.ErrorMessage, code, msg)
		}
	}
	return resp, recs
}

func setError(code *int16, msg **string, c int16, m string) {
	*code = c
	if m != "" {
		*msg = &m
	}
}

// kafkaError is the code and message of an error from the controller:
// it wraps a kerr error and says more after it.
func kafkaError(err error) (int16, string) {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return kerr.UnknownServerError.Code, err.Error()
	}
	return ke.Code, strings.TrimPrefix(err.Error(), ke.Message+": ")
}
