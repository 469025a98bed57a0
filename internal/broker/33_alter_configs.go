package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/server"
)

// AlterConfigs v0-2: the legacy form, whose entries replace every dynamic
// override of the resource. TOPIC and BROKER resources; others get
// INVALID_REQUEST. Each resource is checked here against this node's
// copy; those that pass go to the active controller as they are, which
// replaces the resource's overrides as it holds them (so a key another
// broker just added goes too), and the answer waits until this node has
// applied the change (configs.go). ValidateOnly checks without storing.
var _ = register(handler{key: 33, min: 0, max: 2, serve: (*Broker).handleAlterConfigs})

func (b *Broker) handleAlterConfigs(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.AlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
	fwd := kmsg.NewPtrAlterConfigsRequest()
	var slots []int // fwd.Resources[i] answers resp.Resources[slots[i]]
	for _, rr := range r.Resources {
		res := kmsg.NewAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		var err error
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			err = b.checkTopicAlter(rr.ResourceName, func(map[string]string) (map[string]string, *config.Error) {
				return b.settings().AlterTopic(rr.Configs)
			})
		case kmsg.ConfigResourceTypeBroker:
			err = b.checkBrokerAlter(func(st *config.Broker) (map[string]string, *config.Error) {
				return st.AlterBroker(rr.ResourceName, rr.Configs)
			})
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
