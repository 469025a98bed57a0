package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
	"weir/internal/share"
)

// ShareGroupHeartbeat v1 (KIP-932; v0 was the 4.0 early-access version,
// removed in 4.1). Membership and the "simple" assignment are
// internal/share's Group; the coordinator creates a group on its first
// join (epoch 0), refuses an id that a classic or consumer group holds
// (GROUP_ID_NOT_FOUND, as Kafka does), persists the group's existence,
// and releases what a leaving member holds in every share partition of
// the group. RackId is kept for ShareGroupDescribe; assignment ignores it.
var _ = register(handler{key: 76, min: 1, max: 1, serve: (*Broker).handleShareGroupHeartbeat})

func (b *Broker) handleShareGroupHeartbeat(ctx context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.ShareGroupHeartbeatRequest)
	client := groupClient(req)
	return server.Ready(b.shares.heartbeat(ctx, r, share.ClientInfo{ClientID: client.ID, ClientHost: client.Host}))
}
