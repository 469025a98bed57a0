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
// INVALID_REQUEST. ValidateOnly checks without storing.
var _ = register(handler{key: 33, min: 0, max: 2, serve: (*Broker).handleAlterConfigs})

func (b *Broker) handleAlterConfigs(_ context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.AlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, rr := range r.Resources {
		res := kmsg.NewAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		var err error
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			err = b.alterTopic(rr.ResourceName, r.ValidateOnly, func(map[string]string) (map[string]string, *config.Error) {
				return b.settings().AlterTopic(rr.Configs)
			})
		case kmsg.ConfigResourceTypeBroker:
			err = b.alterBroker(rr.ResourceName, r.ValidateOnly, func(st *config.Broker) (map[string]string, *config.Error) {
				return st.AlterBroker(rr.ResourceName, rr.Configs)
			})
		default:
			err = fmt.Errorf("%w: resource type %v is not supported", kerr.InvalidRequest, rr.ResourceType)
		}
		res.ErrorCode, res.ErrorMessage = errCode(err), errMessage(err)
		resp.Resources = append(resp.Resources, res)
	}
	return server.Ready(resp)
}
