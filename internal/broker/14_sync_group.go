package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// SyncGroup v0-5: internal/group; it waits for the leader's assignment,
// so it runs off the request path.
var _ = register(handler{key: 14, min: 0, max: 5, serve: waitingGroupCall(func(b *Broker, ctx context.Context, _ *server.Request, r *kmsg.SyncGroupRequest) (kmsg.Response, error) {
	return b.coord().SyncGroup(ctx, r)
})})
