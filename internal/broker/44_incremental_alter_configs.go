package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// IncrementalAlterConfigs v0-1 (SET, DELETE, APPEND, SUBTRACT) for TOPIC
// and BROKER resources, and GROUP resources (the share.* group configs,
// SET and DELETE); others get INVALID_REQUEST. Each resource is checked
// here against this node's copy (configadmin.Manager.IncrementalAlter);
// those that pass go to the active controller with their operations,
// which it applies to the configs it holds (configadmin.Policy), and the
// answer waits until this node has applied the change. Topic changes
// apply to the partitions' logs, broker changes re-resolve every topic's
// defaults, group configs apply to the group's share partitions, on every
// broker from the metadata log. ValidateOnly checks without storing.
var _ = register(handler{key: 44, min: 0, max: 1, serve: (*Broker).handleIncrementalAlterConfigs})

func (b *Broker) handleIncrementalAlterConfigs(ctx context.Context, req *server.Request) *server.Reply {
	resp, fwd := b.cfgAdmin.IncrementalAlter(req.Body.(*kmsg.IncrementalAlterConfigsRequest))
	return b.forwardConfigs(ctx, resp, fwd)
}
