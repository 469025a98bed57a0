package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// DescribeConfigs v1-4 for TOPIC and BROKER resources, answered by
// internal/config with Kafka's values, sources, synonyms (v1+) and
// documentation (v3+), and GROUP resources, the share.* group configs
// (sharegroup.Manager.DescribeGroupConfig; any group id is a valid
// resource, as in Kafka), through the config service
// (configadmin.Manager.Describe). Other resource types (BROKER_LOGGER,
// CLIENT_METRICS) get INVALID_REQUEST. Authorized operations are not
// computed (no ACLs).
var _ = register(handler{key: 32, min: 1, max: 4, serve: (*Broker).handleDescribeConfigs})

func (b *Broker) handleDescribeConfigs(_ context.Context, req *server.Request) *server.Reply {
	return server.Ready(b.cfgAdmin.Describe(req.Body.(*kmsg.DescribeConfigsRequest)))
}
