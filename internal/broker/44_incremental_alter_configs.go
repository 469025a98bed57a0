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
// SET and DELETE: sharegroup.Manager.AlterGroupConfig); others get
// INVALID_REQUEST. Topic changes apply to the partitions' logs at once;
// broker changes re-resolve every topic's defaults; group configs apply
// to the group's share partitions on every broker. All go through the
// metadata log. ValidateOnly checks without storing.
var _ = register(handler{key: 44, min: 0, max: 1, serve: (*Broker).handleIncrementalAlterConfigs})

func (b *Broker) handleIncrementalAlterConfigs(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, rr := range r.Resources {
		res := kmsg.NewIncrementalAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		var err error
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			err = b.alterTopic(rr.ResourceName, r.ValidateOnly, func(current map[string]string) (map[string]string, *config.Error) {
				return b.settings().IncrementalAlterTopic(current, rr.Configs)
			})
		case kmsg.ConfigResourceTypeBroker:
			err = b.alterBroker(rr.ResourceName, r.ValidateOnly, func(st *config.Broker) (map[string]string, *config.Error) {
				return st.IncrementalAlterBroker(rr.ResourceName, rr.Configs)
			})
		case kmsg.ConfigResourceTypeGroupConfig:
			err = b.shares.AlterGroupConfig(ctx, rr.ResourceName, rr.Configs, r.ValidateOnly)
		default:
			err = fmt.Errorf("%w: resource type %v is not supported", kerr.InvalidRequest, rr.ResourceType)
		}
		res.ErrorCode, res.ErrorMessage = errCode(err), errMessage(err)
		resp.Resources = append(resp.Resources, res)
	}
	return server.Ready(resp)
}
