package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/server"
)

// DescribeConfigs v1-4 for TOPIC and BROKER resources, answered by
// internal/config with Kafka's values, sources, synonyms (v1+) and
// documentation (v3+), and GROUP resources, the share.* group configs
// (sharegroup.Manager.DescribeGroupConfig; any group id is a valid
// resource, as in Kafka). Other resource types (BROKER_LOGGER,
// CLIENT_METRICS) get INVALID_REQUEST. Authorized operations are not
// computed (no ACLs).
var _ = register(handler{key: 32, min: 1, max: 4, serve: (*Broker).handleDescribeConfigs})

func (b *Broker) handleDescribeConfigs(_ context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.DescribeConfigsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
	opts := config.DescribeOptions{IncludeSynonyms: r.IncludeSynonyms, IncludeDocumentation: r.IncludeDocumentation}
	for _, rr := range r.Resources {
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		o := opts
		o.Keys = rr.ConfigNames
		var entries []config.Entry
		var err error
		if rr.ResourceType == kmsg.ConfigResourceTypeGroupConfig {
			entries, err = b.shares.DescribeGroupConfig(rr.ResourceName, o)
		} else {
			entries, err = b.describeResource(rr.ResourceType, rr.ResourceName, o)
		}
		if err != nil {
			res.ErrorCode, res.ErrorMessage = errCode(err), errMessage(err)
		}
		res.Configs = entries
		resp.Resources = append(resp.Resources, res)
	}
	return server.Ready(resp)
}
