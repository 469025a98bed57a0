package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// ConsumerGroupHeartbeat v0-1 (KIP-848): internal/group.
var _ = register(handler{key: 68, min: 0, max: 1, serve: groupCall(func(b *Broker, ctx context.Context, req *server.Request, r *kmsg.ConsumerGroupHeartbeatRequest) (kmsg.Response, error) {
	return b.coord().ConsumerGroupHeartbeat(ctx, groupClient(req), r)
})})
