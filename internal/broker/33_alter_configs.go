package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// AlterConfigs v0-2: the legacy form, whose entries replace every dynamic
// override of the resource. TOPIC and BROKER resources; others get
// INVALID_REQUEST. Each resource is checked here against this node's
// copy (configadmin.Manager.Alter); those that pass go to the active
// controller as they are, which replaces the resource's overrides as it
// holds them (so a key another broker just added goes too), and the
// answer waits until this node has applied the change
// (configadmin.Forward.Decide). ValidateOnly checks without storing.
var _ = register(handler{key: 33, min: 0, max: 2, serve: (*Broker).handleAlterConfigs})

func (b *Broker) handleAlterConfigs(ctx context.Context, req *server.Request) *server.Reply {
	resp, fwd := b.cfgAdmin.Alter(req.Body.(*kmsg.AlterConfigsRequest))
	return b.forwardConfigs(ctx, resp, fwd)
}
