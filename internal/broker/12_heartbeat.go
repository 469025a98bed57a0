package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// Heartbeat v0-4 (classic groups): internal/group.
var _ = register(handler{key: 12, min: 0, max: 4, serve: groupCall(func(b *Broker, ctx context.Context, _ *server.Request, r *kmsg.HeartbeatRequest) (kmsg.Response, error) {
	return b.coord().Heartbeat(ctx, r)
})})
