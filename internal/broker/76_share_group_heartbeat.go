package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
	"weir/internal/share"
)

// ShareGroupHeartbeat v1 (KIP-932; v0 was the 4.0 early-access version,
// removed in 4.1): sharegroup.Manager.Heartbeat. Membership and the
// "simple" assignment are internal/share's Group. RackId is kept for
// ShareGroupDescribe; assignment ignores it.
var _ = register(handler{key: 76, min: 1, max: 1, serve: (*Broker).handleShareGroupHeartbeat})

func (b *Broker) handleShareGroupHeartbeat(ctx context.Context, req *server.Request) *server.Reply {
	client := groupClient(req)
	return server.Ready(b.shares.Heartbeat(ctx, req.Body.(*kmsg.ShareGroupHeartbeatRequest), share.ClientInfo{ClientID: client.ID, ClientHost: client.Host}))
}
