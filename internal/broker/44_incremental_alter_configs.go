package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/server"
)

// IncrementalAlterConfigs v0-1 (SET, DELETE, APPEND, SUBTRACT) for TOPIC
// and BROKER resources, and GROUP resources (the share.* group configs,
// SET and DELETE); others get INVALID_REQUEST. Each resource is checked
// here against this node's copy; those that pass go to the active
// controller with their operations, which it applies to the configs it
// holds (configs.go), and the answer waits until this node has applied
// the change. Topic changes apply to the partitions' logs, broker changes
// re-resolve every topic's defaults, group configs apply to the group's
// share partitions, on every broker from the metadata log. ValidateOnly
// checks without storing.
var _ = register(handler{key: 44, min: 0, max: 1, serve: (*Broker).handleIncrementalAlterConfigs})

func (b *Broker) handleIncrementalAlterConfigs(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	fwd := kmsg.NewPtrIncrementalAlterConfigsRequest()
	var slots []int // fwd.Resources[i] answers resp.Resources[slots[i]]
	for _, rr := range r.Resources {
		res := kmsg.NewIncrementalAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		var err error
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			err = b.checkTopicAlter(rr.ResourceName, func(current map[string]string) (map[string]string, *config.Error) {
				return b.settings().IncrementalAlterTopic(current, rr.Configs)
			})
		case kmsg.ConfigResourceTypeBroker:
			err = b.checkBrokerAlter(func(st *config.Broker) (map[string]string, *config.Error) {
				return st.IncrementalAlterBroker(rr.ResourceName, rr.Configs)
			})
		case kmsg.ConfigResourceTypeGroupConfig:
			err = b.shares.ValidateGroupConfig(rr.ResourceName, rr.Configs)
		default:
			err = fmt.Errorf("%w: resource type %v is not supported", kerr.InvalidRequest, rr.ResourceType)
		}
		res.ErrorCode, res.ErrorMessage = errCode(err), errMessage(err)
		if err == nil && !r.ValidateOnly {
			fwd.Resources = append(fwd.Resources, rr)
			slots = append(slots, len(resp.Resources))
		}
		resp.Resources = append(resp.Resources, res)
	}
	return b.forwardConfigs(ctx, fwd, resp, slots, func(slot int, code int16, msg *string) {
		resp.Resources[slot].ErrorCode, resp.Resources[slot].ErrorMessage = code, msg
	})
}
