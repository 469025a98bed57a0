package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// WriteShareGroupState v0-1 (broker to broker): a share partition's
// leader writes its state to this node, the key's share coordinator,
// which answers once it is committed (sharestate.Service.HandleWrite).
var _ = register(handler{key: 85, min: 0, max: 1, serve: (*Broker).handleWriteShareGroupState})

func (b *Broker) handleWriteShareGroupState(ctx context.Context, req *server.Request) *server.Reply {
	return server.Ready(b.shareState.HandleWrite(ctx, req.Body.(*kmsg.WriteShareGroupStateRequest)))
}
