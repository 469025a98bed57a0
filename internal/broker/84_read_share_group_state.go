package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// ReadShareGroupState v0 (broker to broker): a share partition's new
// leader reads its state from this node, the key's share coordinator,
// folded into one snapshot; a partition without state answers state
// epoch -1 (sharestate.Service.HandleRead).
var _ = register(handler{key: 84, min: 0, max: 0, serve: (*Broker).handleReadShareGroupState})

func (b *Broker) handleReadShareGroupState(ctx context.Context, req *server.Request) *server.Reply {
	return server.Ready(b.shareState.HandleRead(ctx, req.Body.(*kmsg.ReadShareGroupStateRequest)))
}
